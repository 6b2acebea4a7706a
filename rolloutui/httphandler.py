"""Django's ASGI handler, letting go of each response's payload once the response is sent.

Every Django REST framework response is in reference cycles: its ``renderer_context`` holds the
response itself, and the view, which keeps it as ``view.response``, is in a cycle with its request.
Under ASGI, Django's handler adds one more: the task that made the response keeps it as its
result, and a client's disconnect (``RequestAborted``, whose traceback holds the handler's frame,
which holds the tasks) closes that loop. So a response and its ``data`` are freed only by a full
garbage collection, not when they are sent. The data is often large and survives the young
collections while it is built: ``GET /api/modelservings/NS/NAME/`` of a 1,000-group ModelServing
is ~35,000 dicts and lists. ``bench fanout`` traced the web process's full collections
(``gc.DEBUG_SAVEALL``): 36,000-97,000 such objects each, every collection stalling the websocket
fan-out for 150-350 ms.

Once the response's bytes are sent, nothing reads its data or rendering context (the handler only
closes it), so they are dropped there and reference counting frees them; what stays in the cycles
is a few small objects. Django's test clients do not go through this handler: tests still read
``response.data``.

The request body limit is enforced here too, before Django reads the body: Django's handler reads
all of it into a SpooledTemporaryFile (to disk past 2.5 MB) before the first middleware runs, so a
middleware's 413 came after a 150 MB upload had been taken whole. A body declared (Content-Length)
larger than ``middleware.body_limit`` is refused without taking one body message; one without a
Content-Length (chunked), or longer than it said, is cut off with a 413 as soon as what was taken
passes the limit. Daphne itself (Twisted) has the body in hand before it calls the application: the
Ingress' body limit is what keeps a large upload from reaching the pod at all (deploy/README.md).
"""

from __future__ import annotations

import io
import time

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler

from rolloutui import middleware


class BodyTooLarge(Exception):
    """Raised by ``LimitedReceive`` when the body taken so far passes the limit."""


class LimitedReceive:
    """An ASGI ``receive`` that counts the body bytes taken and raises ``BodyTooLarge`` on the
    message that passes ``limit`` (that message's body is never handed on)."""

    def __init__(self, receive, limit: int) -> None:
        self.receive, self.limit, self.taken = receive, limit, 0

    async def __call__(self) -> dict:
        message = await self.receive()
        if message.get("type") == "http.request":
            self.taken += len(message.get("body") or b"")
            if self.taken > self.limit:
                raise BodyTooLarge
        return message


def declared_length(scope) -> int | None:
    """The Content-Length of an ASGI HTTP scope (None: none declared); ValueError if it is not a
    number of bytes, or if several disagree (RFC 9110 8.6: a recipient may reject such a message)."""
    values = {value.strip() for name, value in scope.get("headers") or () if name.lower() == b"content-length"}
    if not values:
        return None
    if len(values) > 1:
        raise ValueError("conflicting Content-Length headers")
    (value,) = values
    if not value.isdigit():  # also refuses a sign: "-1", "+5"
        raise ValueError("Content-Length is not a number of bytes")
    return int(value)


class ReleasingASGIHandler(ASGIHandler):
    async def handle(self, scope, receive, send):
        limit = middleware.body_limit(scope.get("path", ""))
        try:
            length = declared_length(scope)
        except ValueError:
            return await self._refuse(scope, send, middleware.not_a_length())
        if limit is None:
            return await super().handle(scope, receive, send)
        if length is not None and length > limit:
            return await self._refuse(scope, send, middleware.too_large(limit, length))
        try:
            await super().handle(scope, LimitedReceive(receive, limit), send)
        except BodyTooLarge:
            # Raised from read_body, before the request existed: nothing was sent yet.
            await self._refuse(scope, send, middleware.too_large(limit))

    async def _refuse(self, scope, send, response) -> None:
        """Answer without reading the body (or the rest of it), and log it as every request is."""
        started = time.monotonic()
        await self.send_response(response, send)
        # As Django's handler closes its responses: close() sends request_finished, whose receivers
        # (close_old_connections) are synchronous.
        await sync_to_async(response.close)()
        try:
            request = self.request_class(scope, io.BytesIO())
        except Exception:  # a scope Django cannot make a request of: the answer is sent, skip the line
            return
        middleware.log_request(request, response.status_code, started)

    async def send_response(self, response, send):
        try:
            await super().send_response(response, send)
        finally:
            release_payload(response)


def release_payload(response) -> None:
    """Drop what a sent response no longer needs and what keeps large trees alive."""
    context = getattr(response, "renderer_context", None)
    if context:
        view = context.get("view")
        if getattr(view, "response", None) is response:
            view.response = None
        response.renderer_context = None
    if getattr(response, "data", None) is not None:
        response.data = None


def get_asgi_application() -> ReleasingASGIHandler:
    """``django.core.asgi.get_asgi_application`` with this handler."""
    django.setup(set_prefix=False)
    return ReleasingASGIHandler()
