"""axe-core's WCAG 2 A and AA rules find nothing on any page of the dashboard (issue 31, "Accessible").

axe-core comes from npm (package.json and package-lock.json at the repository's root; `make test`
runs `npm ci` first), never from a CDN: its ``axe.min.js`` is read from ``node_modules`` and
evaluated in each page by Playwright (through the DevTools protocol, so the pages' Content Security
Policy stays as it is). Pages are served by Django in this process (``offline.OfflineSite``) with
real data: a ModelServing on the database-backed simulated cluster with a topology cell's pod panel
and a dialog open, a paused canary, the demo InferenceService, the Releases page with versions and
releases, the YAML editor, Notifications, Events and the sign-in page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.notifications.test_deliveries_api import deliveries  # noqa: F401  (the fixture)
from tests.releases.conftest import approver, chat, sim, world  # noqa: F401  (fixtures)

from .offline import OfflineSite
from .test_isvc_page import demo_isvc, settle  # noqa: F401  (the fixture)
from .test_operator_day_page import as_page_state, click_cell, live_sim, views_of  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.0 and 2.1, levels A and AA: the rules the issue names.
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

RUN_AXE = """async (tags) => {
  const options = { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] };
  const result = await window.axe.run(document, options);
  return result.violations.map((v) => ({
    id: v.id,
    help: v.help,
    nodes: v.nodes.slice(0, 8).map(
      (n) => n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\\s+/g, ' ').slice(0, 160)),
    count: v.nodes.length,
  }));
}"""


def axe_source() -> str:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` at the repository's root (make test does)")
    return AXE.read_text()


def violations(page: Page) -> list[str]:
    """axe-core's WCAG 2 A/AA violations on the page as it is now, one line per element."""
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(axe_source())
    found = page.evaluate(RUN_AXE, TAGS)
    return [f"{v['id']} ({v['count']}x, {v['help']}): {node}" for v in found for node in v["nodes"]]


def check(page: Page, found: dict[str, list[str]], label: str) -> None:
    found[label] = violations(page)


def report(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{label}: {line}" for label, lines in found.items() for line in lines)


def test_the_sign_in_page_has_no_wcag_violations(page: Page, client):
    site = OfflineSite(page, client)
    page.goto(site.url("/accounts/login/"))
    found: dict[str, list[str]] = {}
    check(page, found, "sign-in")
    # The refusal, as Django answers a wrong password (OfflineSite forwards JSON bodies, not forms).
    refused = client.post("/accounts/login/", {"username": "nobody", "password": "wrong"}).content
    page.route(
        site.url("/accounts/login/?refused"), lambda route: route.fulfill(body=refused, content_type="text/html")
    )
    page.goto(site.url("/accounts/login/?refused"))
    expect(page.locator(".alert-error")).to_be_visible()
    check(page, found, "sign-in refused")
    assert not report(found), report(found)


def test_the_workloads_list_detail_editor_notifications_and_events_pages_have_no_wcag_violations(
    live_sim,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
):
    live_sim.set_image("engine:v2")
    live_sim.run(until=lambda s: any(i["revision"] == s["updateRevision"] for i in s["instances"]))
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    found: dict[str, list[str]] = {}

    page.goto(site.url("/"))
    expect(page.locator("#ms-rows")).to_contain_text("day")
    check(page, found, "workloads")

    page.goto(site.url("/modelservings/default/day/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    click_cell(page, 0)
    expect(page.get_by_test_id("cell-detail")).to_contain_text("group 0")
    page.wait_for_load_state("networkidle")
    check(page, found, "modelserving")
    page.get_by_test_id("pod-open").first.click()
    expect(page.get_by_test_id("pod-log")).to_be_visible()
    check(page, found, "modelserving, a pod's events and log")
    page.get_by_test_id("btn-set-image").click()
    expect(page.locator("#dialog")).to_be_visible()
    check(page, found, "modelserving, set-image dialog")
    page.locator("#dialog-cancel").click()

    for label, path in (
        ("editor", "/modelservings/default/day/edit/"),
        ("apply", "/manifests/apply/"),
        ("notifications", "/notifications/"),
        ("events", "/events/"),
    ):
        page.goto(site.url(path))
        page.wait_for_load_state("networkidle")
        check(page, found, label)
    assert not report(found), report(found)


def test_a_paused_canary_on_the_modelserving_page_has_no_wcag_violations(ms, operator_client, page: Page):
    seen = views_of("canary-operator-rollback")
    waiting = next(v for t, v in seen if 120 < t < 200 and (v.get("canary") or {}).get("phase") == "Paused")
    site = OfflineSite(page, operator_client, full_state=lambda: as_page_state(waiting, ms))
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("canary-panel")).to_be_visible()
    page.wait_for_load_state("networkidle")
    found = {"paused canary": violations(page)}
    assert not report(found), report(found)


def test_the_inferenceservice_page_has_no_wcag_violations(
    demo_isvc,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
):
    resp = operator_client.post(
        "/api/inferenceservices/default/llm/isvc-canary",
        json.dumps({"percent": 25, "image": "vllm/vllm-openai:v0.9.2", "reason": "a quarter"}),
        content_type="application/json",
    )
    assert resp.status_code == 200, resp.content
    settle(demo_isvc)
    site = OfflineSite(page, operator_client)
    # The page's websocket gets the InferenceService's state as the REST API answers it.
    page.route_web_socket(
        "ws://testserver/ws/inferenceservices/**",
        lambda ws: ws.send(
            json.dumps(
                site._with_test_connection(lambda: operator_client.get("/api/inferenceservices/default/llm/").json())
            )
        ),
    )
    page.goto(site.url("/inferenceservices/default/llm/"))
    expect(page.get_by_test_id("fact-canary")).to_have_text("canary 25%")
    expect(page.get_by_test_id("history")).to_contain_text("a quarter")
    page.wait_for_load_state("networkidle")
    found = {"inferenceservice": violations(page)}
    assert not report(found), report(found)


def test_the_releases_page_has_no_wcag_violations(
    world,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
):
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/releases/"))
    expect(page.get_by_test_id("env-staging")).to_contain_text("default/chat")
    page.wait_for_load_state("networkidle")
    found: dict[str, list[str]] = {"releases": violations(page)}
    page.get_by_test_id("btn-new-release").click()
    expect(page.locator("#dialog")).to_be_visible()
    check(page, found, "releases, new release dialog")
    assert not report(found), report(found)


def test_the_check_itself_finds_faint_text_and_an_unlabelled_control(page: Page, client):
    """The harness is live: the same check on the sign-in page with grey-on-white text and an
    input without a label reports both."""
    site = OfflineSite(page, client)
    page.goto(site.url("/accounts/login/"))
    page.evaluate(
        """() => {
          const p = document.createElement('p'); p.textContent = 'faint'; p.style.color = '#bbbbbb';
          document.querySelector('.login-card').append(p, document.createElement('input'));
        }"""
    )
    found = "\n".join(violations(page))
    assert "color-contrast" in found and "label" in found, found


def test_the_notifications_page_with_deliveries_has_no_wcag_violations(
    deliveries,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
):
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/notifications/"))
    expect(page.locator("#deliveries tbody tr")).to_have_count(3)
    found = {"notifications with deliveries": violations(page)}
    assert not report(found), report(found)
