"""In Chromium (offline: the real views and API through Django's test client): the Events page
(filters, live rows, escaping), a pod's events and log from the topology cell, and the progress
charts' time ranges."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from rolloutui.models import AuditRecord, NotificationDelivery

from .offline import OfflineSite
from .test_operator_day_page import click_cell, live_sim  # noqa: F401 - the fixture
from .test_pages_offline import shot

pytestmark = pytest.mark.django_db


def _audit(action, *, namespace="default", name="chat", who="operator", reason="why"):
    return AuditRecord.objects.create(
        actor_name=who, source="api", action=action, namespace=namespace, name=name, reason=reason
    )


def test_the_events_page_lists_every_kind_filters_by_user_and_shows_new_events_live(
    operator_client, page: Page, screenshot_dir
):
    AuditRecord.objects.filter(namespace="").delete()  # the fixture's sign-in (an account's record)
    _audit("pause", reason="investigating latency")
    _audit("isvc_rollback", namespace="team-b", name="llm", who="carol", reason="<img src=x onerror=alert(1)>")
    NotificationDelivery.objects.create(
        destination="ops", destination_type="slack", host="hooks.example", kind="paused", namespace="default", name="x"
    )
    site = OfflineSite(page, operator_client)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(site.url("/events/"))
    rows = page.locator("#events-rows tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("Paused")
    expect(rows.nth(0)).to_contain_text("notification")
    expect(rows.nth(0)).to_contain_text("ops (hooks.example)")
    # The InferenceService's record links its page; the reason is text, not markup.
    # Actions read as words; the audit's name stays on the cell (the filter takes it).
    rollback = rows.filter(has=page.locator('td[data-action="isvc_rollback"]'))
    expect(rollback.locator("td[data-action]")).to_have_text("Rollback")
    expect(rollback.get_by_role("link", name="team-b/llm")).to_have_attribute("href", "/inferenceservices/team-b/llm/")
    expect(rollback).to_contain_text("<img src=x onerror=alert(1)>")
    expect(page.locator("#events-rows img")).to_have_count(0)
    expect(page.locator("#events-live")).to_contain_text("live · updated")

    # A new action appears on top without reloading.
    _audit("resume", reason="latency fine again")
    expect(rows.nth(0).locator("td[data-action]")).to_have_text("Resume", timeout=15_000)
    expect(page.get_by_text("latency fine again")).to_be_visible()
    shot(page, screenshot_dir / "events-page.png")

    # Filtered by user: a page of its own (a URL to share) with that user's records only.
    page.locator("#ev-who").fill("carol")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(site.url("/events/?namespace=&workload=&action=&who=carol&type="))
    expect(rows).to_have_count(1)
    expect(rows.nth(0).locator('td[data-action="isvc_rollback"]')).to_have_count(1)
    _audit("pause", reason="someone else's")
    _audit("set_image", who="carol", reason="carol again")
    expect(rows.nth(0)).to_contain_text("carol again", timeout=15_000)
    expect(page.locator("#events-rows")).not_to_contain_text("someone else's")


def test_a_viewer_is_shown_no_notification_deliveries_and_a_user_without_view_gets_403(
    viewer_client, page: Page, django_user_model
):
    AuditRecord.objects.filter(namespace="").delete()  # the fixture's sign-in (an account's record)
    _audit("pause")
    NotificationDelivery.objects.create(destination="ops", destination_type="slack", kind="paused", namespace="default")
    site = OfflineSite(page, viewer_client)
    page.goto(site.url("/events/"))
    expect(page.locator("#events-rows tr")).to_have_count(1)
    expect(page.locator("#events-rows")).not_to_contain_text("notification")
    nobody = django_user_model.objects.create_user("nobody", password="x-very-long-pw")
    viewer_client.force_login(nobody)
    assert viewer_client.get("/events/").status_code == 403


def test_a_topology_cells_pod_shows_its_events_and_log_lines(
    live_sim,  # noqa: F811
    operator_client,
    page: Page,
    screenshot_dir,
):
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url("/modelservings/default/day/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    click_cell(page, 0)
    detail = page.get_by_test_id("cell-detail")
    expect(detail).to_contain_text("group 0 · decode 0")
    detail.get_by_test_id("pod-open").first.click()
    events = page.get_by_test_id("pod-events")
    expect(events).to_contain_text("Scheduled")
    expect(events).to_contain_text("Successfully assigned default/day-")
    expect(events).to_contain_text("Started")
    log = page.get_by_test_id("pod-log")
    expect(log).to_contain_text("Starting the model server, image engine:v1")
    expect(log).to_contain_text("Loading safetensors checkpoint shards: 100%")
    expect(log).to_contain_text("application startup complete")
    # The log stays inside the cell's panel.
    box, panel = log.bounding_box(), detail.bounding_box()
    assert box["x"] + box["width"] <= panel["x"] + panel["width"] + 1
    shot(page, screenshot_dir / "pod-events-and-log.png")

    # Following (the default): the pod is deleted, and its shutdown shows without a click.
    expect(page.get_by_test_id("pod-follow")).to_be_checked()
    pod = page.get_by_test_id("pod-detail").locator("h3").inner_text().removeprefix("Pod ")
    live_sim.cluster.delete_pod("default", pod)
    expect(log).to_contain_text("Received SIGTERM", timeout=15_000)
    expect(events).to_contain_text("Stopping container engine")


def test_the_progress_charts_show_the_range_chosen_from_stored_history(
    live_sim,  # noqa: F811
    operator_client,
    page: Page,
):
    from controller.models import ProgressSample

    ms = live_sim.ms
    assert ProgressSample.objects.filter(**ms).count() > 3  # the controller's passes sampled progress
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url("/modelservings/default/day/"))
    note = page.locator("#charts-note")
    # The page opens with "history since this page opened, extended live" and reads the stored
    # history after its first render: wait for that read to land (the note names its span).
    expect(note).not_to_contain_text("since this page opened")
    expect(note).to_contain_text("extended live")
    expect(page.locator('#chart-range button[data-range="3600"]')).to_have_attribute("aria-pressed", "true")
    stored = ProgressSample.objects.filter(**ms).count()
    assert page.evaluate("window.__rollout.samples.length") >= stored

    page.get_by_role("button", name="This rollout").click()
    expect(page.get_by_role("button", name="This rollout")).to_have_attribute("aria-pressed", "true")
    expect(note).to_contain_text("extended live")

    # A custom range of the first seconds: fixed (not extended), only the samples stored in it.
    first = ProgressSample.objects.filter(**ms).order_by("t").first().t
    page.get_by_role("button", name="Custom…").click()
    page.evaluate(
        """([from, to]) => {
             const p = (n) => String(n).padStart(2, "0");
             const v = (t) => { const d = new Date(t * 1000);
               return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T`
                 + `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; };
             document.getElementById("chart-from").value = v(from);
             document.getElementById("chart-to").value = v(to);
           }""",
        [first, first + 3],
    )
    page.get_by_test_id("chart-apply").click()
    expect(note).not_to_contain_text("extended live")
    in_range = ProgressSample.objects.filter(**ms, t__gte=int(first), t__lte=int(first) + 3).count()
    page.wait_for_function("n => window.__rollout.samples.length === n", arg=in_range)


def test_the_canary_charts_follow_the_time_range_chosen_for_the_progress_charts(ms, viewer_client, page: Page):
    from rolloutui.services import capacity

    from .test_canary_capacity_offline import canary_state, comparison_fixture, open_page

    now = capacity.clock()["now"]
    with page.expect_request(lambda r: "/comparison/?window=900&bucket=60" in r.url):  # the default: 15 min
        open_page(page, ms, viewer_client, canary_state(ms, now), comparison=comparison_fixture(now))
    expect(page.get_by_test_id("canary-panel")).to_be_visible()
    # 6 h back from now, in 3-minute buckets (120 points).
    with page.expect_request(lambda r: "/comparison/?window=21600&bucket=180" in r.url):
        page.get_by_role("button", name="6 h").click()
    expect(page.get_by_role("button", name="6 h")).to_have_attribute("aria-pressed", "true")


def test_the_capacity_charts_keep_to_the_time_range_chosen(ms, viewer_client, page: Page):
    from .test_pages_offline import current_state

    site = OfflineSite(page, viewer_client, full_state=lambda: current_state(ms))
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    drawn = "() => !!document.querySelector('#capacity-chart-flight .main-svg')"
    page.wait_for_function(drawn)
    # A custom window that ends before the page opened: nothing was polled in it, nothing is drawn.
    page.get_by_role("button", name="Custom…").click()
    page.evaluate("""() => {
        document.getElementById("chart-from").value = "2001-01-01T00:00:00";
        document.getElementById("chart-to").value = "2001-01-01T01:00:00";
    }""")
    page.get_by_test_id("chart-apply").click()
    page.wait_for_function("() => !document.querySelector('#capacity-chart-flight .main-svg')")
    # The last 15 minutes hold what was polled: drawn again.
    page.get_by_role("button", name="15 min").click()
    page.wait_for_function(drawn)
