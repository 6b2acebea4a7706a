"""The ModelServing page through an operator's day (issue 31), in Chromium, served by Django in this
process (``offline.OfflineSite``). The states the page gets are the controller's own: either views of
a simulated run (``controller.simcluster.runner``) at the moments that matter, sent over the fake
websocket under the name of the page's ModelServing, or the state of a ModelServing on the
database-backed simulated cluster, moved by a manual clock (ticks of its physics and controller
passes in this process, as in tests/releases), whose pods the page reads from the API.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from controller.models import SimClock
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database.tick import tick
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.factories import group_strategy, modelserving, role
from tests.live.helpers import ManualClock
from tests.paths import TEST_SCENARIOS

from .offline import OfflineSite
from .test_pages_offline import current_state, shot

pytestmark = pytest.mark.django_db


def views_of(scenario: str) -> list[tuple[float, dict]]:
    """(time, state view) after every pass of a scenario of tests/scenarios."""
    runner = Runner(load_scenario(TEST_SCENARIOS / f"{scenario}.yaml"))
    seen: list[tuple[float, dict]] = []
    runner.kind.on_pass.append(lambda t, result: seen.append((t, result.view)))
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


class LiveSim:
    """The database-backed simulated cluster on a manual clock (``run`` ticks it and runs the
    controller's passes), holding one ModelServing of two groups replaced one at a time."""

    def __init__(self, clock: ManualClock, name: str) -> None:
        from rolloutui.services.cluster import get_cluster

        self.clock = clock
        self.cluster = get_cluster()
        self.ms = {"namespace": "default", "name": name}
        for _ in range(2):
            self.cluster.add_node(8)
        body = modelserving(
            name=name, replicas=2, strategy=group_strategy(maxUnavailable=1), roles=[role("decode", gpus=1)]
        )
        self.cluster.create_modelserving(body)
        self.run(until=lambda s: s["converged"])

    def state(self) -> dict:
        return current_state(self.ms)

    def run(self, *, until, limit: float = 300.0) -> dict:
        """Tick and reconcile a second at a time until ``until(state)`` (at most ``limit`` s)."""
        end = self.clock.t + limit
        while self.clock.t < end:
            self.clock.t += 1.0
            tick(self.cluster)
            run_reconcile(self.ms["namespace"], self.ms["name"])
            state = self.state()
            if until(state):
                return state
        raise AssertionError(f"not reached in {limit} s: {state['phase']}, blocked {state['blocked']}")

    def set_image(self, image: str) -> None:
        spec = self.cluster.get_modelserving(self.ms["namespace"], self.ms["name"])["spec"]
        roles = spec["template"]["roles"]
        roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = image
        self.cluster.patch_modelserving(self.ms["namespace"], self.ms["name"], {"spec": {"template": {"roles": roles}}})


@pytest.fixture
def live_sim(db, monkeypatch):
    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    SimClock.objects.update_or_create(
        pk=1,
        defaults={
            "wall_base": clock.t,
            "sim_base": clock.t,
            "config": {"timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1}},
        },
    )
    return LiveSim(clock, "day")


def click_cell(page: Page, group: int, slot: int = 0) -> None:
    box = page.get_by_test_id("topology").bounding_box()
    layout = page.evaluate(
        """() => { const L = window.__rollout.topo.layout;
                   return { labelW: L.labelW, cell: L.cell, gap: L.gap, colW: L.colW }; }"""
    )
    x = box["x"] + layout["labelW"] + group * layout["colW"] + layout["cell"] / 2
    y = box["y"] + 14 + slot * (layout["cell"] + layout["gap"]) + layout["cell"] / 2
    page.mouse.click(x, y)


def test_a_selected_cell_shows_the_new_revision_and_pods_once_its_group_was_replaced(
    live_sim, operator_client, page: Page, screenshot_dir
):
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url("/modelservings/default/day/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    before = live_sim.state()
    old_pods = {i["podUids"][0] for i in before["instances"] if i["group"] == 1}
    click_cell(page, 1)
    detail = page.get_by_test_id("cell-detail")
    expect(detail).to_contain_text("group 1 · decode 0")
    expect(detail).to_contain_text("#1")
    expect(detail).to_contain_text("engine:v1")

    # Group 1 (the highest ordinal) is replaced first; the page gets each state as it comes.
    live_sim.set_image("engine:v2")
    after = live_sim.run(
        until=lambda s: any(
            i["group"] == 1 and i["state"] == "Ready" and i["podUids"][0] not in old_pods for i in s["instances"]
        )
    )
    site.socket.send(after)
    expect(detail.locator(".cell-head")).to_contain_text("#2")
    expect(detail.locator(".cell-head")).to_contain_text("Ready")
    expect(detail).to_contain_text("engine:v2")
    expect(detail).not_to_contain_text("engine:v1")
    shot(page, screenshot_dir / "operator-day-cell-replaced.png")


def test_a_paused_canary_says_paused_and_a_rolled_back_one_says_where_it_stopped(
    ms, operator_client, page: Page, screenshot_dir
):
    seen = views_of("canary-operator-rollback")
    waiting = next(v for t, v in seen if 120 < t < 200 and (v.get("canary") or {}).get("phase") == "Paused")
    rolled_back = seen[-1][1]
    current = {"state": as_page_state(waiting, ms)}
    site = OfflineSite(page, operator_client, full_state=lambda: current["state"])
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    panel = page.get_by_test_id("canary-panel")
    # 1 of 4 groups on the canary, waiting at the 120 s pause: Paused, not Healthy.
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    expect(page.locator("#fact-partition")).to_have_text("3 · canary")
    expect(panel.locator("li[aria-current='step']")).to_contain_text("waiting here")

    current["state"] = as_page_state(rolled_back, ms)
    site.socket.send(current["state"])
    expect(page.get_by_test_id("canary-phase")).to_have_text("RolledBack")
    expect(panel.locator("li[aria-current='step']")).to_contain_text("rolled back here")
    expect(panel).not_to_contain_text("waiting here")
    expect(page.get_by_test_id("canary-message")).to_have_text(
        "rolled back at step 2 of 5: the canary's revision no longer rolls out"
    )
    expect(page.locator("#fact-partition")).to_have_text("0")
    expect(page.get_by_test_id("phase")).to_have_text("Healthy")
    shot(page, screenshot_dir / "operator-day-canary-rolled-back.png")


def test_delete_stays_disabled_until_the_modelservings_name_is_typed_as_argo_cd_asks(
    ms, operator_client, page: Page, screenshot_dir
):
    """Argo CD's delete dialog asks for the application's name before it deletes; so does ours. The
    API is unchanged: the page still POSTs .../delete with the reason alone."""
    site = OfflineSite(page, operator_client, full_state=lambda: current_state(ms))
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    page.get_by_test_id("btn-delete").click()
    confirm = page.get_by_test_id("dialog-confirm")
    typed = page.get_by_test_id("dialog-type-name")
    expect(page.locator("#dialog")).to_contain_text(f"Type {ms['name']} to confirm")
    page.fill("[data-testid=dialog-reason]", "retired model")
    expect(confirm).to_be_disabled()
    for wrong in ("", ms["name"][:-1], ms["name"].upper(), f"{ms['namespace']}/{ms['name']}"):
        typed.fill(wrong)
        expect(confirm).to_be_disabled()
    typed.fill(ms["name"])
    expect(confirm).to_be_enabled()
    shot(page, screenshot_dir / "operator-day-delete-type-name.png")
    confirm.click()
    expect(page).to_have_url(site.url("/"))
    assert site.requests[-1] == (
        "POST",
        f"/api/modelservings/{ms['namespace']}/{ms['name']}/delete",
        {"reason": "retired model"},
    )


def test_a_dialog_without_a_name_to_type_opens_without_the_name_field(ms, operator_client, page: Page):
    site = OfflineSite(page, operator_client, full_state=lambda: current_state(ms))
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    page.get_by_test_id("btn-delete").click()
    expect(page.get_by_test_id("dialog-type-name")).to_be_visible()
    page.get_by_role("button", name="Cancel").click()
    page.get_by_test_id("btn-pause").click()
    expect(page.get_by_test_id("dialog-type-name")).to_have_count(0)
    page.fill("[data-testid=dialog-reason]", "hold")
    expect(page.get_by_test_id("dialog-confirm")).to_be_enabled()


def post_action(client, ms: dict, action: str, body: dict):
    return client.post(
        f"/api/modelservings/{ms['namespace']}/{ms['name']}/{action}", data=body, content_type="application/json"
    )


def test_abort_takes_every_group_back_to_stable_and_leaves_the_rollout_paused_as_argo_rollouts_abort(
    live_sim, operator_client
):
    """Argo Rollouts' abort scales the canary back to the stable version and the rollout waits for a
    retry; here the groups already on the new revision return to the stable one although the
    rollout stays paused, and resume is the retry."""
    from rolloutui.models import AuditRecord

    stable = live_sim.state()["updateRevision"]
    live_sim.set_image("engine:v2")
    live_sim.run(until=lambda s: any(i["revision"] != stable and i["state"] == "Ready" for i in s["instances"]))
    resp = post_action(operator_client, live_sim.ms, "abort", {"reason": "p99 up"})
    assert resp.status_code == 200, resp.content
    audit = resp.json()["audit"]
    assert (audit["action"], audit["result"], audit["toRevision"]) == ("abort", "ok", "1")
    after = live_sim.run(until=lambda s: s["converged"] and {i["revision"] for i in s["instances"]} == {stable})
    assert after["spec"]["paused"] is True and after["phase"] == "Paused"
    assert after["updateRevision"] == stable
    record = AuditRecord.objects.get(id=audit["id"])
    assert (record.actor.username, record.source, record.reason) == ("operator", "api", "p99 up")


@pytest.mark.parametrize(
    "user, status, result",
    [("operator", 400, "error"), ("viewer", 403, "error")],
)
def test_an_abort_with_no_rollout_in_progress_or_by_a_viewer_is_refused_and_audited(
    live_sim, operator_client, viewer_client, user, status, result
):
    from rolloutui.models import AuditRecord

    client = {"operator": operator_client, "viewer": viewer_client}[user]
    resp = post_action(client, live_sim.ms, "abort", {"reason": "just in case"})
    assert resp.status_code == status, resp.content
    if user == "operator":
        assert "nothing to abort" in str(resp.json())
    record = AuditRecord.objects.filter(action="abort").latest("id")
    assert (record.actor.username, record.result) == (user, result)
    assert live_sim.state()["spec"]["paused"] is False


def test_the_abort_button_waits_for_a_rollout_and_one_click_sends_the_groups_back_to_stable_paused(
    live_sim, operator_client, page: Page, screenshot_dir
):
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.goto(site.url("/modelservings/default/day/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    abort = page.get_by_test_id("btn-abort")
    expect(abort).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("No rollout in progress: nothing to abort.")

    stable = live_sim.state()["updateRevision"]
    live_sim.set_image("engine:v2")
    site.socket.send(
        live_sim.run(until=lambda s: any(i["revision"] != stable and i["state"] == "Ready" for i in s["instances"]))
    )
    expect(abort).to_be_enabled()
    abort.click()
    expect(page.locator("#dialog")).to_contain_text(f"goes back to the stable revision #1 {stable}")
    page.fill("[data-testid=dialog-reason]", "p99 up")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    assert site.requests[-1] == ("POST", "/api/modelservings/default/day/abort", {"reason": "p99 up"})
    site.socket.send(
        live_sim.run(until=lambda s: s["converged"] and {i["revision"] for i in s["instances"]} == {stable})
    )
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    expect(abort).to_be_disabled()
    shot(page, screenshot_dir / "operator-day-aborted.png")


def test_seconds_into_a_deploy_the_funnel_counts_the_spec_instances_and_no_one_waits_longer_than_the_deploy(
    live_sim,
):
    """The funnel is over a set that does not move while a rollout runs: the instances the spec asks
    for (replicas x each role's replicas), each at its highest gate, with the slots whose instance is
    leaving (draining, terminating) or not made yet counted as not created. An instance leaving is
    not waiting for a gate: the old group being drained must not show as "at Loaded for 24 min"."""
    live_sim.clock.t += 24 * 60  # the pods have been Ready for 24 minutes
    live_sim.run(until=lambda s: True)
    started = live_sim.clock.t
    live_sim.set_image("engine:v2")
    seen = []
    live_sim.run(
        until=lambda s: seen.append(s) is None and s["converged"] and s["updateRevision"] != seen[0]["currentRevision"]
    )
    assert len(seen) > 5
    for state in seen:
        assert state["gateFunnelTotal"] == 2, state["gateFunnel"]
        assert sum(f["count"] for f in state["gateFunnel"]) <= 2
        for f in state["gateFunnel"]:
            if f["slowest"]:
                assert state["time"] - f["slowest"]["since"] <= state["time"] - started + 1, (
                    f,
                    state["time"] - started,
                )


def test_the_funnel_says_what_it_counts_and_measures_against_the_spec_instances_mid_deploy(
    live_sim, operator_client, page: Page
):
    stable = live_sim.state()["updateRevision"]
    live_sim.set_image("engine:v2")
    # Group 1's old instance is draining and its replacement not made yet: 1 of the 2 counted.
    mid = live_sim.run(until=lambda s: any(i["state"] in ("Draining", "Deleting") for i in s["instances"]))
    assert any(i["revision"] == stable for i in mid["instances"])
    site = OfflineSite(page, operator_client, full_state=lambda: mid)
    page.goto(site.url("/modelservings/default/day/"))
    funnel = page.get_by_test_id("gate-funnel")
    expect(funnel.locator(".gate-note")).to_contain_text(
        "Of the 2 instances the spec asks for (replicas × each role's replicas)"
    )
    expect(funnel.locator(".gate-note")).to_contain_text("1 not created yet")
    serving_bar = funnel.locator("[data-gate=Serving] .gate-bar i")
    assert serving_bar.evaluate("(el) => el.style.width") == "50%"


def test_the_capacity_table_moves_with_the_same_state_message_as_the_topology(live_sim, operator_client, page: Page):
    """The table's instance columns (serving / instances, in flight) come from the state the
    websocket delivers, as the topology's cells do, not from the next 5 s poll of .../capacity/."""
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.goto(site.url("/modelservings/default/day/"))
    row = page.get_by_test_id("capacity-roles").locator("tr[data-role=decode]")
    expect(row.locator("td").nth(1)).to_have_text("2 / 2")
    # From now on every poll answers what it answered before the deploy.
    stale = operator_client.get("/api/modelservings/default/day/capacity/").json()
    page.route("**/capacity/**", lambda route: route.fulfill(json=stale))
    live_sim.set_image("engine:v2")
    mid = live_sim.run(until=lambda s: any(i["state"] in ("Draining", "Deleting") for i in s["instances"]))
    serving = sum(1 for i in mid["instances"] if i["gate"] == "Serving")
    site.socket.send(mid)
    expect(row.locator("td").nth(1)).to_have_text(f"{serving} / {len(mid['instances'])}")
    expect(row.locator("td").nth(2)).to_have_text(str(sum(i["inFlight"] for i in mid["instances"])))


def test_an_aborted_canary_says_aborted_where_it_stopped_and_the_rollout_stays_paused(
    ms, operator_client, page: Page, screenshot_dir
):
    seen = views_of("canary-operator-abort")
    aborted = seen[-1][1]
    site = OfflineSite(page, operator_client, full_state=lambda: as_page_state(aborted, ms))
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    panel = page.get_by_test_id("canary-panel")
    expect(page.get_by_test_id("canary-phase")).to_have_text("Aborted")
    expect(panel.locator("li[aria-current='step']")).to_contain_text("aborted here")
    expect(page.get_by_test_id("canary-message")).to_have_text(
        "aborted at step 2 of 5: every group is back on the stable revision"
    )
    expect(page.get_by_test_id("phase")).to_have_text("Paused")
    shot(page, screenshot_dir / "operator-day-canary-aborted.png")
