"""Physics of the simulated cluster, with hand-made pods (no controller)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_helpers import Span, Traffic, condition, is_ready, make_cluster, make_pod

from controller.core import naming
from controller.core.ports import Conflict
from controller.simcluster.objects import Invalid
from controller.simcluster.physics import FreeGpus, image_id, place


def test_a_pod_goes_through_schedule_pull_start_load_and_becomes_ready_at_the_summed_time():
    c = make_cluster()
    c.store.create_pod(make_pod("p0"))
    # schedule 1 + pull 5 + start 2 + load 30 = 38 s.
    c.loop.run_until(37.9)
    pod = c.store.get_pod("default", "p0")
    assert pod["spec"]["nodeName"] == "node-0"
    assert pod["status"]["phase"] == "Running" and not is_ready(pod)
    c.loop.run_until(38)
    pod = c.store.get_pod("default", "p0")
    assert is_ready(pod)
    status = pod["status"]["containerStatuses"][0]
    assert status["imageID"] == image_id("engine:v1") and status["imageID"].startswith("engine@sha256:")
    assert status["ready"] and status["restartCount"] == 0 and "running" in status["state"]
    assert pod["status"]["podIP"] and pod["status"]["hostIP"] == "10.0.0.1"


def test_the_scheduler_leaves_pods_that_fit_nowhere_pending_with_an_unschedulable_reason():
    c = make_cluster(nodes=3, gpus=2)
    for i in range(3):
        c.store.create_pod(make_pod(f"big{i}", gpus=2))
    c.store.create_pod(make_pod("extra", gpus=1))
    c.loop.run_until(5)
    pod = c.store.get_pod("default", "extra")
    assert "nodeName" not in pod["spec"] and pod["status"]["phase"] == "Pending"
    cond = condition(pod, "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu")


def test_placement_spreads_pods_over_the_least_allocated_nodes():
    c = make_cluster(nodes=3, gpus=4)
    for i in range(3):
        c.store.create_pod(make_pod(f"p{i}"))
    c.loop.run_until(2)
    assert [c.store.get_pod("default", f"p{i}")["spec"]["nodeName"] for i in range(3)] == ["node-0", "node-1", "node-2"]


def test_termination_frees_the_gpus_only_after_the_terminate_time_and_then_places_the_waiting_pod():
    c = make_cluster(nodes=1, gpus=1)
    c.store.create_pod(make_pod("old"))
    c.loop.run_until(40)
    c.store.create_pod(make_pod("new"))
    c.loop.run_until(50)
    assert condition(c.store.get_pod("default", "new"), "PodScheduled")["reason"] == "Unschedulable"
    c.store.delete_pod("default", "old")  # t=50, terminate 3 s
    old = c.store.get_pod("default", "old")
    assert old["metadata"]["deletionTimestamp"] and not is_ready(old)
    with pytest.raises(Conflict):  # the name stays taken while it terminates
        c.store.create_pod(make_pod("old"))
    c.loop.run_until(52.9)
    assert c.scheduler.free() == {"node-0": 0}
    assert "nodeName" not in c.store.get_pod("default", "new")["spec"]
    c.loop.run_until(53)
    assert c.store.peek_pod("default", "old") is None
    assert c.store.get_pod("default", "new")["spec"]["nodeName"] == "node-0"
    # Bound at 53 (the retry needs no new schedule delay): 53 + 5 + 2 + 30 = 90.
    c.loop.run_until(90)
    assert is_ready(c.store.get_pod("default", "new"))


def test_a_crashing_image_never_becomes_ready_and_counts_restarts_in_crash_loop_backoff():
    c = make_cluster(images={"engine:bad": {"crash": True}})
    c.store.create_pod(make_pod("p", image="engine:bad"))
    c.loop.run_until(600)
    pod = c.store.get_pod("default", "p")
    st = pod["status"]["containerStatuses"][0]
    assert not is_ready(pod) and not st["ready"]
    # Crashes at 38, 38+10+2+30=80, 80+20+32=132, 132+40+32=204, 204+80+32=316, 316+160+32=508.
    assert st["restartCount"] == 6
    # At 600 it waits out the 320 s back-off after the sixth crash (capped at 300 s).
    assert st["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}


def test_an_image_load_override_changes_only_that_images_load_time():
    c = make_cluster(images={"engine:slow": {"load": Span.fixed(120)}})
    c.store.create_pod(make_pod("slow", image="engine:slow"))
    c.store.create_pod(make_pod("fast"))
    c.loop.run_until(38)
    assert is_ready(c.store.get_pod("default", "fast")) and not is_ready(c.store.get_pod("default", "slow"))
    c.loop.run_until(128)
    assert is_ready(c.store.get_pod("default", "slow"))


def test_an_in_place_image_patch_keeps_uid_node_and_ip_and_bumps_restart_count_and_image_id():
    c = make_cluster()
    c.store.create_pod(make_pod("p"))
    c.loop.run_until(40)
    before = c.store.get_pod("default", "p")
    c.store.patch_pod(
        "default", "p", {"spec": {"containers": [{**before["spec"]["containers"][0], "image": "engine:v2"}]}}
    )
    c.loop.run_until(41)
    during = c.store.get_pod("default", "p")
    assert not is_ready(during)
    c.loop.run_until(40 + 5 + 2 + 30)
    after = c.store.get_pod("default", "p")
    assert is_ready(after)
    for key in ("uid",):
        assert after["metadata"][key] == before["metadata"][key]
    assert after["spec"]["nodeName"] == before["spec"]["nodeName"]
    assert after["status"]["podIP"] == before["status"]["podIP"]
    st = after["status"]["containerStatuses"][0]
    assert st["restartCount"] == 1 and st["image"] == "engine:v2" and st["imageID"] == image_id("engine:v2")


def test_the_api_refuses_pod_spec_changes_other_than_images():
    c = make_cluster()
    c.store.create_pod(make_pod("p"))
    c.loop.run_until(40)
    pod = c.store.get_pod("default", "p")
    with pytest.raises(Invalid):
        c.store.patch_pod(
            "default",
            "p",
            {"spec": {"containers": [{**pod["spec"]["containers"][0], "env": [{"name": "A", "value": "1"}]}]}},
        )


def test_a_pod_with_a_readiness_gate_is_ready_only_when_the_gate_condition_is_true():
    c = make_cluster()
    c.store.create_pod(make_pod("p", gates=[naming.CONDITION_INPLACE_READY]))
    c.loop.run_until(40)
    pod = c.store.get_pod("default", "p")
    assert condition(pod, "ContainersReady")["status"] == "True" and not is_ready(pod)
    c.store.set_pod_condition("default", "p", {"type": naming.CONDITION_INPLACE_READY, "status": "True"})
    c.loop.run_until(40.001)
    assert is_ready(c.store.get_pod("default", "p"))
    c.store.set_pod_condition("default", "p", {"type": naming.CONDITION_INPLACE_READY, "status": "False"})
    c.loop.run_until(40.002)
    assert not is_ready(c.store.get_pod("default", "p"))


def test_a_failed_node_takes_its_pods_and_capacity_away():
    c = make_cluster(nodes=2, gpus=1)
    c.store.create_pod(make_pod("a"))
    c.store.create_pod(make_pod("b"))
    c.loop.run_until(40)
    node = c.store.get_pod("default", "a")["spec"]["nodeName"]
    assert c.fail_node(node) == ["a"]
    assert c.store.peek_pod("default", "a") is None
    assert [n["metadata"]["name"] for n in c.store.list_nodes()] == ["node-1"]
    c.store.create_pod(make_pod("a"))
    c.loop.run_until(50)
    assert condition(c.store.get_pod("default", "a"), "PodScheduled")["reason"] == "Unschedulable"
    c.add_nodes(1, 1)
    c.loop.run_until(51)
    assert c.store.get_pod("default", "a")["spec"]["nodeName"] == "node-2"


def test_the_router_never_sends_a_request_to_a_draining_pod():
    c = make_cluster(nodes=1, gpus=2, traffic=Traffic(rps=5, duration=Span.fixed(1)))
    c.store.create_pod(make_pod("p0"))
    c.store.create_pod(make_pod("p1"))
    c.loop.run_until(40)
    c.store.patch_pod("default", "p1", {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: "40"}}})
    c.router.start()
    c.loop.run_until(100)
    reqs = c.router.requests
    assert len(reqs) > 100
    assert {r.pod for r in reqs} == {"p0"}


def test_the_router_prefers_the_least_busy_pod_and_only_entry_pods():
    c = make_cluster(nodes=1, gpus=3)
    c.store.create_pod(make_pod("e0"))
    c.store.create_pod(make_pod("e1"))
    c.store.create_pod(make_pod("w", entry=False))
    c.loop.run_until(40)
    pods = [c.router.route(10).pod for _ in range(4)]
    assert pods == ["e0", "e1", "e0", "e1"]
    assert c.router.in_flight("default", "e0") == 2


def test_deleting_a_busy_pod_counts_its_in_flight_requests_as_interrupted():
    c = make_cluster(nodes=1, gpus=1)
    c.store.create_pod(make_pod("p"))
    c.loop.run_until(40)
    for _ in range(3):
        c.router.route(20)
    c.loop.run_until(45)
    assert c.router.in_flight("default", "p") == 3
    c.store.delete_pod("default", "p")
    summary = c.router.summary()
    assert summary["interrupted"] == 3 and summary["byRevision"]["r1"]["interrupted"] == 3
    assert c.router.in_flight("default", "p") == 0
    assert c.router.route(1).result == "rejected"


def test_requests_finish_ok_or_with_the_images_error_rate():
    c = make_cluster(nodes=1, gpus=1, images={"engine:flaky": {"error_rate": 0.5}})
    c.store.create_pod(make_pod("p", image="engine:flaky"))
    c.loop.run_until(40)
    for _ in range(400):
        c.router.route(1)
    c.loop.run_until(50)
    s = c.router.summary()
    assert s["total"] == 400 and s["unfinished"] == 0
    assert 150 < s["errors"] < 250 and s["succeeded"] == 400 - s["errors"]
    assert 80 <= s["byRevision"]["r1"]["p50"] <= 300


def test_store_writes_with_a_stale_resource_version_conflict_and_identical_writes_are_no_ops():
    c = make_cluster()
    ms = c.store.create_modelserving(
        {
            "apiVersion": "x",
            "kind": "ModelServing",
            "metadata": {"name": "demo", "namespace": "default"},
            "spec": {"replicas": 1},
        }
    )
    rv = ms["metadata"]["resourceVersion"]
    changes = []
    c.store.add_listener(changes.append)
    ms2 = c.store.patch_modelserving("default", "demo", {"spec": {"replicas": 2}})
    assert ms2["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        c.store.replace_modelserving_status("default", "demo", {"x": 1}, resource_version=rv)
    rv2 = ms2["metadata"]["resourceVersion"]
    ms3 = c.store.replace_modelserving_status("default", "demo", {"x": 1}, resource_version=rv2)
    assert ms3["metadata"]["generation"] == 2  # status does not bump generation
    same = c.store.replace_modelserving_status(
        "default", "demo", {"x": 1}, resource_version=ms3["metadata"]["resourceVersion"]
    )
    assert same["metadata"]["resourceVersion"] == ms3["metadata"]["resourceVersion"]
    assert len(changes) == 2


def test_the_in_memory_store_satisfies_the_cluster_port():
    from controller.core.ports import ClusterPort

    c = make_cluster()
    assert isinstance(c.store, ClusterPort)


def test_a_node_failure_and_an_in_place_restart_interrupt_the_requests_in_flight_there():
    c = make_cluster(nodes=2, gpus=1)
    c.store.create_pod(make_pod("a"))
    c.store.create_pod(make_pod("b"))
    c.loop.run_until(40)
    for _ in range(4):
        c.router.route(30)  # least in-flight: a, b, a, b
    c.fail_node(c.store.get_pod("default", "a")["spec"]["nodeName"])
    assert c.router.summary()["interrupted"] == 2
    pod = c.store.get_pod("default", "b")
    c.store.patch_pod(
        "default", "b", {"spec": {"containers": [{**pod["spec"]["containers"][0], "image": "engine:v2"}]}}
    )
    assert c.router.summary()["interrupted"] == 4 and c.router.in_flight("default", "b") == 0


def test_the_same_seed_draws_the_same_timings_and_another_seed_other_ones():
    from controller.simcluster.config import ClusterConfig
    from controller.simcluster.memory.cluster import SimCluster

    def ready_times(seed):
        timing = {
            "schedule": Span.fixed(1),
            "pull": Span(1, 9),
            "start": Span.fixed(1),
            "load": Span(10, 50),
            "terminate": Span.fixed(1),
        }
        c = SimCluster(ClusterConfig(nodes=1, gpus_per_node=8, timing=timing), seed=seed, ms_name="demo")
        for i in range(5):
            c.store.create_pod(make_pod(f"p{i}"))
        times = {}
        for t in range(0, 70):
            c.loop.run_until(t)
            for i in range(5):
                if f"p{i}" not in times and is_ready(c.store.get_pod("default", f"p{i}")):
                    times[f"p{i}"] = t
        return times

    assert ready_times(1) == ready_times(1)
    assert ready_times(1) != ready_times(2)
    assert len(set(ready_times(1).values())) > 1  # drawn per pod, not one draw for all


def test_losing_a_worker_pod_interrupts_the_requests_its_entry_was_serving():
    # Pod names end in -<podIndex> (0 = entry): "g-0-serve-0-1" is the worker of the engine whose
    # entry "g-0-serve-0-0" holds the requests; they run on both, so they end with the worker.
    c = make_cluster(nodes=1, gpus=3)
    c.store.create_pod(make_pod("g-0-serve-0-0"))
    c.store.create_pod(make_pod("g-0-serve-0-1", entry=False))
    c.loop.run_until(40)
    for _ in range(2):
        c.router.route(30)
    c.loop.run_until(45)
    assert c.router.in_flight("default", "g-0-serve-0-0") == 2
    c.store.delete_pod("default", "g-0-serve-0-1")
    assert c.router.summary()["interrupted"] == 2
    assert c.router.in_flight("default", "g-0-serve-0-0") == 0


_NODES = [f"node-{i}" for i in range(6)]
_CHANGE = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(_NODES), st.integers(-2, 8)),
    st.tuples(st.just("add"), st.sampled_from(_NODES), st.integers(-3, 3)),
    st.tuples(st.just("remove"), st.sampled_from(_NODES), st.just(0)),
)


@settings(max_examples=300, deadline=None)
@given(changes=st.lists(st.tuples(_CHANGE, st.integers(0, 9)), max_size=80))
def test_the_schedulers_free_gpus_answer_exactly_what_place_answers_after_any_changes(changes):
    """``FreeGpus`` (a heap kept beside the figures) places like ``place`` over the same figures in
    node order: the most free GPUs that fit, ties to the earlier node, a node added again last."""
    free, plain = FreeGpus(), {}
    for (verb, node, n), need in changes:
        if verb == "set":
            free.set(node, n)
            plain[node] = n  # a new key goes last; an existing one keeps its place, as in FreeGpus
        elif verb == "add" and node in plain:
            free.add(node, n)
            plain[node] += n
        elif verb == "remove":
            free.remove(node)
            plain.pop(node, None)
        assert dict(free) == plain and list(free) == list(plain)
        assert free.best(need) == place(plain, need)
