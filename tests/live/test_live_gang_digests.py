"""The live simulated cluster (database driver) follows the same rules as ``simulate``: a Volcano
gang is bound whole or not at all, with its reason in every pending pod; a retag is stored with
the cluster and only pods pulling afterwards run the new digest."""

from __future__ import annotations

import pytest

from controller.core import gang
from controller.core.ports import PODGROUP
from controller.simcluster.config import default_digest
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick

from .helpers import ManualClock, condition, config, pod

pytestmark = pytest.mark.django_db


def make(nodes: int, gpus: int) -> DatabaseCluster:
    cluster = DatabaseCluster(ManualClock(), actor="kubelet", config=config())
    for _ in range(nodes):
        cluster.add_node(gpus)
    return cluster


def run(cluster, seconds):
    end = cluster.clock.t + seconds
    while cluster.clock.t < end:
        cluster.clock.t += 1.0
        tick(cluster)


def gang_pod(name: str, group: str) -> dict:
    p = pod(name)
    p["spec"]["schedulerName"] = "volcano"
    p["metadata"]["annotations"] = {gang.ANNOTATION_GROUP_NAME: group}
    return p


def podgroup(name: str, min_member: int) -> dict:
    return {
        "apiVersion": gang.API_VERSION,
        "kind": PODGROUP,
        "metadata": {"name": name, "namespace": "default", "labels": {}},
        "spec": {"minMember": min_member},
    }


def test_a_gang_that_does_not_fit_is_not_placed_at_all_until_capacity_appears():
    cluster = make(nodes=1, gpus=5)
    cluster.create_object(podgroup("demo-0", 8))
    for i in range(8):
        cluster.create_pod(gang_pod(f"demo-0-p{i}", "demo-0"))
    run(cluster, 2)
    pods = [cluster.get_pod("default", f"demo-0-p{i}") for i in range(8)]
    assert all(not p["spec"].get("nodeName") for p in pods)
    for p in pods:
        cond = condition(p, "PodScheduled")
        assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
        assert cond["message"].startswith("gang of 8 pods cannot be placed: 5 GPUs free")
    cluster.add_node(3)
    run(cluster, 1)
    assert all(cluster.get_pod("default", f"demo-0-p{i}")["spec"].get("nodeName") for i in range(8))


def test_a_retag_is_stored_and_reaches_only_pods_pulled_after_it():
    cluster = DatabaseCluster(ManualClock(), actor="kubelet")  # the stored config, as the live app
    cluster.add_node(4)
    cluster.create_pod(pod("before"))
    run(cluster, 10)
    moved = cluster.retag("engine:v1")
    assert moved == default_digest("engine:v1#1")
    assert DatabaseCluster(ManualClock()).config.digest("engine:v1") == moved  # another process sees it
    cluster.create_pod(pod("after"))
    run(cluster, 10)
    image_ids = {
        n: cluster.get_pod("default", n)["status"]["containerStatuses"][0]["imageID"] for n in ("before", "after")
    }
    assert image_ids == {"before": "engine@" + default_digest("engine:v1"), "after": "engine@" + moved}
