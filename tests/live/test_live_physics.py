"""The live simulated cluster's physics: ticks on the simulated clock, state only in the database."""

from __future__ import annotations

import pytest

from controller.core.ports import NotFound
from controller.simcluster import physics
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick

from .helpers import ManualClock, condition, config, is_ready, pod

pytestmark = pytest.mark.django_db


def make(images=None, nodes=1, gpus=2):
    cluster = DatabaseCluster(ManualClock(), actor="kubelet", config=config(images))
    for _ in range(nodes):
        cluster.add_node(gpus)
    return cluster


def run(cluster, seconds, step=1.0):
    end = cluster.clock.t + seconds
    while cluster.clock.t < end:
        cluster.clock.t += step
        tick(cluster)


def test_ticks_move_a_pod_through_schedule_pull_start_and_load_to_ready():
    # Timing {schedule: 1, pull: 5, start: 2, load: 30}: bound at +1, running at +8, Ready at +38.
    cluster = make()
    cluster.create_pod(pod("p-0"))
    run(cluster, 1)
    bound = cluster.get_pod("default", "p-0")
    assert bound["spec"]["nodeName"] == "node-0" and bound["status"]["podIP"].startswith("10.")
    run(cluster, 7)
    running = cluster.get_pod("default", "p-0")
    assert running["status"]["phase"] == "Running" and not is_ready(running)
    assert "@sha256:" in running["status"]["containerStatuses"][0]["imageID"]
    run(cluster, 29)
    assert not is_ready(cluster.get_pod("default", "p-0"))
    run(cluster, 1)
    assert is_ready(cluster.get_pod("default", "p-0"))


def test_a_tick_after_an_outage_catches_up_on_every_due_step():
    cluster = make()
    cluster.create_pod(pod("p-0"))
    run(cluster, 1)
    cluster.clock.t += 300  # nothing ran for five minutes (every process was down)
    tick(cluster)
    assert is_ready(cluster.get_pod("default", "p-0"))


def test_a_deleted_pod_terminates_and_is_removed_freeing_its_gpus():
    cluster = make(gpus=1)
    cluster.create_pod(pod("p-0"))
    cluster.create_pod(pod("p-1"))
    run(cluster, 2)
    waiting = cluster.get_pod("default", "p-1")
    scheduled = condition(waiting, "PodScheduled")
    assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
    assert "0/1 nodes are available: 1 Insufficient nvidia.com/gpu" in scheduled["message"]
    cluster.delete_pod("default", "p-0")
    assert cluster.get_pod("default", "p-0")["metadata"]["deletionTimestamp"]
    run(cluster, 2)
    assert cluster.get_pod("default", "p-0")  # terminate takes 3 s
    run(cluster, 1)
    with pytest.raises(NotFound):
        cluster.get_pod("default", "p-0")
    run(cluster, 1)
    assert cluster.get_pod("default", "p-1")["spec"]["nodeName"] == "node-0"


def test_a_crashing_image_never_becomes_ready_and_backs_off():
    cluster = make(images={"engine:bad": {"crash": True}})
    cluster.create_pod(pod("p-0", image="engine:bad"))
    run(cluster, 40)
    crashed = cluster.get_pod("default", "p-0")
    status = crashed["status"]["containerStatuses"][0]
    assert status["restartCount"] == 1 and status["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}
    run(cluster, 200)
    assert not is_ready(cluster.get_pod("default", "p-0"))
    assert cluster.get_pod("default", "p-0")["status"]["containerStatuses"][0]["restartCount"] >= 3


def test_an_in_place_image_patch_restarts_the_container_and_keeps_uid_node_and_ip():
    cluster = make()
    cluster.create_pod(pod("p-0"))
    run(cluster, 40)
    before = cluster.get_pod("default", "p-0")
    assert is_ready(before)
    cluster.patch_pod(
        "default", "p-0", {"spec": {"containers": [{**before["spec"]["containers"][0], "image": "engine:v2"}]}}
    )
    restarting = cluster.get_pod("default", "p-0")
    assert not is_ready(restarting)
    assert restarting["status"]["containerStatuses"][0]["restartCount"] == 1
    run(cluster, 38)
    after = cluster.get_pod("default", "p-0")
    assert is_ready(after)
    assert after["status"]["containerStatuses"][0]["image"] == "engine:v2"
    assert after["status"]["containerStatuses"][0]["imageID"] != before["status"]["containerStatuses"][0]["imageID"]
    for key in ("uid",):
        assert after["metadata"][key] == before["metadata"][key]
    assert after["spec"]["nodeName"] == before["spec"]["nodeName"]
    assert after["status"]["podIP"] == before["status"]["podIP"]


def test_a_failed_node_fails_and_removes_its_pods_and_schedules_nothing():
    cluster = make(nodes=2, gpus=1)
    cluster.create_pod(pod("p-0"))
    run(cluster, 2)
    node = cluster.get_pod("default", "p-0")["spec"]["nodeName"]
    assert cluster.fail_node(node) == ["p-0"]
    with pytest.raises(NotFound):
        cluster.get_pod("default", "p-0")
    assert [n.name for n in cluster.list_nodes()] == [n for n in ("node-0", "node-1") if n != node]


def test_the_kubelet_state_survives_in_the_pod_annotations():
    cluster = make()
    cluster.create_pod(pod("p-0"))
    run(cluster, 1)
    state = physics.kubelet_state(cluster.get_pod("default", "p-0"))
    assert state["phase"] == physics.RUNNING and physics.next_at(state) == pytest.approx(cluster.clock.t + 7)
    # A brand-new cluster object (a restarted process) continues from the database alone.
    fresh = DatabaseCluster(cluster.clock, actor="kubelet", config=config())
    cluster.clock.t += 37
    tick(fresh)
    assert is_ready(fresh.get_pod("default", "p-0"))


def test_pods_written_with_the_previous_kubelet_state_keep_going_after_the_upgrade():
    import importlib
    import json

    upgrade = importlib.import_module("controller.migrations.0002_kubelet_state_per_container")
    cluster = make()
    cluster.create_pod(pod("p-0"))
    run(cluster, 1)
    bound = cluster.get_pod("default", "p-0")
    # The previous shape: one stage for the whole pod, loading since t+8, Ready due at t+38.
    t = cluster.clock.t
    legacy = {"stage": "loading", "at": t + 37, "attempt": 1, "running": {"engine": "engine:v1"}, "restarts": {}}
    state = upgrade.convert(legacy, bound)
    assert physics.next_at(state) == t + 37
    assert json.loads(json.dumps(state)) == state
    # The migration rewrites the stored pods; the next tick continues from there.
    from django.apps import apps

    cluster.update_pod("default", "p-0", lambda old: {**old, "metadata": legacy_metadata(old, legacy)})
    upgrade.forwards(apps, None)
    cluster.clock.t = t + 37
    tick(cluster)
    assert is_ready(cluster.get_pod("default", "p-0"))


def legacy_metadata(pod, state):
    import json

    annotations = {**pod["metadata"].get("annotations", {}), physics.ANNOTATION_KUBELET: json.dumps(state)}
    return {**pod["metadata"], "annotations": annotations}
