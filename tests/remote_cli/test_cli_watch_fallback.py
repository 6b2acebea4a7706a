"""`rolloutui get --watch` against a server that refuses the websocket (an older server, a proxy
without websockets): it says so on stderr and polls the REST state every --interval instead. The
server is a real HTTP server started by the test: its GET answers a state whose phase moves on after
the first read, and its websocket path answers 404."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rolloutui_cli.main import run

STATE = {"namespace": "default", "name": "chat", "phase": "Progressing", "spec": {"replicas": 2}, "time": 1.0}


@pytest.fixture
def server():
    reads = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.rstrip("/") != "/api/modelservings/default/chat":
                self.send_error(404)  # the websocket's upgrade request among them
                return
            reads.append(self.path)
            body = json.dumps({**STATE, "phase": "Progressing" if len(reads) == 1 else "Healthy"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.reads = reads
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_refused_websocket_makes_the_watch_poll_and_redraw_the_change(server, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    argv = ["--server", url, "--token", "t0k", "get", "default/chat", "--watch", "--interval", "0.1s"]
    code = run([*argv, "--timeout", "2s", "-o", "json"], prog="rolloutui")
    out, err = capsys.readouterr()
    assert code == 0
    assert "live updates unavailable" in err and "polling every 0.1 s" in err
    assert '"Progressing"' in out and '"Healthy"' in out  # the first read, then the change polled
    assert len(server.reads) >= 2
