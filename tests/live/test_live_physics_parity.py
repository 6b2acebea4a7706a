"""Both drivers of the simulated cluster give a pod the same life: the in-memory one (``simulate``,
the preview) on its event loop and the database one (the running product) on its ticks apply the
same pure physics, so a pod is bound, runs, gets Ready, crashes, restarts and goes at the same
simulated seconds in both."""

from __future__ import annotations

import pytest

from controller.core.ports import NotFound
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.memory.clock import EventLoop, VirtualClock
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


def copied_into_memory(image, seconds, actions, copy_times):
    """The database driver's life of the pod, second by second, and the lives of copies of it made
    into in-memory clusters at each of ``copy_times`` (``SimCluster.restore``, as the preview
    copies a live ModelServing), each from its copy time on: ``(live, {copy time: copied})``."""
    clock = ManualClock(T0)
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(IMAGES))
    cluster.add_node(2)
    cluster.create_pod(pod("p-0", image=image))
    copies: dict[int, SimCluster] = {}
    live, copied = [], {c: [] for c in copy_times}
    for t in range(seconds):
        clock.t = T0 + t
        tick(cluster)
        if t in copied:
            copies[t] = SimCluster(config(IMAGES), ms_name="demo", loop=EventLoop(VirtualClock(T0 + t)))
            copies[t].add_node("node-0", 2)
            copies[t].restore(modelservings=[], revisions=[], pods=cluster.list_pods("default", "demo"))
        for copy in copies.values():
            copy.loop.run_until(T0 + t)
        for do in actions.get(t, ()):
            do(cluster)
            for copy in copies.values():
                do(copy.store)
        try:
            current = cluster.get_pod("default", "p-0")
        except NotFound:
            current = None
        live.append((t, summary(current)))
        for c, copy in copies.items():
            copied[c].append((t, summary(copy.store.peek_pod("default", "p-0"))))
    return live, copied


@pytest.mark.parametrize(("case", "image", "seconds", "actions"), LIVES, ids=[life[0] for life in LIVES])
def test_a_pod_copied_out_of_the_database_at_any_second_lives_on_in_memory_as_it_does_there(
    case, image, seconds, actions
):
    """Pending, bound, pulling, loading, Ready, crashing, restarting in place, terminating: the copy
    takes the pod up where it is (its kubelet state and its scheduling delay are in the pod)."""
    copy_times = range(0, min(seconds, 60), 3)
    live, copied = copied_into_memory(image, seconds, actions, copy_times)
    for c in copy_times:
        assert copied[c] == live[c:], f"copied at second {c}"
