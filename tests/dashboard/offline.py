"""The dashboard's pages in Chromium without the live stack: every request the page makes is
answered by Django in this process, through Playwright's request routing.

``OfflineSite(page, client)`` routes ``http://testserver/...``: ``/static/...`` from the static
finders (the same files WhiteNoise serves, Plotly included), everything else through Django's
test ``client`` (the real views, templates and REST API, signed in as the client's user). The
websocket is the one part Django's test client cannot answer: ``OfflineSite.socket`` stands in for
the server end, and a test sends it full states or ``make_delta`` deltas.

Tests control what the page gets without sleeping on a live controller: the data is whatever is in
the test database when the page asks.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, Request, Route, WebSocketRoute

ORIGIN = "http://testserver"

# Chromium refuses a module script served with any other type.
mimetypes.add_type("text/javascript", ".js")


class FakeSocket:
    """The server end of the page's websocket: what the page receives, and what it asked for."""

    def __init__(self, full_state: Callable[[], dict[str, Any]]) -> None:
        self.full_state = full_state
        self.route: WebSocketRoute | None = None
        self.received: list[Any] = []

    def accept(self, ws: WebSocketRoute) -> None:
        self.route = ws
        ws.on_message(self._on_message)
        ws.send(json.dumps(self.full_state()))

    def _on_message(self, message: str | bytes) -> None:
        data = json.loads(message)
        self.received.append(data)
        if isinstance(data, dict) and data.get("type") == "resync" and self.route is not None:
            self.route.send(json.dumps(self.full_state()))

    def send(self, payload: dict[str, Any]) -> None:
        assert self.route is not None, "the page has not opened its websocket"
        self.route.send(json.dumps(payload))


class OfflineSite:
    def __init__(
        self,
        page: Page,
        client,
        *,
        full_state: Callable[[], dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
        rewrite_html: Callable[[str], str] | None = None,
    ) -> None:
        """``headers`` are added to every HTML page (e.g. a Content-Security-Policy);
        ``rewrite_html`` may change a page's HTML before the browser gets it."""
        self.page = page
        self.client = client
        self.headers = headers or {}
        self.rewrite_html = rewrite_html
        self.requests: list[tuple[str, str, Any]] = []  # (method, path, JSON body) of API writes
        # Playwright runs each route handler in a greenlet of its own, and Django keeps database
        # connections per execution context: a handler would open a second connection to the test
        # database, which the test's open transaction locks. Handlers use the test's connection.
        from django.db import connections

        self._connections = {alias: connections[alias] for alias in connections}
        state = full_state or (lambda: {})
        self.socket = FakeSocket(lambda: self._with_test_connection(state))
        page.route(ORIGIN + "/**", self._handle)
        # A regular expression: the glob "ws://testserver/ws/**" does not match a query string (the
        # detail page names its state in one: ``?page=<token>``).
        page.route_web_socket(re.compile(r"^ws://testserver/ws/.*"), self.socket.accept)

    def url(self, path: str) -> str:
        return ORIGIN + path

    def _with_test_connection(self, fn: Callable[[], Any]) -> Any:
        from django.db import connections

        for alias, connection in self._connections.items():
            connections[alias] = connection
        return fn()

    def _handle(self, route: Route, request: Request) -> None:
        path = request.url[len(ORIGIN) :]
        if path.startswith("/static/"):
            self._static(route, path[len("/static/") :].split("?", 1)[0])
            return
        self._with_test_connection(lambda: self._forward(route, request, path))

    def _forward(self, route: Route, request: Request, path: str) -> None:
        body = request.post_data
        if request.method != "GET":
            self.requests.append((request.method, path, json.loads(body) if body else None))
        headers = request.headers
        response = self.client.generic(
            request.method,
            path,
            data=body or "",
            content_type=headers.get("content-type", "application/octet-stream"),
            HTTP_ACCEPT=headers.get("accept", "*/*"),
        )
        content_type = response.get("Content-Type", "application/octet-stream")
        content = response.content
        extra = {}
        if content_type.startswith("text/html"):
            extra = dict(self.headers)
            if self.rewrite_html is not None:
                content = self.rewrite_html(content.decode()).encode()
        location = {"location": response["Location"]} if response.has_header("Location") else {}
        route.fulfill(
            status=response.status_code, headers={"content-type": content_type, **location, **extra}, body=content
        )

    def _static(self, route: Route, path: str) -> None:
        from django.contrib.staticfiles import finders

        found = finders.find(path)
        if not found:
            route.fulfill(status=404, body=f"no static file {path}")
            return
        content_type = mimetypes.guess_type(found)[0] or "application/octet-stream"
        with open(found, "rb") as fh:
            route.fulfill(status=200, headers={"content-type": content_type}, body=fh.read())
