"""Browser tests: the real product (`runall`: Daphne, Celery worker and beat, Redis) driven by
Debian's Chromium. An operator watches a rollout live, pauses it, promotes, opens a revision diff
and rolls back; a viewer sees no working controls and gets 403 from the API.

Screenshots of the detail page go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import TEST_PASSWORD
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DETAIL = "/modelservings/default/chat/"


def sign_in(page: Page, url: str, username: str) -> None:
    page.goto(url + "/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", TEST_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(url + "/")


def js_state(page: Page) -> dict:
    return page.evaluate("""() => {
        const s = window.__rollout.state;
        const upd = s.instances.filter((i) => i.revision === s.updateRevision);
        return {phase: s.phase, paused: s.spec.paused, partition: s.spec.partition, time: s.time,
                updateRevision: s.updateRevision, updated: (s.counts || {}).updatedReplicas,
                onUpdate: upd.length, readyOnUpdate: upd.filter((i) => i.state === "Ready").length,
                instances: s.instances.length, renders: window.__renders, samples: window.__rollout.samples.length};
    }""")


def wait_state(page: Page, predicate, *, timeout: float = 90, what: str = "state") -> dict:
    return wait_until(lambda: js_state(page), until=predicate, what=what, timeout=timeout, interval=0.25)


def shot(page: Page, path, *, full_page: bool = True) -> None:
    # A sticky top bar is painted mid-page in a full-page capture; pin it for the screenshot.
    page.add_style_tag(content=".topbar { position: static; }")
    page.screenshot(path=str(path), full_page=full_page)


def confirm(page: Page, reason: str) -> None:
    page.fill("[data-testid=dialog-reason]", reason)
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible(timeout=15000)


def test_operator_watches_pauses_promotes_diffs_and_rolls_back(live_stack, page: Page, screenshot_dir):
    page.set_viewport_size({"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_stack.url, "operator")

    # The list shows the ModelServing with its phase; the row links to the detail page.
    row = page.locator(".ms-row[data-key='default/chat']")
    expect(row).to_be_visible()
    shot(page, screenshot_dir / "list.png", full_page=False)
    # Every phase's badge fits its column (a clipped one showed its ellipsis as a stray dot), and
    # none is animated: a pulsing dot per Progressing row made every frame of a 1,000-row list
    # longer than a frame.
    badges = page.evaluate("""() => {
        const badge = document.querySelector(".ms-row[data-key='default/chat'] .phase");
        const cell = badge.closest(".ms-cell");
        const out = {clipped: [], animated: []};
        for (const p of ["Pending", "Progressing", "Healthy", "Paused", "Blocked", "Degraded"]) {
            badge.className = "phase phase-" + p.toLowerCase();
            badge.textContent = p;
            if (cell.scrollWidth > cell.clientWidth) out.clipped.push(p);
            if (getComputedStyle(badge, "::before").animationName !== "none") out.animated.push(p);
        }
        return out;
    }""")
    assert badges == {"clipped": [], "animated": []}
    page.reload()
    row.locator("a.ms-link").click()
    page.wait_for_url(live_stack.url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    wait_state(page, lambda s: s["phase"] == "Healthy", what="the first rollout to finish")

    # Start a rollout from the page: set the image of the decode role.
    page.get_by_test_id("btn-set-image").click()
    page.get_by_test_id("si-role").select_option("decode")
    page.get_by_test_id("si-image").fill("engine:v2")
    confirm(page, "roll out engine v2")
    expect(page.get_by_test_id("phase")).to_have_text("Progressing", timeout=20000)

    # Live: instances move to the new revision and get Ready, without reloading the page.
    wait_state(page, lambda s: s["readyOnUpdate"] >= 1, what="a first updated instance")
    page.wait_for_timeout(600)  # cosmetic: let the bars' transitions end before the screenshot
    shot(page, screenshot_dir / "detail-progressing.png")

    # Pause: the page says Paused and no new update starts.
    page.get_by_test_id("btn-pause").click()
    confirm(page, "latency spike, investigating")
    expect(page.get_by_test_id("phase")).to_have_text("Paused", timeout=15000)
    expect(page.get_by_test_id("paused-banner")).to_be_visible()
    expect(page.get_by_test_id("btn-pause")).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("Already paused")
    page.wait_for_timeout(4000)  # elapsed time on purpose: work already started finishes
    held = js_state(page)
    page.wait_for_timeout(5000)  # elapsed time on purpose: a "nothing new starts" is seen over time
    after = js_state(page)
    assert after["onUpdate"] == held["onUpdate"], (held, after)
    assert after["phase"] == "Paused"
    shot(page, screenshot_dir / "detail-paused.png")

    # Resume: the rollout runs up to the partition (2): groups 2-5 update, 0-1 stay protected.
    page.get_by_test_id("btn-resume").click()
    confirm(page, "false alarm")
    wait_state(page, lambda s: s["updated"] == 4 and s["readyOnUpdate"] >= 4 * 3, what="the eligible groups to update")
    assert after["samples"] < js_state(page)["samples"]  # the charts were extended live
    expect(page.locator("#chart-progress .main-svg").first).to_be_visible()
    expect(page.locator("#chart-capacity .main-svg").first).to_be_visible()

    # Promote one step: partition 2 -> 1, group 1 updates.
    promote = page.get_by_test_id("btn-promote")
    expect(promote).to_have_text(re.compile(r"2 → 1"))
    promote.click()
    confirm(page, "canary healthy for 10 minutes")
    expect(page.locator("#fact-partition")).to_have_text("1", timeout=15000)
    wait_state(page, lambda s: s["updated"] == 5, what="group 1 to update after promote")
    shot(page, screenshot_dir / "detail-promoted.png")

    # Revision diff: #1 against #2 shows the image change, runtime fields apart.
    page.check("input[name=diff-a][value='1']")
    page.check("input[name=diff-b][value='2']")
    page.get_by_test_id("diff-btn").click()
    diff = page.get_by_test_id("diff")
    expect(diff).to_contain_text("engine:v2")
    expect(diff).to_contain_text("engine:v1")
    expect(diff).to_contain_text("Runtime fields")
    diff.scroll_into_view_if_needed()
    shot(page, screenshot_dir / "detail-diff.png")

    # Roll back to revision 1 with a reason: the audit timeline shows who, why and the revisions.
    page.get_by_test_id("btn-rollback").click()
    page.get_by_test_id("rollback-to").select_option("1")
    confirm(page, "v2 regressed p99 latency")
    audit = page.get_by_test_id("audit")
    expect(audit).to_contain_text("v2 regressed p99 latency", timeout=15000)
    expect(audit.locator("li").first).to_contain_text("Rollback")
    expect(audit.locator("li").first).to_contain_text("operator")
    expect(audit).to_contain_text("latency spike, investigating")
    expect(page.get_by_test_id("phase")).to_have_text(re.compile("Progressing|Healthy"), timeout=15000)
    page.wait_for_timeout(1500)  # cosmetic: let the page settle before the screenshot
    shot(page, screenshot_dir / "detail-rollback.png")

    # A topology cell opens its pods.
    box = page.get_by_test_id("topology").bounding_box()
    page.mouse.click(box["x"] + 80, box["y"] + 20)
    expect(page.get_by_test_id("cell-detail")).to_contain_text("Node", timeout=10000)
    shot(page, screenshot_dir / "detail-cell.png", full_page=False)
    # The state the page rebuilt from deltas has the server's instances.
    rest = page.request.get(live_stack.url + "/api/modelservings/default/chat/").json()
    wire = page.evaluate("window.__rollout.wireState")
    assert wire["instances"] and set(wire) == set(rest)
    assert [r["number"] for r in wire["revisions"]] == [r["number"] for r in rest["revisions"]]
    assert not errors, errors


def test_viewer_sees_no_working_controls_and_gets_403(live_stack, page: Page, screenshot_dir):
    page.set_viewport_size({"width": 1440, "height": 1000})
    sign_in(page, live_stack.url, "viewer")
    page.goto(live_stack.url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    buttons = page.locator("#controls [data-action]")
    assert buttons.count() >= 6
    for i in range(buttons.count()):
        expect(buttons.nth(i)).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("View only")
    expect(page.locator("#revisions [data-action=rollback]")).to_have_count(0)
    for action in ("fail-node", "add-node", "preview"):
        expect(page.get_by_test_id(f"btn-{action}")).to_be_disabled()
    page.wait_for_selector("#audit li")
    page.wait_for_selector("#chart-progress .main-svg")
    shot(page, screenshot_dir / "detail-viewer.png")

    # The API refuses the viewer's control even with a valid session and CSRF token.
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    resp = page.request.post(
        live_stack.url + "/api/modelservings/default/chat/pause",
        data={"reason": "trying"},
        headers={"X-CSRFToken": token, "Referer": live_stack.url + DETAIL},
    )
    assert resp.status == 403
    assert "operate" in resp.json()["detail"]
    assert page.request.get(live_stack.url + "/api/modelservings/default/chat/").status == 200


def test_reconnects_and_says_when_stale(live_stack, page: Page):
    sign_in(page, live_stack.url, "viewer")
    page.goto(live_stack.url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    # Drop the socket from the page side, as a network blip would.
    page.context.set_offline(True)
    page.evaluate("() => window.__rollout.dropSocket()")
    expect(page.get_by_test_id("conn")).to_contain_text("reconnecting", timeout=5000)
    expect(page.locator("#stale-banner")).to_be_visible()
    page.context.set_offline(False)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=20000)
    expect(page.locator("#stale-banner")).to_be_hidden()
