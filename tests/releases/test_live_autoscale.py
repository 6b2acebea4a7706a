"""The autoscaler against the database-backed simulated cluster on a manual clock (``world``: the
release fixtures, because a recommendation needs an active release's batching for the safe
concurrency per instance), and a scale-down that drains like any delete.

The figures: default/chat runs 2 groups of one prefill and one decode instance; v1's batching is
``maxBatchSize: 8``. Simulated traffic of 16 requests/s lasting 1-3 s (2 s on average) is 32
requests in flight, half per role (no requests in flight yet: the share is by instances) -> 16 per
role / (8 x 0.8) = 2.5 -> 3 instances -> 3 groups.
"""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.models import SimTraffic
from rolloutui.models import AuditRecord
from rolloutui.services import autoscale, capacity, controls, state
from rolloutui.services.releases import deploy, records

from .conftest import converged

pytestmark = pytest.mark.django_db


def serve_v1(world, operator) -> None:
    dr, _ = records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v1", "reason": "v1"}, source="api"
    )
    deploy.deploy(operator, "default", "chat", dr.number, reason="v1 to staging", source="api")
    assert world["sim"].run(400, "chat", until=lambda: converged("chat")), "v1 did not roll out"


def replicas() -> int:
    return state.get_manifest("default", "chat")["spec"]["replicas"]


def groups() -> list[int]:
    """The ordinals of the groups that have instances."""
    return sorted({i["group"] for i in state.get_state("default", "chat")["instances"]})


def scales():
    return AuditRecord.objects.filter(action="scale").order_by("id")


def test_the_autoscaler_scales_a_modelserving_with_autoscale_on_to_the_recommendation_and_leaves_others(
    world, operator
):
    serve_v1(world, operator)
    SimTraffic.objects.create(namespace="default", name="chat", rps=16, duration_low=1, duration_high=3)
    rec = capacity.capacity("default", "chat")["recommendation"]
    assert (rec["replicas"], rec["current"]) == (3, 2), rec["reason"]

    # Off (the default): a recommendation, and nothing scaled.
    assert autoscale.run_once() == []
    assert replicas() == 2 and not scales().exists()

    controls.autoscale(operator, "default", "chat", max_replicas=5, reason="follow the load", source="api")
    (outcome,) = autoscale.run_once()
    assert (outcome["from"], outcome["replicas"]) == (2, 3), outcome["reason"]
    assert replicas() == 3
    (record,) = scales()
    assert (record.source, record.actor, record.actor_name, record.result) == ("autoscaler", None, "autoscaler", "ok")
    assert record.details["replicas"] == {"from": 2, "to": 3}
    assert record.reason.startswith("Autoscale 2 -> 3, scale up: 3 recommended, within 1..5.")
    assert "16 requests implied by the offered load" in record.reason
    figures = record.details["figures"]
    assert figures["recommendation"]["replicas"] == 3 and figures["autoscale"] == {"minReplicas": 1, "maxReplicas": 5}

    # While the new group comes up the ModelServing is not scaled again; once it serves, the
    # recommendation is met.
    (busy,) = autoscale.run_once()
    assert busy["replicas"] is None and "not" in busy["reason"]
    assert world["sim"].run(200, "chat", until=lambda: converged("chat") and len(groups()) == 3)
    (settled,) = autoscale.run_once()
    assert settled["replicas"] is None and "as wanted" in settled["reason"], settled["reason"]

    # Off again: more load changes nothing.
    controls.autoscale(operator, "default", "chat", disable=True, reason="by hand", source="api")
    SimTraffic.objects.filter(name="chat").update(rps=40)
    assert capacity.capacity("default", "chat")["recommendation"]["replicas"] > 3
    assert autoscale.run_once() == [] and replicas() == 3 and scales().count() == 1


def test_the_cooldown_holds_a_second_change_and_min_holds_a_lower_recommendation(world, operator):
    serve_v1(world, operator)
    controls.scale(operator, "default", "chat", replicas=3, reason="by hand", source="api")
    assert world["sim"].run(200, "chat", until=lambda: converged("chat") and len(groups()) == 3)
    # No traffic: 1 group recommended; min 2.
    controls.autoscale(operator, "default", "chat", min_replicas=2, max_replicas=4, reason="on", source="api")
    (held,) = autoscale.run_once()
    assert held["replicas"] is None and "cooldown" in held["reason"], held["reason"]
    (done,) = autoscale.run_once(cooldown=0)
    assert done["replicas"] == 2 and "1 recommended, raised to the minimum 2" in done["reason"]
    assert replicas() == 2


def test_a_scale_down_drains_the_groups_beyond_the_count_before_deleting_them(world, operator):
    serve_v1(world, operator)
    sim = world["sim"]
    controls.scale(operator, "default", "chat", replicas=3, reason="up", source="api")
    assert sim.run(200, "chat", until=lambda: converged("chat") and len(groups()) == 3)

    controls.scale(operator, "default", "chat", replicas=2, reason="down", source="api")
    sim.reconcile("chat")
    leaving = [
        p
        for p in sim.cluster.list_pods("default", "chat")
        if p["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == "2"
    ]
    assert leaving, "group 2 is gone before it drained"
    assert all(naming.ANNOTATION_DRAINING in (p["metadata"].get("annotations") or {}) for p in leaving), [
        p["metadata"]["name"] for p in leaving
    ]
    assert sim.run(200, "chat", until=lambda: converged("chat") and groups() == [0, 1])
    assert not [
        p
        for p in sim.cluster.list_pods("default", "chat")
        if p["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == "2"
    ]
