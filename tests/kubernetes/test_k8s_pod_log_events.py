"""The Kubernetes adapter's reads for the topology cell's pod panel: a pod's Events (by
involvedObject) and the tail of its log (the API's ``log`` endpoint: tailLines, limitBytes,
timestamps), against the API server double; and the events of every namespace for the Events page."""

from __future__ import annotations

import pytest
from test_k8s_cluster_adapter import NS, manifest, pod

from controller.core.ports import NotFound
from controller.k8s import KubernetesCluster
from controller.k8s import cluster as k8s_cluster


@pytest.fixture
def cluster(api_client) -> KubernetesCluster:
    return KubernetesCluster(api_client)


def _event(name: str, involved: str, reason: str, stamp: str, kind: str = "Pod", type_: str = "Normal") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "involvedObject": {"kind": kind, "name": involved, "namespace": NS},
        "reason": reason,
        "message": f"{reason} of {involved}",
        "type": type_,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def test_a_pods_events_are_those_whose_involved_object_is_the_pod_oldest_first(cluster, api_client):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0"))
    cluster.create_pod(pod("chat-1"))
    core = cluster.core
    core.create_namespaced_event(NS, _event("e2", "chat-0", "Started", "2026-01-01T00:00:09Z"))
    core.create_namespaced_event(NS, _event("e1", "chat-0", "Scheduled", "2026-01-01T00:00:01Z"))
    core.create_namespaced_event(NS, _event("e3", "chat-1", "Killing", "2026-01-01T00:00:05Z"))
    events = cluster.pod_events(NS, "chat-0")
    assert [e["reason"] for e in events] == ["Scheduled", "Started"]
    with pytest.raises(NotFound):
        cluster.pod_events(NS, "nope")


def test_a_pods_log_is_its_tail_with_timestamps_bounded_in_lines(cluster, apiserver):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0"))
    lines = [(f"2026-01-01T00:00:{i:02d}.123456789Z", f"line {i}") for i in range(50)]
    apiserver.call(lambda: apiserver.emu.pod_logs.__setitem__((NS, "chat-0"), lines))
    got = cluster.pod_log(NS, "chat-0", tail=3)
    assert [g["line"] for g in got] == ["line 47", "line 48", "line 49"]
    assert got[0]["time"] == "2026-01-01T00:00:47.123456789Z" and got[0]["t"] == pytest.approx(1767225647.123456)
    asked = [c for c in apiserver.emu.calls if c[1].endswith("/pods/chat-0/log")][-1][2]
    assert asked["tailLines"] == "3" and asked["timestamps"] == "true"
    assert asked["limitBytes"] == str(k8s_cluster.POD_LOG_MAX_BYTES)
    assert len(cluster.pod_log(NS, "chat-0", tail=10**6)) == 50  # asked for at most POD_LOG_MAX_LINES
    with pytest.raises(NotFound):
        cluster.pod_log(NS, "nope")


def test_the_events_about_workloads_of_every_namespace_are_listed_newest_first(cluster):
    core = cluster.core
    core.create_namespaced_event(NS, _event("a", "chat", "RolloutStarted", "2026-01-01T00:00:01Z", kind="ModelServing"))
    core.create_namespaced_event(
        NS, _event("b", "chat", "RolloutDegraded", "2026-01-01T00:00:07Z", kind="ModelServing", type_="Warning")
    )
    core.create_namespaced_event(NS, _event("c", "chat-0", "BackOff", "2026-01-01T00:00:05Z", type_="Warning"))
    core.create_namespaced_event(NS, _event("d", "chat-0", "Pulled", "2026-01-01T00:00:06Z"))
    events = cluster.list_events(limit=10)
    # The workloads' events and the pods' warnings (not a pod's every Normal event), newest first.
    assert [(e["reason"], e["kind"], e["type"]) for e in events] == [
        ("RolloutDegraded", "ModelServing", "Warning"),
        ("BackOff", "Pod", "Warning"),
        ("RolloutStarted", "ModelServing", "Normal"),
    ]
