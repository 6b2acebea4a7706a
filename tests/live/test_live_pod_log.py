"""The live simulated cluster's pod log: the requests a pod's engine answered (kept per pod in Redis,
bounded) and those in flight appear in its log, after its start and load; the controller's events
are kept for the Events page."""

from __future__ import annotations

import pytest

from controller.models import SimTraffic
from controller.simcluster.database import traffic as traffic_module
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.traffic import RedisTraffic

from .helpers import ManualClock, config, is_ready, pod, run_for, state_traffic

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 9  # away from the broker (0), the channel layer (1), the live state (2) and the other tests


def test_a_serving_pods_log_shows_the_requests_it_answered_bounded_per_pod(state_redis):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(), traffic=traffic)
    cluster.add_node(4)
    entry = "g-0-serve-0-0"
    cluster.create_pod(pod(entry))
    run_for(cluster, 40)
    assert is_ready(cluster.get_pod("default", entry))
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=1, duration_high=2)
    run_for(cluster, 10)
    served = traffic.requests_of("default", entry)
    # ~150 answered and a few dozen in flight: the newest 50 of them, in the order of the log.
    assert len(served) == traffic_module.LOG_KEEP
    assert {r["finished"] is None for r in served} == {True, False}
    assert [r["finished"] or r["started"] for r in served] == sorted(r["finished"] or r["started"] for r in served)
    assert state_redis.llen(traffic.log_key("default", entry)) == traffic_module.LOG_KEEP
    lines = [line["line"] for line in cluster.pod_log("default", entry, tail=1000)]
    assert lines[0].endswith("Starting the model server, image engine:v1")
    assert any("application startup complete" in line for line in lines)
    assert sum('"POST /v1/completions HTTP/1.1"' in line for line in lines) == traffic_module.LOG_KEEP
    assert any('HTTP/1.1" 200 OK, first token after' in line for line in lines)
    assert len(cluster.pod_log("default", entry, tail=5)) == 5


def test_the_controllers_events_are_kept_newest_first_and_bounded(state_redis, monkeypatch):
    traffic = state_traffic(state_redis)
    monkeypatch.setattr(RedisTraffic, "EVENTS_KEPT", 3)
    cluster = DatabaseCluster(ManualClock(), actor="controller", config=config(), traffic=traffic)
    for i in range(5):
        cluster.record_event("default", "chat", reason=f"R{i}", message=f"m{i}")
    assert [e["reason"] for e in cluster.list_events(limit=10)] == ["R4", "R3", "R2"]
    assert cluster.list_events(limit=1)[0]["kind"] == "ModelServing"


def test_a_crashing_pod_puts_a_back_off_warning_naming_its_workload_on_the_events_page(state_redis, operator_client):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="kubelet", config=config({"engine:bad": {"crash": True}}), traffic=traffic)
    cluster.add_node(4)
    cluster.create_pod(pod("bad-0", ms="chat", image="engine:bad"))
    run_for(cluster, 80)  # crashes at 38 (pull 5 + start 2 + load), again after a 10 s back-off
    warnings = [e for e in cluster.list_events() if e["reason"] == "BackOff"]
    assert [(e["kind"], e["name"], e["workload"], e["type"]) for e in warnings][-1] == (
        "Pod",
        "bad-0",
        "chat",
        "Warning",
    )
    assert "exited with code 1, 1 restart" in warnings[-1]["message"]
    assert len(warnings) == physics_restarts(cluster.get_pod("default", "bad-0"))
    # On the Events page's feed: under its ModelServing, from the kubelet.
    item = operator_client.get("/api/events/", {"type": "event", "workload": "default/chat"}).json()[0]
    assert (item["kind"], item["name"], item["who"], item["level"]) == ("ModelServing", "chat", "kubelet", "Warning")
    assert item["message"].startswith("pod bad-0: Back-off restarting failed container engine")


def physics_restarts(pod_obj) -> int:
    from controller.simcluster import physics

    return physics.kubelet_state(pod_obj)["containers"][0]["restarts"]
