"""The service layer: every control is permission-checked, reasoned, audited and reconciled."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.ports import NotFound
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database.store import DatabaseCluster
from rolloutui.models import AuditRecord
from rolloutui.services import controls, simulation, state, streaming

from .helpers import manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def small():
    cluster = DatabaseCluster(actor="test")
    cluster.add_node(8)
    cluster.create_modelserving(manifest())
    run_reconcile("default", "small")  # stores revision 1
    return cluster


def test_every_control_writes_an_audit_record_with_who_why_and_revisions(operator, small):
    records = [
        controls.pause(operator, "default", "small", reason="hold", source="page"),
        controls.resume(operator, "default", "small", reason="go", source="api"),
        controls.set_image(operator, "default", "small", role="serve", image="engine:v2", reason="bump", source="cli"),
    ]
    run_reconcile("default", "small")  # stores revision 2
    records.append(controls.promote(operator, "default", "small", full=True, reason="all", source="api"))
    records.append(controls.rollback(operator, "default", "small", to_revision=1, reason="bad build", source="page"))
    assert [r.action for r in records] == ["pause", "resume", "set_image", "promote", "rollback"]
    assert all(r.result == "ok" and r.actor == operator and r.actor_name == "operator" for r in records)
    assert [r.source for r in records] == ["page", "api", "cli", "api", "page"]
    assert (records[0].from_revision, records[0].to_revision) == ("1", "1")
    assert (records[2].from_revision, records[2].to_revision) == ("1", "2")
    assert records[2].details["toRevision"]["hash"] != records[2].details["fromRevision"]["hash"]
    assert (records[4].from_revision, records[4].to_revision) == ("2", "1")
    assert AuditRecord.objects.count() == 5


def test_a_control_sets_the_change_cause_that_the_new_revision_carries(operator, small):
    controls.set_image(operator, "default", "small", role="serve", image="engine:v2", reason="new engine", source="api")
    cause = small.get_modelserving("default", "small")["metadata"]["annotations"][naming.ANNOTATION_CHANGE_CAUSE]
    assert cause == "operator via api: set_image: new engine"
    run_reconcile("default", "small")
    newest = state.list_revisions("default", "small")[-1]
    assert newest["number"] == 2 and newest["changeCause"] == cause and newest["update"]


def test_a_viewer_is_denied_and_the_attempt_is_audited(viewer, small):
    with pytest.raises(controls.ControlDenied):
        controls.pause(viewer, "default", "small", reason="try", source="page")
    record = AuditRecord.objects.get()
    assert record.result == "error" and record.actor == viewer and "ControlDenied" in record.error
    assert small.get_modelserving("default", "small")["spec"].get("paused") is not True


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_a_blank_reason_is_refused_naming_the_field(operator, small, reason):
    with pytest.raises(ControlError) as err:
        controls.pause(operator, "default", "small", reason=reason, source="api")
    assert err.value.field == "reason"
    assert AuditRecord.objects.get().result == "error"


def test_an_unknown_modelserving_is_not_found_and_audited(operator, small):
    with pytest.raises(NotFound):
        controls.pause(operator, "default", "nope", reason="x", source="api")
    assert AuditRecord.objects.get().name == "nope"


def test_a_control_that_does_not_apply_names_the_field(operator, small):
    with pytest.raises(ControlError) as err:
        controls.set_image(operator, "default", "small", role="nope", image="x:1", reason="x", source="api")
    assert err.value.field == "role"
    with pytest.raises(ControlError) as err:
        controls.rollback(operator, "default", "small", to_revision=9, reason="x", source="api")
    assert err.value.field == "toRevision"


def test_rollback_restores_the_template_and_keeps_the_replicas(operator, small):
    controls.set_image(operator, "default", "small", role="serve", image="engine:v2", reason="bump", source="api")
    run_reconcile("default", "small")
    small.patch_modelserving("default", "small", {"spec": {"replicas": 3}})
    controls.rollback(operator, "default", "small", to_revision=1, reason="bad build", source="api")
    spec = small.get_modelserving("default", "small")["spec"]
    assert spec["replicas"] == 3
    assert spec["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["image"] == "engine:v1"


def test_a_control_that_loses_a_race_rereads_and_keeps_the_other_writers_change(operator, small, monkeypatch):
    from controller.core import controls as core

    real = core.pause
    calls = []

    def racing_pause(ms):
        calls.append(1)
        if len(calls) == 1:  # someone else writes between our read and our write
            small.patch_modelserving("default", "small", {"spec": {"replicas": 5}})
        return real(ms)

    monkeypatch.setattr(core, "pause", racing_pause)
    controls.pause(operator, "default", "small", reason="hold", source="api")
    spec = small.get_modelserving("default", "small")["spec"]
    assert len(calls) == 2 and spec["paused"] is True and spec["replicas"] == 5


def test_list_summaries_reads_status_fields_and_filters(small):
    run_reconcile("default", "small")
    DatabaseCluster(actor="test").create_modelserving(manifest(name="other", replicas=1))
    rows = state.list_summaries()
    assert [(r["namespace"], r["name"]) for r in rows] == [("default", "other"), ("default", "small")]
    row = rows[1]
    assert (
        row["desired"] == 2
        and row["currentRevision"] == row["updateRevision"]
        and row["strategyType"] == "ServingGroupRollingUpdate"
    )
    assert [r["name"] for r in state.list_summaries(search="SMA")] == ["small"]
    assert [r["name"] for r in state.list_summaries(phase="Pending")] == ["other"]


def test_the_state_view_and_the_revision_diff_show_runtime_fields_apart(operator, small):
    view = state.get_state("default", "small")
    assert view["name"] == "small" and len(view["instances"]) == 2
    controls.set_image(operator, "default", "small", role="serve", image="engine:v2", reason="bump", source="api")
    run_reconcile("default", "small")
    d = state.revision_diff("default", "small", 1, 2)
    assert [c["path"] for c in d["changes"]] == ["roles[serve].entryTemplate.spec.containers[engine].image"]
    assert d["runtime"]["replicas"] == 2 and d["runtime"]["roles"]["serve"]["replicas"] == 1
    with pytest.raises(ControlError) as err:
        state.revision_diff("default", "small", 1, 7)
    assert err.value.field == "to"


def test_faults_are_audited_and_act_on_the_simulated_cluster(operator, small):
    record = simulation.add_node(operator, gpus=4, reason="more room", source="page")
    assert record.action == "add_node" and record.details["node"] == "node-1"
    nodes = simulation.list_nodes()
    assert [(n["name"], n["gpus"], n["failed"]) for n in nodes] == [("node-0", 8, False), ("node-1", 4, False)]
    simulation.fail_node(operator, "node-1", reason="hardware", source="page")
    assert simulation.list_nodes()[1]["failed"] is True
    with pytest.raises(ControlError) as err:
        simulation.fail_node(operator, "node-9", reason="x", source="page")
    assert err.value.field == "node"
    pod_name = small.list_pods("default", "small")[0]["metadata"]["name"]
    simulation.kill_pod(operator, "default", pod_name, reason="chaos", source="api")
    assert small.get_pod("default", pod_name)["status"]["phase"] == "Failed"
    assert [r.action for r in AuditRecord.objects.order_by("id")] == ["add_node", "fail_node", "fail_node", "kill_pod"]


def test_a_preview_of_a_change_that_would_make_the_modelserving_invalid_names_the_field(small):
    # The timeline itself: tests/live/test_live_preview.py.
    with pytest.raises(ControlError) as err:
        simulation.preview("default", "small", {"spec": {"replicas": -1}})
    assert err.value.field.startswith("patch.spec.replicas")


def test_publish_state_never_raises_when_the_channel_layer_fails(monkeypatch):
    import channels.layers

    def broken(*a, **k):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(channels.layers, "get_channel_layer", broken)
    streaming.publish_state("default", "small", {"x": 1})  # logs, does not raise
    assert streaming.group_name("default", "demo") == "ms.default.demo"
    assert len(streaming.group_name("ns", "x" * 200)) < 100


def test_load_demo_fills_an_empty_cluster_once():
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "created ModelServing default/demo" in out.getvalue()
    again = io.StringIO()
    call_command("load_demo", stdout=again)
    assert "nothing to do" in again.getvalue()
    demo = DatabaseCluster().get_modelserving("default", "demo")
    assert demo["spec"]["replicas"] == 4
    assert [r["name"] for r in demo["spec"]["template"]["roles"]] == ["prefill", "decode"]
    assert len(simulation.list_nodes()) == 6


def test_the_cli_calls_the_same_service_with_source_cli(operator, viewer, small):
    out = io.StringIO()
    call_command("rollout", "pause", "default/small", "--reason", "night freeze", "--user", "operator", stdout=out)
    assert "pause default/small: ok" in out.getvalue()
    record = AuditRecord.objects.get()
    assert record.source == "cli" and record.reason == "night freeze"
    with pytest.raises(CommandError, match="permission denied"):
        call_command("rollout", "resume", "default/small", "--reason", "x", "--user", "viewer")
    with pytest.raises(CommandError, match="user: no user named 'ghost'"):
        call_command("rollout", "resume", "default/small", "--reason", "x", "--user", "ghost")
    with pytest.raises(CommandError, match="reason: "):
        call_command("rollout", "resume", "default/small", "--reason", " ", "--user", "operator")
    with pytest.raises(CommandError, match="target: expected NAMESPACE/NAME"):
        call_command("rollout", "resume", "small", "--reason", "x", "--user", "operator")


def test_traffic_totals_are_reported_per_modelserving(small):
    from controller.models import SimTraffic

    assert simulation.traffic("default", "small") is None
    SimTraffic.objects.create(namespace="default", name="small", rps=3, sent=10, completed=7, interrupted=1, rejected=2)
    out = simulation.traffic("default", "small")
    assert (out["rps"], out["sent"], out["completed"], out["interrupted"], out["rejected"]) == (3, 10, 7, 1, 2)


def test_a_pass_superseded_by_a_spec_change_publishes_no_state(operator, small, monkeypatch):
    """The pass that saw the spec move on built no view: it must not send the page an empty state
    (the page read ``state.spec.paused`` of one) nor sample 0 % progress; it runs again instead."""
    from controller.core import reconcile as core_reconcile
    from controller.runtime import reconciler

    published, sampled, requeued = [], [], []
    monkeypatch.setattr(reconciler, "publish_state", lambda ns, name, view: published.append(view))
    monkeypatch.setattr(reconciler, "sample_progress", lambda *a, **k: sampled.append(a))
    monkeypatch.setattr(reconciler, "_requeue", lambda client, ns, name, seconds: requeued.append(seconds))
    monkeypatch.setattr(core_reconcile, "_spec_moved_on", lambda *a: True)
    controls.set_image(operator, "default", "small", role="serve", image="engine:v2", reason="bump", source="api")
    outcome = run_reconcile("default", "small")
    assert outcome["superseded"] is True
    assert published == [] and sampled == []
    assert len(requeued) == 1
