"""A real HTTP endpoint for notification tests: ``http.server`` in a thread on 127.0.0.1:0.

It records every POST (path and JSON body) and answers with the next status code of ``answers``
(200 once they are used up). With ``hold`` set, each request waits until the test releases it:
a slow endpoint without a sleep.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.answers: list[int] = []
        self.hold: threading.Event | None = None
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                with receiver._lock:
                    receiver.requests.append(
                        {"path": self.path, "body": body, "contentType": self.headers.get("Content-Type")}
                    )
                    code = receiver.answers.pop(0) if receiver.answers else 200
                if receiver.hold is not None:
                    receiver.hold.wait(timeout=30)
                self.send_response(code)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:  # keep the test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{path}"

    def bodies(self, path: str | None = None) -> list:
        with self._lock:
            return [r["body"] for r in self.requests if path is None or r["path"] == path]

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()
