"""The Canary panel of a weighted canary in Chromium, served by Django in this process
(``offline.OfflineSite``), states over the fake websocket: the weight step in words, the weight in
force beside the current step with the split observed, what it says before any window ran at that
weight, the comparison's figures when no analysis runs, and the status' message when no canary
instance is Ready (shown as text)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .test_canary_capacity_offline import canary_state, comparison_fixture, open_page

STEPS = [{"setPartition": "75%"}, {"setWeight": 20}, {"pause": {}}, {"setPartition": 0}]


def weighted_state(ms: dict, now: float, **canary) -> dict:
    state = canary_state(ms, now)
    state["canary"].update(steps=STEPS, stepIndex=2, pauseSecondsLeft=None, failures=0, weight=20, **canary)
    return state


def test_the_step_list_shows_the_weight_and_beside_the_current_step_the_split_observed(ms, viewer_client, page: Page):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    observed = {"percent": 19.4, "canary": 233, "total": 1201, "windows": 2}
    open_page(
        page, ms, viewer_client, weighted_state(ms, now, observedWeight=observed), comparison=comparison_fixture(now)
    )
    steps = page.get_by_test_id("canary-steps").locator("li")
    expect(steps).to_have_text(
        [
            re.compile(r"^Set partition 75%\s*done$"),
            re.compile(r"^Set weight 20%\s*done$"),
            re.compile(
                r"^Pause until promoted\s*waiting here\s*weight 20% · "
                r"observed 19.4% \(233 of 1,201 requests, 2 windows\)$"
            ),
            "Set partition 0",
        ]
    )
    expect(page.get_by_test_id("canary-weight")).to_have_text(
        "weight 20% of new requests to the canary · observed 19.4% (233 of 1,201 requests, 2 windows)"
    )
    expect(page.get_by_test_id("canary-weight-message")).to_have_count(0)


def test_before_a_window_ran_at_the_weight_it_says_so_and_a_missing_canary_instance_is_shown_as_text(
    ms, viewer_client, page: Page
):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    message = "weight 20% but no instance of the update revision is Ready: <img src=x onerror=alert(1)>"
    state = weighted_state(ms, now, observedWeight=None, weightMessage=message)
    open_page(page, ms, viewer_client, state, comparison=comparison_fixture(now))
    expect(page.get_by_test_id("canary-step-weight")).to_have_text(
        " weight 20% · observed: no window at this weight yet"
    )
    expect(page.get_by_test_id("canary-weight-message")).to_have_text(message)
    expect(page.locator("#canary-panel img")).to_have_count(0)


def test_without_an_analysis_the_split_comes_from_the_comparison_figures(ms, viewer_client, page: Page):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    state = weighted_state(ms, now, observedWeight=None, analysis=False, windows=[])
    open_page(page, ms, viewer_client, state, comparison=comparison_fixture(now))
    # The fixture's comparison: 400 canary and 6,000 stable requests.
    expect(page.get_by_test_id("canary-observed-weight")).to_have_text(
        "observed 6.3% (400 of 6,400 requests, last figures)"
    )
