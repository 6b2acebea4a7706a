"""Both drivers of the simulated cluster give a pod the same life: the in-memory one (``simulate``,
the preview) on its event loop and the database one (the running product) on its ticks apply the
same pure physics, so a pod is bound, runs, gets Ready, crashes, restarts and goes at the same
simulated seconds in both."""

from __future__ import annotations

import pytest

from controller.core.ports import NotFound
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.memory.cluster import SimCluster

from .helpers import ManualClock, config, is_ready, pod

pytestmark = pytest.mark.django_db

T0 = 1_000_000.0  # the database driver's clock starts here; the event loop's at 0


def summary(p):
    if p is None:
        return "gone"
    status = p.get("status") or {}
    containers = status.get("containerStatuses") or [{}]
    return (
        bool((p.get("spec") or {}).get("nodeName")),
        status.get("phase"),
        is_ready(p),
        containers[0].get("restartCount"),
        containers[0].get("image"),
        bool(p["metadata"].get("deletionTimestamp")),
    )


def in_memory(image, seconds, actions):
    cluster = SimCluster(config(IMAGES), ms_name="demo")
    cluster.add_nodes(1, 2)
    cluster.store.create_pod(pod("p-0", image=image))
    timeline = []
    for t in range(seconds):
        cluster.loop.run_until(t)
        for do in actions.get(t, ()):
            do(cluster.store)
        timeline.append((t, summary(cluster.store.peek_pod("default", "p-0"))))
    return timeline


def in_database(image, seconds, actions):
    clock = ManualClock(T0)
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(IMAGES))
    cluster.add_node(2)
    cluster.create_pod(pod("p-0", image=image))
    timeline = []
    for t in range(seconds):
        clock.t = T0 + t
        tick(cluster)
        for do in actions.get(t, ()):
            do(cluster)
        try:
            current = cluster.get_pod("default", "p-0")
        except NotFound:
            current = None
        timeline.append((t, summary(current)))
    return timeline


IMAGES = {"engine:bad": {"crash": True}}


def set_image(image):
    def do(store):
        current = store.get_pod("default", "p-0")
        store.patch_pod(
            "default", "p-0", {"spec": {"containers": [{**current["spec"]["containers"][0], "image": image}]}}
        )

    return do


def delete(store):
    store.delete_pod("default", "p-0")


LIVES = [
    ("a healthy pod is bound, runs and gets Ready", "engine:v1", 45, {}),
    ("a crashing image loops in CrashLoopBackOff", "engine:bad", 240, {}),
    ("an in-place image change restarts the container", "engine:v1", 100, {50: [set_image("engine:v2")]}),
    ("a deleted pod terminates and goes", "engine:v1", 60, {45: [delete]}),
    ("a pod deleted while it restarts goes too", "engine:v1", 80, {40: [set_image("engine:v2")], 44: [delete]}),
]


@pytest.mark.parametrize(("case", "image", "seconds", "actions"), LIVES, ids=[life[0] for life in LIVES])
def test_both_drivers_give_a_pod_the_same_life_second_by_second(case, image, seconds, actions):
    expected = in_memory(image, seconds, actions)
    assert len({s for _, s in expected}) > 2  # the life has several stages
    assert in_database(image, seconds, actions) == expected
