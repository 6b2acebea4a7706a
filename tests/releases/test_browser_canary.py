"""A bad canary in the real product, as a new user meets it: `manage.py runall` (what `make run`
starts: Redis, Daphne, the Celery worker and beat, the demo on the embedded cluster) driven by
Debian's Chromium.

The operator adds canary steps and an analysis to `default/demo` with **Edit YAML**, then sets the
decode role's image to the demo's flaky build (`vllm/vllm-openai:v0.9.2-flaky`, one request in five
answered with an error) with **Set image…**. The first step gives group 3 the new revision; the
embedded cluster's router writes a request record per request; the controller's reconcile task
(the Celery worker) judges each window from them and pauses the rollout. The page says so, with
the figures, the AnalysisFailed condition and the audit record from the analysis, and no group
below the first step's partition got the new revision.

The simulated clock runs 10x, so a 60 s analysis window ends every 6 s of wall time; the first is
judged one interval (6 s) after it ended, the later ones after the stable revision's p99 request
duration in the window before (settleSeconds' default).
Screenshots go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from playwright.sync_api import Page, expect

from tests.conftest import TEST_PASSWORD
from tests.live.procs import runall

from .conftest import SCREENSHOTS
from .test_browser import confirm, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FLAKY = "vllm/vllm-openai:v0.9.2-flaky"
# What docs/getting-started.md (and the README) tell a user to add under spec.rolloutStrategy (the same block).
CANARY = {
    "steps": [{"setPartition": "75%"}, {"pause": {}}, {"setPartition": 0}],
    "analysis": {
        "intervalSeconds": 60,
        "minRequests": 20,
        "failureLimit": 1,
        "onFailure": "Pause",
        "metrics": [{"metric": "errorRate", "max": 0.05}],
    },
}
DETAIL = "/modelservings/default/demo/"
PERCENT = r"(\d+(?:\.\d+)?)%"


@pytest.fixture(scope="module")
def demo_stack(tmp_path_factory):
    with runall(tmp_path_factory.mktemp("canary-var"), speed=10, password=TEST_PASSWORD) as stack:
        yield stack


def rollout_state(page: Page) -> dict:
    return page.evaluate("""() => {
        const s = window.__rollout.state;
        return {update: s.updateRevision, paused: s.spec.paused,
                groups: s.instances.map((i) => [i.group, i.revision])};
    }""")


def test_an_operator_starts_a_canary_of_the_flaky_build_and_the_analysis_pauses_it_with_the_figures(
    demo_stack, page: Page
):
    url = demo_stack["url"]
    page.set_viewport_size({"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    sign_in(page, url, "admin")

    # The demo comes up.
    page.goto(url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    expect(page.get_by_test_id("phase")).to_have_text("Healthy", timeout=120000)
    stable = rollout_state(page)["update"]

    # Edit YAML: canary steps and an analysis under spec.rolloutStrategy. The templates do not
    # change, so nothing rolls out yet: the Canary panel says the steps wait for a new revision.
    page.get_by_test_id("edit-yaml").click()
    page.wait_for_url(url + DETAIL + "edit/")
    text = page.get_by_test_id("editor-text")
    expect(page.get_by_test_id("editor-summary")).to_contain_text("(update)")
    doc = yaml.safe_load(text.input_value())
    doc["spec"]["rolloutStrategy"]["canary"] = CANARY
    text.fill(yaml.safe_dump(doc, sort_keys=False))
    expect(page.get_by_test_id("editor-summary")).to_contain_text("valid: default/demo (update)")
    page.get_by_test_id("editor-apply").click()
    confirm_on(page, "canary with analysis for the next builds")
    page.wait_for_url(url + DETAIL)
    expect(page.get_by_test_id("canary-panel")).to_contain_text("Canary steps are set", timeout=20000)

    # Set image…: the flaky build on the decode role. The first step (75% of 4 -> partition 3)
    # gives group 3 the new revision.
    page.get_by_test_id("btn-set-image").click()
    page.get_by_test_id("si-role").select_option("decode")
    page.get_by_test_id("si-image").fill(FLAKY)
    confirm(page, "try the 0.9.2 flaky build as a canary")
    expect(page.get_by_test_id("canary-steps")).to_contain_text("Set partition 75%", timeout=20000)

    # The analysis pauses it: the banner says who paused it and why, with the figures.
    cause = page.get_by_test_id("paused-cause")
    expect(cause).to_contain_text("Paused by the canary analysis", timeout=180000)
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    said = cause.inner_text()
    found = re.search(rf"canary error rate {PERCENT} is above the limit {PERCENT}", said)
    assert found, said
    rate, limit = float(found.group(1)), float(found.group(2))
    assert limit == 5.0 and rate > limit, said

    # Promote has no step to skip on a stopped canary, and says what does apply.
    expect(page.get_by_test_id("controls-why")).to_contain_text("The canary analysis stopped this canary")
    expect(page.locator("#fact-partition")).to_have_text("3 · canary")

    # The Canary panel: Failed, the condition, the failed window with both revisions' requests.
    expect(page.get_by_test_id("canary-phase")).to_have_text("Failed")
    expect(page.get_by_test_id("canary-condition")).to_contain_text("AnalysisFailed")
    expect(page.get_by_test_id("canary-condition")).to_contain_text("the analysis paused the rollout")
    expect(page.get_by_test_id("canary-message")).to_contain_text(found.group(0))
    failed_row = page.locator("[data-testid=canary-windows] tbody tr", has=page.locator(".verdict-fail")).first
    expect(failed_row).to_contain_text(found.group(0))
    canary_requests, stable_requests = (
        int(n) for n in re.search(r"(\d+) / (\d+)", failed_row.locator("td.num").nth(1).inner_text()).groups()
    )
    assert canary_requests >= CANARY["analysis"]["minRequests"] and stable_requests > canary_requests
    # Stable against canary over the last 15 minutes: the canary's error rate, the stable's none.
    errors_row = page.locator("[data-testid=canary-compare] tr[data-figure=errorRate]")
    expect(errors_row.locator("td").nth(1)).to_have_text(re.compile(PERCENT), timeout=30000)
    assert errors_row.locator("td").nth(0).inner_text() == "0.00%"
    assert float(errors_row.locator("td").nth(1).inner_text().rstrip("%")) > 5.0

    # The audit: the pause, by the analysis, with the same reason.
    entry = page.get_by_test_id("audit").locator("li", has=page.locator(".badge", has_text="analysis"))
    expect(entry).to_have_count(1, timeout=20000)
    expect(entry).to_contain_text("Pause")
    expect(entry).to_contain_text(found.group(0))
    audit = json.loads(page.evaluate("() => fetch('/api/audit/?source=analysis').then((r) => r.text())"))
    record = audit["results"][0]
    assert (record["action"], record["source"], record["result"]) == ("pause", "analysis", "ok")
    figures = record["details"]["figures"]
    assert figures["canary"]["errorRate"] > 0.05 and figures["stable"]["errorRate"] == 0.0

    # Only the first step's group got the new revision; groups 0-2 still run the stable one.
    now = rollout_state(page)
    assert now["paused"] and now["update"] != stable
    on_new = {group for group, revision in now["groups"] if revision == now["update"]}
    assert on_new <= {3}, now["groups"]
    assert {group for group, revision in now["groups"] if revision == stable} >= {0, 1, 2}, now["groups"]

    page.get_by_test_id("canary-panel").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / "detail-canary-paused-by-analysis.png"), full_page=True)
    page.get_by_test_id("canary-panel").screenshot(path=str(SCREENSHOTS / "canary-panel-paused.png"))

    # The way back (the walkthrough's step 4): roll back to revision 1, then resume. The stable
    # revision is known good, so group 3 returns to it without steps.
    page.get_by_test_id("btn-rollback").click()
    page.get_by_test_id("rollback-to").select_option("1")
    confirm(page, "the flaky build fails one request in eight")
    page.get_by_test_id("btn-resume").click()
    confirm(page, "back to the stable build")
    expect(page.get_by_test_id("paused-banner")).to_be_hidden(timeout=20000)
    expect(page.get_by_test_id("phase")).to_have_text("Healthy", timeout=120000)
    back = rollout_state(page)
    assert back["update"] == stable and {revision for _, revision in back["groups"]} == {stable}, back
    assert errors == []


def confirm_on(page: Page, reason: str) -> None:
    """The editor's Apply dialog (the same reason dialog, which leaves the page on success)."""
    page.fill("[data-testid=dialog-reason]", reason)
    page.click("[data-testid=dialog-confirm]")
