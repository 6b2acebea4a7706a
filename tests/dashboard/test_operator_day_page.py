"""The ModelServing page through an operator's day (issue 31), in Chromium, served by Django in this
process (``offline.OfflineSite``). The states the page gets are the controller's own: views of a
simulated run (``controller.simcluster.runner``) at the moments that matter, sent over the fake
websocket under the name of the page's ModelServing.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.paths import TEST_SCENARIOS

from .offline import OfflineSite
from .test_pages_offline import shot

pytestmark = pytest.mark.django_db


def views_of(scenario: str) -> list[tuple[float, dict]]:
    """(time, state view) after every pass of a scenario of tests/scenarios."""
    runner = Runner(load_scenario(TEST_SCENARIOS / f"{scenario}.yaml"))
    seen: list[tuple[float, dict]] = []
    runner.on_pass.append(lambda t, result: seen.append((t, result.view)))
    runner.run()
    return seen


def as_page_state(view: dict, ms: dict) -> dict:
    return {**view, "namespace": ms["namespace"], "name": ms["name"]}


def test_a_crash_looping_rollout_shows_a_degraded_banner_naming_the_instance_and_then_the_deadline(
    ms, operator_client, page: Page, screenshot_dir
):
    seen = views_of("crash-loop-rollout")
    crashed = next(v for _, v in seen if v["phase"] == "Degraded")
    stalled = seen[-1][1]
    healthy = next(v for t, v in seen if v["phase"] == "Healthy")
    current = {"state": as_page_state(healthy, ms)}
    site = OfflineSite(page, operator_client, full_state=lambda: current["state"])
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    banner = page.get_by_test_id("degraded-banner")
    expect(page.get_by_test_id("phase")).to_have_text("Healthy")
    expect(banner).to_be_hidden()

    current["state"] = as_page_state(crashed, ms)
    site.socket.send(current["state"])
    expect(page.get_by_test_id("phase")).to_have_text("Degraded")
    expect(banner).to_be_visible()
    expect(page.locator("#degraded-title")).to_have_text("Degraded.")
    expect(banner).to_contain_text("CrashLoopBackOff")
    expect(banner).to_contain_text("group 3 decode-")
    # Why it waits names it too, with the restarts.
    expect(page.locator("#waits")).to_contain_text("CrashLoopBackOff, 1 restart")

    current["state"] = as_page_state(stalled, ms)
    site.socket.send(current["state"])
    expect(page.locator("#degraded-title")).to_have_text("Rollout stalled past its deadline.")
    expect(banner).to_contain_text("progressDeadlineSeconds (600 s)")
    expect(banner).to_contain_text("restarts")
    shot(page, screenshot_dir / "operator-day-degraded.png")
