"""Every scenario event and image behaviour, run through the runner with the real controller."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("controller.core.reconcile")

from controller.simcluster.runner import run_scenario  # noqa: E402
from controller.simcluster.scenario import parse_scenario  # noqa: E402
from tests.factories import group_strategy, modelserving, role  # noqa: E402


def make(
    events,
    *,
    replicas=3,
    strategy=None,
    images=None,
    traffic=None,
    nodes=4,
    timing=None,
    spec_extra=None,
    workers=0,
    until=3000,
):
    manifest = modelserving(
        name="ev",
        replicas=replicas,
        strategy=strategy or group_strategy(maxUnavailable=1),
        roles=[role("serve", workers=workers)],
        **(spec_extra or {}),
    )
    doc = {
        "name": "events",
        "seed": 11,
        "until": until,
        "cluster": {
            "nodes": nodes,
            "gpusPerNode": 4,
            "timing": timing or {"schedule": 1, "pull": 2, "start": 1, "load": 10, "terminate": 1},
        },
        "modelServing": manifest,
        "events": [{"at": 0, "do": "apply"}, *events],
    }
    if images:
        doc["images"] = images
    if traffic:
        doc["traffic"] = traffic
    return doc


def run(doc):
    return run_scenario(parse_scenario(copy.deepcopy(doc)))


def frames_between(trace, a, b):
    return [f for f in trace["frames"] if a <= f["t"] < b]


def revisions_at_end(trace):
    return {i["revision"] for i in trace["frames"][-1]["instances"]}


def rev_before(trace, t):
    return [f for f in trace["frames"] if f["t"] < t][-1]["updateRevision"]


def test_pause_stops_update_creates_and_deletes_until_resume():
    trace = run(
        make(
            [
                {"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"},
                {"at": 105, "do": "pause", "reason": "look at canary"},
                {"at": 400, "do": "resume"},
            ],
            replicas=4,
        )
    )
    during = [a for a in trace["actions"] if 105.1 <= a["t"] < 400 and a["verb"] in ("create", "delete", "drain")]
    # Work started before the pause finishes (the first group's replacement), nothing new starts.
    assert {a["group"] for a in during} <= {3}
    assert any(
        "pause" in r.lower() for f in frames_between(trace, 105, 400) for r in (b["reason"] for b in f["blocked"])
    )
    assert any(f["spec"]["paused"] for f in frames_between(trace, 106, 400))
    assert trace["converged"] and trace["convergedAt"] > 400


def test_promote_lowers_the_partition_and_the_rest_follows():
    strategy = {
        "type": "ServingGroupRollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "partition": 2},
    }
    trace = run(
        make(
            [
                {"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"},
                {"at": 300, "do": "promote", "partition": 1},
                {"at": 500, "do": "promote", "full": True},
            ],
            strategy=strategy,
            replicas=3,
        )
    )
    old = rev_before(trace, 100)
    at_300 = frames_between(trace, 0, 300)[-1]
    assert {i["group"]: i["revision"] for i in at_300["instances"]}[0] == old
    assert {i["group"]: i["revision"] for i in at_300["instances"]}[1] == old
    at_500 = frames_between(trace, 0, 500)[-1]
    assert {i["group"]: i["revision"] for i in at_500["instances"]}[0] == old
    assert {i["group"]: i["revision"] for i in at_500["instances"]}[1] != old
    assert trace["converged"] and revisions_at_end(trace) == {at_500["updateRevision"]}


def test_rollback_returns_to_the_old_revision_and_keeps_the_runtime_fields():
    trace = run(
        make(
            [
                {"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"},
                {"at": 300, "do": "patch", "patch": {"spec": {"replicas": 4}}},
                {"at": 500, "do": "rollback", "toRevision": 1, "reason": "p99 regression"},
            ],
            replicas=3,
            nodes=5,
        )
    )
    old = rev_before(trace, 100)
    assert trace["converged"] and revisions_at_end(trace) == {old}
    assert trace["frames"][-1]["spec"]["replicas"] == 4
    numbers = {r["hash"]: r["number"] for r in trace["revisions"]}
    assert numbers[old] == 3  # re-applying an older revision raises its number to max+1


def test_a_crashing_image_stalls_the_rollout_within_the_budget_and_the_run_still_completes():
    trace = run(
        make(
            [{"at": 100, "do": "setImage", "role": "serve", "image": "engine:bad"}],
            images={"engine:bad": {"crash": True}},
            replicas=3,
            until=1500,
        )
    )
    assert not trace["converged"] and trace["endTime"] == 1500
    last = trace["frames"][-1]
    assert sum(i["state"] == "Ready" for i in last["instances"]) == 2
    bad = [i for i in last["instances"] if i["state"] != "Ready"]
    assert len(bad) == 1 and bad[0]["group"] == 2 and bad[0]["state"] == "Failed"


def test_an_image_error_rate_and_latency_show_in_the_requests_by_revision():
    trace = run(
        make(
            [{"at": 100, "do": "setImage", "role": "serve", "image": "engine:flaky"}],
            images={"engine:flaky": {"errorRate": 0.2, "latencyMs": [500, 900]}},
            traffic={"rps": 20, "durationSeconds": [1, 3]},
            replicas=3,
            spec_extra={"drain": {"timeoutSeconds": 30}},
        )
    )
    old = rev_before(trace, 100)
    new = trace["frames"][-1]["updateRevision"]
    by = trace["requests"]["byRevision"]
    assert by[old]["failed"] == 0 and by[old]["p99"] <= 300
    share = by[new]["failed"] / by[new]["total"]
    assert 0.15 < share < 0.25 and 500 <= by[new]["p50"] <= 900


def test_a_drain_timeout_shorter_than_the_requests_reports_the_interrupted_ones():
    trace = run(
        make(
            [{"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"}],
            traffic={"rps": 10, "durationSeconds": [60, 120]},
            replicas=3,
            spec_extra={"drain": {"timeoutSeconds": 5}},
        )
    )
    assert trace["requests"]["interrupted"] > 0
    assert trace["converged"]


def test_slow_load_override_delays_readiness_of_that_image_only():
    fast = run(make([{"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"}], replicas=1))
    slow = run(
        make(
            [{"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"}],
            replicas=1,
            images={"engine:v2": {"load": 110}},
        )
    )
    # One batch: 1 + 1 + 2 + 1 + load; load 10 -> 15 s, load 110 -> 115 s.
    assert fast["convergedAt"] == pytest.approx(115, abs=0.1)
    assert slow["convergedAt"] == pytest.approx(215, abs=0.1)


def test_a_failed_node_loses_its_pods_which_come_back_elsewhere():
    trace = run(make([{"at": 100, "do": "failNode", "node": 0}], replicas=3, nodes=4))
    lost = [f for f in frames_between(trace, 100, 101)]
    assert (
        lost
        and any(i["state"] != "Ready" or i["pods"] == 0 for f in lost for i in f["instances"])
        or any(a["verb"] in ("create", "recreate") for a in trace["actions"] if a["t"] >= 100)
    )
    assert trace["converged"] and trace["convergedAt"] > 100


def test_delete_pods_narrowed_by_group_role_and_instance_deletes_only_those():
    trace = run(
        make([{"at": 100, "do": "deletePods", "group": 1, "role": "serve", "instance": 0}], replicas=3, workers=1)
    )
    recreated = {
        (a["group"], a["role"], a["ordinal"])
        for a in trace["actions"]
        if a["t"] >= 100 and a["verb"] in ("create", "recreate")
    }
    assert recreated == {(1, "serve", 0)}
    assert trace["converged"]


def test_a_corrupted_revision_that_is_needed_blocks_the_rebuild_and_says_which():
    strategy = {
        "type": "ServingGroupRollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "partition": 2},
    }
    trace = run(
        make(
            [
                {"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"},
                {"at": 200, "do": "corruptRevision", "revision": 1},
                {"at": 210, "do": "deletePods", "group": 0},
            ],
            strategy=strategy,
            replicas=3,
            until=800,
        )
    )
    old = rev_before(trace, 100)
    # Group 0 is protected on revision 1, whose data is now unreadable: never rebuilt from a guess.
    assert not [
        a for a in trace["actions"] if a["t"] >= 210 and a["group"] == 0 and a["verb"] in ("create", "recreate")
    ]
    later = frames_between(trace, 210, 800)
    texts = [b["reason"] for f in later for b in f["blocked"]] + [
        c.get("message", "") for f in later for c in f["conditions"]
    ]
    assert any(old in t for t in texts), texts[-5:]
    assert not trace["converged"]


def test_add_nodes_gives_the_scheduler_room_for_pending_pods():
    doc = make([{"at": 50, "do": "addNodes", "count": 1, "gpusPerNode": 4}], replicas=6, nodes=1)
    trace = run(doc)
    early = frames_between(trace, 0, 50)[-1]
    # One 4-GPU node holds 4 of the 6 single-GPU groups; the other 2 wait, unschedulable.
    assert sorted(i["state"] for i in early["instances"]) == ["Pending"] * 2 + ["Ready"] * 4
    assert trace["converged"] and trace["convergedAt"] == pytest.approx(50 + 2 + 1 + 10, abs=0.1)


def test_in_place_update_keeps_pod_uids_and_patches_images():
    doc = make(
        [{"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"}],
        strategy={"type": "InPlaceRollingUpdate"},
        replicas=3,
        workers=1,
    )
    doc["modelServing"]["spec"]["template"]["roles"][0].update(replicas=2, maxUnavailable=1)
    trace = run(doc)
    before = {
        (i["group"], i["role"], i["ordinal"]): i["podUids"] for i in frames_between(trace, 0, 100)[-1]["instances"]
    }
    after = {(i["group"], i["role"], i["ordinal"]): i["podUids"] for i in trace["frames"][-1]["instances"]}
    assert before == after
    verbs = {a["verb"] for a in trace["actions"] if a["t"] >= 100}
    assert "patchImage" in verbs and "delete" not in verbs
    assert any(f for f in trace["frames"] if any(i["state"] == "Updating" for i in f["instances"]))
    assert trace["converged"]


def test_restart_controller_mid_rollout_still_converges_without_duplicate_work():
    trace = run(
        make(
            [
                {"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"},
                {"at": 112, "do": "restartController"},
            ],
            replicas=3,
        )
    )
    creates = [
        (a["group"], a["role"], a["ordinal"]) for a in trace["actions"] if a["t"] >= 100 and a["verb"] == "create"
    ]
    assert len(creates) == len(set(creates)) == 3
    assert trace["converged"]


def test_an_in_place_update_with_a_long_drain_timeout_interrupts_no_request():
    doc = make(
        [{"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"}],
        strategy={"type": "InPlaceRollingUpdate"},
        replicas=3,
        workers=1,
        traffic={"rps": 10, "durationSeconds": [5, 20]},
        spec_extra={"drain": {"timeoutSeconds": 60}},
    )
    doc["modelServing"]["spec"]["template"]["roles"][0].update(replicas=2, maxUnavailable=1)
    trace = run(doc)
    assert trace["converged"]
    assert trace["requests"]["interrupted"] == 0


def test_a_controller_that_rewrites_the_cluster_on_every_pass_is_reported_as_a_hot_loop_and_throttled():
    from controller.core.workqueue import HOT_LOOP_PASSES
    from controller.simcluster.runner import Runner

    runner = Runner(parse_scenario(make([], replicas=1, until=600)))
    real = runner.kind._reconcile

    def restless(cluster, router, clock, ns, name, **kwargs):
        result = real(cluster, router, clock, ns, name, **kwargs)
        # A buggy controller: stamps the time on the object on every pass, waking itself again.
        cluster.patch_modelserving(ns, name, {"metadata": {"annotations": {"example/last-pass": str(clock.now())}}})
        return result

    runner.kind._reconcile = restless
    trace = runner.run()
    assert any("hot loop" in e["message"] for e in trace["controllerErrors"])
    # 200 back-to-back passes, then at most one per second for the rest of the 600 s.
    assert runner.kind.passes < HOT_LOOP_PASSES + 600 + 50
