"""The live app's simulated traffic to an InferenceService (Redis): split by the weights KServe
wrote in its status, counted against its own SimTraffic row."""

from __future__ import annotations

import pytest

from controller.models import SimTraffic
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.objects import INFERENCESERVICE

from .helpers import ManualClock, config, run_for, state_traffic
from .test_live_kserve import STANDARD, manifest, view

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 12  # away from the broker (0), the channel layer (1), the live state (2), the traffic test (13)


def test_requests_to_a_standard_canary_follow_its_weight_and_are_credited_to_the_inferenceservice(
    state_redis, django_capture_on_commit_callbacks
):
    from controller.simcluster.kserve import controller as kserve_controller

    traffic = state_traffic(state_redis, "test-isvc-inflight")
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="operator", config=config(), traffic=traffic)
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    body = manifest(replicas=4)
    canary_predictor = {"name": "v2", **{k: v for k, v in body["spec"]["predictor"].items() if k != "minReplicas"}}
    body["spec"]["canary"] = [{"predictor": canary_predictor, "trafficPercent": 25}]
    cluster.create_object(body)
    run_for(cluster, 50)
    v = view(cluster)
    assert sorted(t["percent"] for t in v["traffic"]) == [25, 75] and v["converged"]
    SimTraffic.objects.create(
        kind=SimTraffic.KIND_INFERENCESERVICE,
        namespace="default",
        name="llm",
        rps=200,
        duration_low=60,
        duration_high=60,
    )
    run_for(cluster, 3)  # the first tick only starts the clock of the arrivals
    names = [i["pod"] for i in v["instances"]]
    busy = traffic.in_flight_counts("default", names)
    canary = sum(n for pod, n in busy.items() if pod.startswith("llm-v2-predictor-"))
    share = canary / sum(busy.values())
    assert 0.2 <= share <= 0.3, (share, busy)
    row = SimTraffic.objects.get(kind=SimTraffic.KIND_INFERENCESERVICE, name="llm")
    assert row.sent == sum(busy.values()) and row.rejected == 0
    victim = next(p for p in busy if p.startswith("llm-v2-predictor-"))
    with django_capture_on_commit_callbacks(execute=True):
        cluster.delete_pod("default", victim)
    row.refresh_from_db()
    assert row.interrupted == busy[victim]
    assert cluster.get_object(INFERENCESERVICE, "default", "llm")
