"""A REST framework response's data is freed once the response is sent, not at the next full
garbage collection of the web process (rolloutui/httphandler.py).

Without it, each ``GET`` of a 1,000-group state left ~35,000 dicts and lists in reference cycles
(DRF's and Django's ASGI handler's) for the web process's full collections to find, and each such
collection stalled the websocket fan-out for 150-350 ms."""

from __future__ import annotations

import asyncio
import gc

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler

from rolloutui.httphandler import ReleasingASGIHandler

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("connections_kept_open")]


async def _get(handler: ASGIHandler, path: str, cookie: str) -> list[dict]:
    """One GET through an ASGI handler as Daphne drives it: the request, then the client's
    disconnect once the whole response has reached it."""
    sent: list[dict] = []
    answered = asyncio.Event()
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"cookie", cookie.encode())],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 50000),
    }
    await handler(scope, receive, send)
    return sent


def _state_left_for_the_collector(handler: ASGIHandler, path: str, cookie: str) -> tuple[int, bool]:
    """(status, whether the next full collection finds the state the response carried among what
    is unreachable: only a collection would free it)."""
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable is kept in gc.garbage
    try:
        sent = async_to_sync(_get)(handler, path, cookie)
        gc.collect()
        left = any(type(o) is dict and "groups" in o and "time" in o for o in gc.garbage)
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
    return sent[0]["status"], left


def _cookie(client) -> str:
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def test_a_state_read_leaves_its_data_to_reference_counting_once_sent(viewer_client, ms):
    path = f"/api/modelservings/{ms['namespace']}/{ms['name']}/"
    status, left = _state_left_for_the_collector(ReleasingASGIHandler(), path, _cookie(viewer_client))
    assert status == 200 and not left
    # The premise: Django's own handler leaves it to the collector (if a Django or DRF release
    # drops their cycles, this fails and the handler can go).
    status, left = _state_left_for_the_collector(ASGIHandler(), path, _cookie(viewer_client))
    assert status == 200 and left


def test_a_refusal_is_answered_as_before(ms):
    status, _ = _state_left_for_the_collector(
        ReleasingASGIHandler(), f"/api/modelservings/{ms['namespace']}/{ms['name']}/", ""
    )
    assert status == 401
