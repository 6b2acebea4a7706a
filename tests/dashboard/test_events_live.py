"""On the real product (`runall`: Daphne, Celery worker and beat, Redis, the database-backed
simulated cluster with traffic): a pause shows on an open Events page without reloading, with the
controller's event of the phase it caused, and a running pod of the demo shows its events and its
log with the requests it answered."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.waiting import wait_until

from .test_browser import DETAIL, shot, sign_in, wait_state
from .test_operator_day_page import click_cell

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _post(page: Page, url: str, path: str, reason: str):
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    return page.request.post(
        url + path, data={"reason": reason}, headers={"X-CSRFToken": token, "Referer": url + "/events/"}
    )


def test_a_pause_appears_live_on_the_events_page_and_a_running_pods_log_shows_its_requests(
    live_stack, page: Page, screenshot_dir
):
    url = live_stack.url
    page.set_viewport_size({"width": 1440, "height": 1000})
    sign_in(page, url, "operator")
    page.goto(url + "/events/?namespace=default")
    expect(page.locator("#events-live")).to_contain_text("updated", timeout=15_000)

    rows = page.locator("#events-rows tr")
    # The live stack is shared with other tests of the session: an earlier pause left its own event.
    paused_before = rows.filter(has_text="RolloutPaused").count()
    assert _post(page, url, "/api/modelservings/default/chat/pause", "events page, live").status == 200
    expect(rows.filter(has_text="events page, live")).to_have_count(1, timeout=15_000)
    # The controller's event of the phase it caused comes from the cluster's event list.
    expect(rows.filter(has_text="RolloutPaused")).to_have_count(paused_before + 1, timeout=30_000)
    shot(page, screenshot_dir / "events-live.png")
    assert _post(page, url, "/api/modelservings/default/chat/resume", "events page, done").status == 200

    page.goto(url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15_000)
    wait_state(page, lambda s: s["phase"] == "Healthy", what="the demo to be Healthy")
    click_cell(page, 0)
    detail = page.get_by_test_id("cell-detail")
    expect(detail).to_contain_text("group 0")
    detail.get_by_test_id("pod-open").first.click()
    expect(page.get_by_test_id("pod-events")).to_contain_text("Started")
    log = page.get_by_test_id("pod-log")
    expect(log).to_contain_text("application startup complete")
    # With traffic, the entry pod's log has the requests it answered (or has in flight): Refresh.
    set_rps = (
        "from controller.models import SimTraffic; SimTraffic.objects.update_or_create("
        "kind='ModelServing', namespace='default', name='chat', defaults={{'rps': {rps}, 'duration_low': 1, "
        "'duration_high': 2}})"
    )
    live_stack.manage("shell", "-c", set_rps.format(rps=5))
    try:

        def refreshed() -> bool:
            page.get_by_test_id("pod-detail").get_by_role("button", name="Refresh").click()
            expect(page.get_by_test_id("pod-log")).to_be_visible()
            return "POST /v1/completions" in page.get_by_test_id("pod-log").inner_text()

        wait_until(refreshed, what="a request in the entry pod's log", timeout=60, interval=1.0)
        shot(page, screenshot_dir / "pod-log-live.png")
    finally:
        live_stack.manage("shell", "-c", set_rps.format(rps=0))
