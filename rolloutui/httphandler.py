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
"""

from __future__ import annotations

import django
from django.core.handlers.asgi import ASGIHandler


class ReleasingASGIHandler(ASGIHandler):
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
