"""The web server refuses an oversized request body while it arrives, not after.

Why here: Daphne (on Twisted) receives a request's whole body, spooling it to a file, and then
queues all of it for the application at once (in ``request_buffer_size`` messages), so the ASGI
handler's 413 (rolloutui/httphandler.py) comes after the web process held the body. An anonymous
150 MB upload made the process 150 MB larger. Twisted tells the request its declared length as soon
as the headers are in (``gotLength``) and hands it each piece of body as it arrives
(``handleContentChunk``): Daphne's request class, extended here, answers 413 at that point and
closes the connection, before the body is read (declared length over the limit) or as soon as what
arrived passes it (``Transfer-Encoding: chunked``, or a client that sends more than it declared).

The server's limit is the largest of the product's per-path limits (the request-records endpoint
takes larger batches: ``ROLLOUTUI_RECORDS_MAX_BODY_BYTES``); the ASGI handler still applies the
per-path limits below it. Example, defaults: the server refuses above 4 MiB, the handler refuses
a 300 kB body on any path but ``/api/request-records/`` (256 kB there being 4 MiB).

``install()`` is called by rolloutui/asgi.py, which Daphne imports before it starts listening: Daphne
builds every HTTP connection's request with ``daphne.http_protocol.WebRequest`` (its ``HTTPFactory``
reads that name for each connection), and has no option to name another class, so the name is
pointed at the subclass. Under another ASGI server this module does nothing.
"""

from __future__ import annotations

import json
import logging

logger = logging.getLogger(__name__)


def server_body_limit() -> int:
    """The largest body any path accepts, in bytes (module docstring)."""
    from django.conf import settings

    return max(int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE), int(settings.ROLLOUTUI_RECORDS_MAX_BODY_BYTES))


def install() -> bool:
    """Make Daphne build its HTTP requests with the bounded class; False when Daphne is absent or
    already patched (idempotent)."""
    try:
        from daphne import http_protocol
    except ImportError:  # another server
        return False
    if getattr(http_protocol.WebRequest, "bounded_body", False):
        return False
    http_protocol.WebRequest = _bounded_request_class(http_protocol.WebRequest, server_body_limit())
    return True


def _bounded_request_class(base: type, limit: int) -> type:
    class BoundedWebRequest(base):
        """Daphne's request with the body bounded while it arrives (module docstring)."""

        bounded_body = True
        body_limit = limit

        def gotLength(self, length):  # noqa: N802 - Twisted's name
            self.body_received = 0
            self.body_refused = False
            super().gotLength(length)
            if length is not None and length > self.body_limit:
                self._refuse_body(f"the request body declares {length} bytes; at most {self.body_limit} are accepted")

        def handleContentChunk(self, data):  # noqa: N802 - Twisted's name
            if self.body_refused:
                return
            self.body_received += len(data)
            if self.body_received > self.body_limit:
                self._refuse_body(f"the request body is larger than {self.body_limit} bytes")
                return
            super().handleContentChunk(data)

        def process(self):
            if getattr(self, "body_refused", False):
                return None  # answered and closed; the application never sees it
            return super().process()

        def _refuse_body(self, why: str) -> None:
            self.body_refused = True
            body = json.dumps({"detail": why}).encode()
            head = (
                "HTTP/1.1 413 Payload Too Large\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            logger.warning("refused a request body while it arrived: %s", why)
            transport = self.channel.transport
            transport.write(head + body)
            transport.loseConnection()

    return BoundedWebRequest
