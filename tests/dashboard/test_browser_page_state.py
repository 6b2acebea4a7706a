"""In Chromium against the real product (``runall``): the detail page's socket starts from the state
the page was rendered with (``rolloutui/pagestates.py``). The page names it, the server's first
message is a delta from it (not the whole state again), the page never asks for a resync, and it
holds the state the REST API reads once the rollout settles; a reconnect gets the whole state."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from .test_browser import DETAIL, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_socket_starts_from_the_page_state_and_a_reconnect_gets_the_whole_state(live_stack, page: Page):
    sockets: list[dict] = []

    def watch(ws) -> None:
        seen = {"url": ws.url, "received": [], "sent": []}
        sockets.append(seen)
        ws.on("framereceived", lambda payload: seen["received"].append(json.loads(payload)))
        ws.on("framesent", lambda payload: seen["sent"].append(json.loads(payload)))

    page.on("websocket", watch)
    sign_in(page, live_stack.url, "viewer")
    page.goto(live_stack.url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    page_time = page.evaluate("() => JSON.parse(document.getElementById('initial-state').textContent).state.time")
    first_socket = sockets[0]
    assert "?page=" in first_socket["url"]
    first = first_socket["received"][0]
    assert first["type"] == "state.delta" and first["base"] == page_time, first
    assert not [m for m in first_socket["sent"] if m.get("type") == "resync"]

    with page.expect_websocket(timeout=20000) as reconnected:
        page.evaluate("() => window.__rollout.dropSocket()")
    reconnected.value.wait_for_event("framereceived", timeout=20000)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=20000)
    again = sockets[-1]
    assert len(sockets) == 2 and "?page=" not in again["url"]
    assert "type" not in again["received"][0]  # the whole state
    # The page then shows what the REST API reads (the view's own time aside).
    api = page.evaluate("async () => (await fetch(JSON.parse(document.getElementById('boot').textContent).api)).json()")
    shown = page.evaluate("() => window.__rollout.state")
    assert shown["name"] == api["name"] and shown["revisions"] == api["revisions"]
