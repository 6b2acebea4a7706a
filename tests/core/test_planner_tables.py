"""The planner: table tests with exact expected actions for small cases.

Most tests drive the in-memory ``MiniCluster`` (which obeys plans instantly) with ``step()`` and
look at ``cluster.log`` (the order the cluster saw creates and deletes). ``drain.timeoutSeconds: 0``
turns drains off where a test is about something else.
"""

from __future__ import annotations

import copy
import json

import pytest

from controller.core import naming
from controller.core.observe import observe
from controller.core.planner import plan
from controller.core.spec import parse_modelserving
from tests.factories import group_strategy, role_strategy

from .harness import CountingRouter, manifest, role, run_until_converged, step
from .support import (
    actions,
    available_groups,
    blocked_for,
    change_image,
    deploy,
    group_images,
    group_revisions,
    history,
    log_groups,
    lose_group,
    lose_pods,
    patch_spec,
    pods_of_group,
    set_not_ready,
    spec,
    status,
    update_deletes,
)

NO_DRAIN = {"timeoutSeconds": 0}


def group_ms(replicas=4, *, roles=None, drain=NO_DRAIN, **cfg):
    return manifest(replicas=replicas, roles=roles, strategy=group_strategy(**cfg) if cfg else None, drain=drain)


def role_ms(roles, *, replicas=1, drain=NO_DRAIN, **extra):
    return manifest(replicas=replicas, roles=roles, strategy=role_strategy(), drain=drain, **extra)


def revs(cluster):
    st = status(cluster)
    return st["currentRevision"], st["updateRevision"]


# --------------------------------------------------------------------------------------------
# ServingGroupRollingUpdate: order and budget


def test_four_groups_with_maxunavailable_1_replace_ordinal_3_then_2_1_0():
    cluster, clock = deploy(group_ms(4))
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    assert cluster.log == [
        ("delete", "ms-3-serve-0-0"), ("create", "ms-3-serve-0-0"),
        ("delete", "ms-2-serve-0-0"), ("create", "ms-2-serve-0-0"),
        ("delete", "ms-1-serve-0-0"), ("create", "ms-1-serve-0-0"),
        ("delete", "ms-0-serve-0-0"), ("create", "ms-0-serve-0-0"),
    ]  # fmt: skip
    assert group_images(cluster) == {o: {"engine:v2"} for o in range(4)}


def test_the_first_pass_of_a_rollout_replaces_only_group_3_and_says_why_the_others_wait():
    m = group_ms(4)
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    # plan() directly against what the cluster holds
    obj = cluster.get_modelserving("default", "ms")
    p = plan(
        parse_modelserving(obj),
        history(cluster),
        observe(cluster.list_pods("default", "ms")),
        clock.now(),
        status=obj.get("status"),
    )
    assert [(a.verb, a.group, a.reason) for a in p.actions] == [("delete", 3, "rolling update")]
    waiting = {b.group: b.reason for b in p.blocked}
    assert set(waiting) == {0, 1, 2}
    assert all("maxUnavailable" in r for r in waiting.values())


def test_with_drain_each_replacement_is_drain_then_delete_then_create_in_ordinal_order_3_2_1_0():
    cluster, clock = deploy(group_ms(4, drain={"timeoutSeconds": 30}))
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    expected = []
    for o in (3, 2, 1, 0):
        expected += [("patch", f"ms-{o}-serve-0-0"), ("delete", f"ms-{o}-serve-0-0"), ("create", f"ms-{o}-serve-0-0")]
    assert cluster.log == expected


def test_maxunavailable_2_replaces_two_groups_at_a_time():
    cluster, clock = deploy(group_ms(4, maxUnavailable=2))
    change_image(cluster, "engine:v2")
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("delete", 2, "serve", 0), ("delete", 3, "serve", 0)]
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("create", 2, "serve", 0), ("create", 3, "serve", 0)]
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("delete", 0, "serve", 0), ("delete", 1, "serve", 0)]
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("create", 0, "serve", 0), ("create", 1, "serve", 0)]
    assert group_images(cluster) == {o: {"engine:v2"} for o in range(4)}


@pytest.mark.parametrize(
    "replicas, cfg, most_unavailable",
    [
        pytest.param(4, {"maxUnavailable": 1}, 1, id="4-groups-maxUnavailable-1-never-more-than-1-down"),
        pytest.param(5, {"maxUnavailable": 2}, 2, id="5-groups-maxUnavailable-2-never-more-than-2-down"),
        pytest.param(6, {"maxUnavailable": "50%"}, 3, id="6-groups-maxUnavailable-50-percent-never-more-than-3-down"),
        pytest.param(6, {"maxUnavailable": "40%"}, 2, id="6-groups-maxUnavailable-40-percent-rounds-down-to-2"),
    ],
)
def test_a_rollout_never_takes_more_groups_down_than_maxunavailable(replicas, cfg, most_unavailable):
    cluster, clock = deploy(group_ms(replicas, drain={"timeoutSeconds": 30}, **cfg))
    change_image(cluster, "engine:v2")
    seen = []
    for _ in range(60):
        step(cluster, clock)
        seen.append(replicas - len(available_groups(cluster)))
        if status(cluster).get("converged") and group_images(cluster) == {o: {"engine:v2"} for o in range(replicas)}:
            break
    assert max(seen) == most_unavailable
    assert group_images(cluster) == {o: {"engine:v2"} for o in range(replicas)}


def test_an_unavailable_outdated_group_is_replaced_first_without_spending_budget():
    cluster, clock = deploy(group_ms(4))
    set_not_ready(cluster, "ms-1-serve-0-0")
    change_image(cluster, "engine:v2")
    r = step(cluster, clock, settle=False)
    # group 1 costs no availability; the budget (1 unavailable, already used by group 1) stops group 3
    assert actions(r) == [("delete", 1, "serve", 0)]
    assert any("maxUnavailable" in reason for reason in blocked_for(r, 3))


def test_two_unavailable_outdated_groups_are_both_replaced_at_once_with_maxunavailable_1():
    cluster, clock = deploy(group_ms(4))
    set_not_ready(cluster, "ms-0-serve-0-0")
    set_not_ready(cluster, "ms-2-serve-0-0")
    change_image(cluster, "engine:v2")
    r = step(cluster, clock, settle=False)
    assert sorted(actions(r)) == [("delete", 0, "serve", 0), ("delete", 2, "serve", 0)]


def test_unavailable_outdated_groups_go_before_available_ones_when_the_budget_allows_more():
    cluster, clock = deploy(group_ms(5, maxUnavailable=2))
    set_not_ready(cluster, "ms-1-serve-0-0")
    change_image(cluster, "engine:v2")
    r = step(cluster, clock, settle=False)
    # group 1 first (free), then the highest available (4); 3 would make three unavailable
    assert [a.group for a in r.actions] == [1, 4]


# --------------------------------------------------------------------------------------------
# Surge


def test_surge_creates_group_4_first_and_deletes_an_old_group_only_once_new_capacity_is_ready():
    cluster, clock = deploy(group_ms(4, maxUnavailable=0, maxSurge=1))
    change_image(cluster, "engine:v2")
    first = step(cluster, clock, settle=False)
    assert actions(first) == [("create", 4, "serve", 0)]
    assert first.actions[0].reason == "surge"
    # the surge group is not Ready yet: nothing is deleted
    second = step(cluster, clock, settle=False)
    assert update_deletes(second) == []
    cluster.settle()
    most_groups, fewest_available = 0, 4
    for _ in range(40):
        before = available_groups(cluster)
        r = step(cluster, clock)
        for a in update_deletes(r):
            assert a.group in before and len(before) >= 5, "an old group goes only when new capacity is Ready"
        most_groups = max(most_groups, len(group_revisions(cluster)))
        fewest_available = min(fewest_available, len(available_groups(cluster)))
        if status(cluster).get("converged") and not r.actions:
            break
    assert most_groups == 5
    assert fewest_available >= 4
    assert cluster.log == [
        ("create", "ms-4-serve-0-0"),
        ("delete", "ms-3-serve-0-0"), ("create", "ms-3-serve-0-0"),
        ("delete", "ms-2-serve-0-0"), ("create", "ms-2-serve-0-0"),
        ("delete", "ms-1-serve-0-0"), ("create", "ms-1-serve-0-0"),
        ("delete", "ms-0-serve-0-0"), ("create", "ms-0-serve-0-0"),
        ("delete", "ms-4-serve-0-0"),
    ]  # fmt: skip
    assert set(group_revisions(cluster)) == {0, 1, 2, 3}


def test_surge_that_cannot_be_scheduled_waits_and_says_why():
    cluster, clock = deploy(group_ms(4, maxUnavailable=0, maxSurge=1), gpus=4)
    change_image(cluster, "engine:v2")
    step(cluster, clock)  # creates surge group 4, which finds no GPU
    for _ in range(5):
        r = step(cluster, clock)
        assert update_deletes(r) == []
        assert len(available_groups(cluster)) == 4
    reasons = [b["reason"] for b in r.blocked]
    assert any("surge pod unschedulable" in x and "0 unavailable allowed" in x for x in reasons), reasons
    for o in range(4):
        assert blocked_for(r, o), f"group {o} waits without a reason"
    assert status(cluster)["phase"] == "Blocked"
    # capacity appears: the rollout proceeds and converges
    cluster.gpus = 5
    run_until_converged(cluster, clock)
    assert group_images(cluster) == {o: {"engine:v2"} for o in range(4)}


def test_surge_of_2_creates_two_surge_groups_and_never_more_than_replicas_plus_2():
    cluster, clock = deploy(group_ms(4, maxUnavailable=0, maxSurge=2))
    change_image(cluster, "engine:v2")
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("create", 4, "serve", 0), ("create", 5, "serve", 0)]
    for _ in range(30):
        r = step(cluster, clock)
        assert len(group_revisions(cluster)) <= 6
        assert len(available_groups(cluster)) >= 4
    assert set(group_revisions(cluster)) == {0, 1, 2, 3}


# --------------------------------------------------------------------------------------------
# Scale


def test_scale_up_fills_the_missing_ordinals():
    cluster, clock = deploy(group_ms(2))
    patch_spec(cluster, {"replicas": 4})
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("create", 2, "serve", 0), ("create", 3, "serve", 0)]


def test_scale_up_fills_a_hole_below_the_highest_ordinal_too():
    cluster, clock = deploy(group_ms(4))
    lose_group(cluster, 1)
    patch_spec(cluster, {"replicas": 5})
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("create", 1, "serve", 0), ("create", 4, "serve", 0)]
    assert set(group_revisions(cluster)) == {0, 1, 2, 3, 4}


def test_scale_down_removes_the_highest_ordinals():
    cluster, clock = deploy(group_ms(4))
    patch_spec(cluster, {"replicas": 1})
    r = step(cluster, clock)
    assert [(a.verb, a.group) for a in r.actions] == [("delete", 3), ("delete", 2), ("delete", 1)]
    assert set(group_revisions(cluster)) == {0}


def test_scaling_down_while_paused_removes_every_group_beyond_replicas():
    cluster, clock = deploy(group_ms(6))
    change_image(cluster, "engine:v2")
    step(cluster, clock)  # group 5 deleted for the update
    step(cluster, clock)  # and recreated on the new revision
    patch_spec(cluster, {"paused": True, "replicas": 1})
    r = step(cluster, clock)
    assert sorted(a.group for a in r.actions if a.verb in ("delete", "drain")) == [1, 2, 3, 4, 5]
    assert set(group_revisions(cluster)) == {0}


def test_scaling_is_not_a_rollout():
    cluster, clock = deploy(group_ms(2, roles=[role("serve", replicas=2)]))
    first = revs(cluster)
    patch_spec(cluster, {"replicas": 3, "template": {"roles": [role("serve", replicas=3)]}})
    run_until_converged(cluster, clock)
    assert revs(cluster) == first
    assert all(v == "create" for v, _ in cluster.log)
    assert len(cluster.revisions) == 1


# --------------------------------------------------------------------------------------------
# Partition


def test_groups_below_the_partition_stay_old():
    cluster, clock = deploy(group_ms(5, partition=3))
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    r = run_until_converged(cluster, clock)
    current, update = revs(cluster)
    assert current == old != update
    assert group_revisions(cluster) == {0: {old}, 1: {old}, 2: {old}, 3: {update}, 4: {update}}
    assert log_groups(cluster, "delete") == [4, 3]
    for o in (0, 1, 2):
        assert any("partition" in reason for reason in blocked_for(r, o))
    st = status(cluster)
    assert (st["updatedReplicas"], st["currentReplicas"], st["availableReplicas"]) == (2, 3, 5)


def test_a_percent_partition_rounds_up():
    cluster, clock = deploy(group_ms(5, partition="50%"))
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    assert [o for o, r in group_revisions(cluster).items() if r == {old}] == [0, 1, 2]


def test_promote_lowers_the_partition_and_the_next_group_is_updated():
    cluster, clock = deploy(group_ms(4, partition=3))
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    cluster.log.clear()
    patch_spec(cluster, {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": 1}}})
    run_until_converged(cluster, clock)
    assert log_groups(cluster, "delete") == [2, 1]
    update = revs(cluster)[1]
    assert group_revisions(cluster)[0] != {update}


def wipe_groups(st):
    st.pop("groups", None)


def wipe_current(st):
    st.pop("currentRevision", None)


@pytest.mark.parametrize(
    "restart",
    [
        pytest.param(lambda st: None, id="with-status-intact"),
        pytest.param(wipe_groups, id="after-a-restart-with-only-status-currentRevision"),
        pytest.param(wipe_current, id="after-a-restart-with-only-status-groups-records"),
    ],
)
@pytest.mark.parametrize("recovery", ["RoleRecreate", "ServingGroupRecreate", "None"])
def test_a_protected_group_whose_pods_are_all_lost_is_rebuilt_from_the_old_revision(restart, recovery):
    m = manifest(
        replicas=5,
        roles=[role("prefill", replicas=2), role("decode", workers=1)],
        strategy={"rollingUpdateConfiguration": {"partition": 3}},
        recovery=recovery,
        drain=NO_DRAIN,
    )
    cluster, clock = deploy(m)
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    update = revs(cluster)[1]
    lose_group(cluster, 1)
    # the harness keeps no controller memory; a restart can only use what the cluster stores
    restart(cluster.ms[("default", "ms")]["status"])
    cluster.log.clear()
    r = step(cluster, clock)
    assert {a.revision for a in r.actions if a.verb == "create"} == {old}
    assert group_revisions(cluster)[1] == {old}
    assert group_images(cluster)[1] == {"engine:v1"}  # entry and worker pods alike
    assert len(pods_of_group(cluster, 1)) == 2 + 2
    assert revs(cluster) == (old, update)


def test_a_protected_role_instance_that_is_lost_is_rebuilt_from_the_old_revision():
    m = role_ms([role("prefill", replicas=4, partition=2), role("decode", workers=1)])
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    lose_pods(cluster, "ms-0-prefill-0-0")
    old = [h for h in status(cluster)["referencedRevisions"] if h != status(cluster)["updateRevision"]]
    assert old and old[0] in json.dumps(status(cluster)["groups"][0])  # persisted for the restart
    r = step(cluster, clock)
    (create,) = [a for a in r.actions if a.verb == "create"]
    assert (create.role, create.ordinal) == ("prefill", 0)
    assert cluster.pods["ms-0-prefill-0-0"]["spec"]["containers"][0]["image"] == "engine:v1"
    assert cluster.pods["ms-0-prefill-3-0"]["spec"]["containers"][0]["image"] == "engine:v2"


# --------------------------------------------------------------------------------------------
# Recovery policies


RECOVERY_CASES = [
    pytest.param(
        "RoleRecreate",
        [("delete", "ms-1-prefill-1-0"), ("create", "ms-1-prefill-1-0"), ("create", "ms-1-prefill-1-1")],
        id="RoleRecreate-rebuilds-only-that-instance",
    ),
    pytest.param(
        "ServingGroupRecreate",
        [("delete", n) for n in ("ms-1-decode-0-0", "ms-1-prefill-0-0", "ms-1-prefill-0-1", "ms-1-prefill-1-0")]
        + [
            ("create", n)
            for n in ("ms-1-decode-0-0", "ms-1-prefill-0-0", "ms-1-prefill-0-1", "ms-1-prefill-1-0", "ms-1-prefill-1-1")
        ],
        id="ServingGroupRecreate-rebuilds-the-whole-group",
    ),
    pytest.param("None", [("create", "ms-1-prefill-1-1")], id="None-recreates-only-the-missing-pod"),
]


@pytest.mark.parametrize("recovery, expected_log", RECOVERY_CASES)
def test_a_lost_worker_pod_is_recovered_by_the_recovery_policy(recovery, expected_log):
    m = manifest(
        replicas=2, roles=[role("prefill", replicas=2, workers=1), role("decode")], recovery=recovery, drain=NO_DRAIN
    )
    cluster, clock = deploy(m)
    lose_pods(cluster, "ms-1-prefill-1-1")
    run_until_converged(cluster, clock)
    assert sorted(cluster.log, key=lambda e: (e[0] != "delete", e[1])) == sorted(
        expected_log, key=lambda e: (e[0] != "delete", e[1])
    )
    assert len(cluster.pods) == 2 * (2 * 2 + 1)


@pytest.mark.parametrize(
    "recovery, deleted",
    [
        pytest.param("RoleRecreate", {"ms-0-decode-0-0"}, id="RoleRecreate-replaces-the-failed-instance"),
        pytest.param(
            "ServingGroupRecreate",
            {"ms-0-decode-0-0", "ms-0-prefill-0-0", "ms-0-prefill-0-1", "ms-0-prefill-1-0", "ms-0-prefill-1-1"},
            id="ServingGroupRecreate-replaces-the-group",
        ),
        pytest.param("None", {"ms-0-decode-0-0"}, id="None-replaces-only-the-failed-pod"),
    ],
)
def test_a_failed_pod_is_recovered_by_the_recovery_policy(recovery, deleted):
    m = manifest(
        replicas=2, roles=[role("prefill", replicas=2, workers=1), role("decode")], recovery=recovery, drain=NO_DRAIN
    )
    cluster, clock = deploy(m)
    cluster.pods["ms-0-decode-0-0"]["status"]["phase"] = "Failed"
    r = step(cluster, clock)
    assert {n for v, n in cluster.log if v == "delete"} == deleted
    assert all(a.reason == "recovery" for a in r.actions)
    run_until_converged(cluster, clock)
    assert len(cluster.pods) == 10


def test_servinggrouprecreate_rebuilds_a_group_that_lost_a_whole_instance():
    m = manifest(replicas=2, roles=[role("prefill"), role("decode")], recovery="ServingGroupRecreate", drain=NO_DRAIN)
    cluster, clock = deploy(m)
    lose_pods(cluster, "ms-0-decode-0-0")
    run_until_converged(cluster, clock, max_steps=20)
    assert sorted(cluster.pods) == ["ms-0-decode-0-0", "ms-0-prefill-0-0", "ms-1-decode-0-0", "ms-1-prefill-0-0"]
    # the surviving pod of group 0 was deleted and the whole group rebuilt; group 1 untouched
    assert ("delete", "ms-0-prefill-0-0") in cluster.log
    assert not [n for _, n in cluster.log if n.startswith("ms-1-")]


def test_role_rolling_update_with_recovery_none_replaces_an_outdated_instance_that_lost_a_pod():
    m = role_ms([role("decode", replicas=2, workers=1)], recovery="None")
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    lose_pods(cluster, "ms-0-decode-1-1")
    run_until_converged(cluster, clock, max_steps=30)
    assert group_images(cluster) == {0: {"engine:v2"}}
    assert len(cluster.pods) == 4


# --------------------------------------------------------------------------------------------
# Pause


def test_pause_stops_update_creates_and_deletes():
    cluster, clock = deploy(group_ms(4))
    change_image(cluster, "engine:v2")
    step(cluster, clock)  # group 3 deleted
    patch_spec(cluster, {"paused": True})
    cluster.log.clear()
    # group 3's replacement (the second half of an update already started) may still finish,
    # but no further group starts
    for _ in range(6):
        r = step(cluster, clock)
        assert update_deletes(r) == []
    assert log_groups(cluster, "delete") == []
    assert set(log_groups(cluster, "create")) <= {3}
    for o in (0, 1, 2):
        assert any("paused" in x for x in blocked_for(r, o))
    assert status(cluster)["phase"] == "Paused"
    patch_spec(cluster, {"paused": False})
    run_until_converged(cluster, clock)
    assert log_groups(cluster, "delete") == [2, 1, 0]


def test_while_paused_a_lost_pod_is_still_recovered_at_its_own_revision():
    m = group_ms(4, roles=[role("prefill"), role("decode")])
    cluster, clock = deploy(m)
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    step(cluster, clock)
    step(cluster, clock)
    patch_spec(cluster, {"paused": True})
    cluster.log.clear()
    lose_pods(cluster, "ms-1-decode-0-0")
    r = step(cluster, clock)
    assert [(a.verb, a.group, a.role, a.revision) for a in r.actions] == [("create", 1, "decode", old)]
    assert group_revisions(cluster)[1] == {old}


def test_while_paused_a_whole_outdated_group_that_is_lost_comes_back_at_its_own_revision():
    cluster, clock = deploy(group_ms(4))
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    step(cluster, clock)  # delete group 3
    step(cluster, clock)  # recreate it on the new revision
    patch_spec(cluster, {"paused": True})
    step(cluster, clock)
    lose_group(cluster, 0)
    r = step(cluster, clock)
    assert [(a.verb, a.group, a.revision) for a in r.actions] == [("create", 0, old)]
    assert group_revisions(cluster)[0] == {old}


# --------------------------------------------------------------------------------------------
# Status


def test_status_revisions_and_counts_follow_the_rollout():
    cluster, clock = deploy(group_ms(4))
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    rows = []
    for _ in range(12):
        r = step(cluster, clock)
        st = r.status
        rows.append((st["currentRevision"], st["updatedReplicas"], st["availableReplicas"]))
    new = status(cluster)["updateRevision"]
    # status describes what was observed at the start of each pass
    assert [row[1] for row in rows[:9]] == [0, 0, 1, 1, 2, 2, 3, 3, 4]
    assert [row[2] for row in rows[:9]] == [4, 3, 4, 3, 4, 3, 4, 3, 4]
    assert [row[0] for row in rows[:8]] == [old] * 8
    assert rows[8][0] == new
    st = status(cluster)
    assert (
        st["currentRevision"],
        st["updateRevision"],
        st["updatedReplicas"],
        st["currentReplicas"],
        st["availableReplicas"],
        st["replicas"],
    ) == (new, new, 4, 0, 4, 4)
    assert st["converged"] is True and st["phase"] == "Healthy"


def test_status_has_per_group_and_per_role_counts_and_reasons_for_each_waiting_group():
    m = group_ms(3, roles=[role("prefill", replicas=2), role("decode", workers=1)])
    cluster, clock = deploy(m)
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    step(cluster, clock)  # group 2 deleted
    r = step(cluster, clock, settle=False)  # group 2 created, not yet Ready
    new = r.status["updateRevision"]
    last = step(cluster, clock, settle=False)
    st = status(cluster)
    groups = {g["ordinal"]: g for g in st["groups"]}
    assert (groups[0]["revision"], groups[0]["ready"], groups[0]["updated"], groups[0]["phase"]) == (
        old,
        True,
        False,
        "Ready",
    )
    assert (groups[2]["revision"], groups[2]["ready"], groups[2]["updated"]) == (new, False, True)
    g2 = {x["name"]: x for x in groups[2]["roles"]}
    assert {k: g2["prefill"][k] for k in ("desired", "ready", "updated", "unavailable", "surge")} == {
        "desired": 2,
        "ready": 0,
        "updated": 2,
        "unavailable": 2,
        "surge": 0,
    }
    assert {k: g2["decode"][k] for k in ("desired", "ready", "updated", "unavailable")} == {
        "desired": 1,
        "ready": 0,
        "updated": 1,
        "unavailable": 1,
    }
    roles = {x["name"]: x for x in st["roles"]}
    assert {k: roles["prefill"][k] for k in ("desired", "ready", "updated", "unavailable")} == {
        "desired": 6,
        "ready": 4,
        "updated": 2,
        "unavailable": 2,
    }
    assert (st["updatedReplicas"], st["availableReplicas"]) == (1, 2)
    waiting = {b["group"]: b["reason"] for b in last.blocked}
    assert set(waiting) >= {0, 1}
    assert all(isinstance(waiting[o], str) and len(waiting[o].split()) >= 3 for o in (0, 1))


def test_a_surge_group_is_reported_as_surge_in_status():
    cluster, clock = deploy(group_ms(2, maxUnavailable=0, maxSurge=1))
    change_image(cluster, "engine:v2")
    step(cluster, clock)
    step(cluster, clock)
    groups = {g["ordinal"]: g for g in status(cluster)["groups"]}
    assert groups[2]["surge"] is True
    assert all(r["desired"] == 0 for r in groups[2]["roles"])
    assert status(cluster)["updatedReplicas"] <= 2


# --------------------------------------------------------------------------------------------
# RoleRollingUpdate


def test_role_rolling_update_replaces_only_the_changed_roles():
    m = role_ms([role("prefill", replicas=2), role("decode", replicas=2, workers=1)], replicas=2)
    cluster, clock = deploy(m)
    decode_uids = {n: p["metadata"]["uid"] for n, p in cluster.pods.items() if "-decode-" in n}
    change_image(cluster, "engine:v2", ["prefill"])
    run_until_converged(cluster, clock)
    touched = {n for _, n in cluster.log}
    assert touched and all("-prefill-" in n for n in touched)
    assert {n: cluster.pods[n]["metadata"]["uid"] for n in decode_uids} == decode_uids
    st = status(cluster)
    assert st["currentRevision"] == st["updateRevision"] and st["converged"]


def test_role_rolling_update_every_group_spends_its_own_role_budget():
    m = role_ms([role("prefill", replicas=3, maxUnavailable=1), role("decode", replicas=2)], replicas=2)
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2", ["prefill"])
    r = step(cluster, clock)
    # one instance per group at once: two in total
    assert sorted(actions(r)) == [("delete", 0, "prefill", 2), ("delete", 1, "prefill", 2)]
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("create", 0, "prefill", 2), ("create", 1, "prefill", 2)]
    run_until_converged(cluster, clock)
    order = [n for v, n in cluster.log if v == "delete" and n.startswith("ms-0-")]
    assert order == ["ms-0-prefill-2-0", "ms-0-prefill-1-0", "ms-0-prefill-0-0"]


def test_role_rolling_update_with_role_maxunavailable_2_replaces_two_instances_per_group():
    m = role_ms([role("prefill", replicas=4, maxUnavailable=2)], replicas=2)
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    r = step(cluster, clock)
    assert sorted(actions(r)) == [("delete", g, "prefill", k) for g in (0, 1) for k in (2, 3)]


def test_role_partition_keeps_instances_below_it_old():
    m = role_ms([role("prefill", replicas=4, partition=2)])
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    r = run_until_converged(cluster, clock)
    assert [n for v, n in cluster.log if v == "delete"] == ["ms-0-prefill-3-0", "ms-0-prefill-2-0"]
    images = {n: p["spec"]["containers"][0]["image"] for n, p in cluster.pods.items()}
    assert images == {
        "ms-0-prefill-0-0": "engine:v1",
        "ms-0-prefill-1-0": "engine:v1",
        "ms-0-prefill-2-0": "engine:v2",
        "ms-0-prefill-3-0": "engine:v2",
    }
    reasons = blocked_for(r, 0, "prefill")
    assert any("prefill-0" in x and "partition" in x for x in reasons)


def test_a_surge_instance_that_lost_a_pod_is_removed_when_no_longer_needed_with_recovery_none():
    m = role_ms([role("decode", replicas=1, workers=1, maxUnavailable=0, maxSurge=1)], recovery="None")
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    step(cluster, clock)  # surge decode-1 created
    step(cluster, clock)  # decode-0 replaced
    lose_pods(cluster, "ms-0-decode-1-1")
    run_until_converged(cluster, clock, max_steps=30)
    assert sorted(cluster.pods) == ["ms-0-decode-0-0", "ms-0-decode-0-1"]
    assert group_images(cluster) == {0: {"engine:v2"}}


def test_role_rolling_update_with_role_surge_creates_the_surge_instance_first():
    m = role_ms([role("prefill", replicas=2, maxUnavailable=0, maxSurge=1)])
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    r = step(cluster, clock)
    assert actions(r) == [("create", 0, "prefill", 2)]
    run_until_converged(cluster, clock)
    assert cluster.log[0] == ("create", "ms-0-prefill-2-0")
    assert cluster.log[-1] == ("delete", "ms-0-prefill-2-0")
    assert sorted(cluster.pods) == ["ms-0-prefill-0-0", "ms-0-prefill-1-0"]


# --------------------------------------------------------------------------------------------
# Unreadable revisions


def test_an_unreadable_revision_blocks_the_creates_that_depend_on_it_and_nothing_is_guessed():
    cluster, clock = deploy(group_ms(4, partition=2))
    old = revs(cluster)[0]
    change_image(cluster, "engine:v2")
    run_until_converged(cluster, clock)
    good = copy.deepcopy(cluster.revisions[f"ms-{old}"]["data"])
    cluster.revisions[f"ms-{old}"]["data"] = "<corrupted>"
    lose_group(cluster, 1)  # protected: must come back on the old revision
    cluster.log.clear()
    for _ in range(3):
        r = step(cluster, clock)
        assert [a for a in r.actions if a.verb == "create"] == []
    assert cluster.log == []
    reasons = blocked_for(r, 1)
    assert any(old in x and "unreadable" in x for x in reasons), reasons
    st = status(cluster)
    assert st["phase"] == "Blocked"
    (cond,) = [c for c in st["conditions"] if c["type"] == "RevisionUnreadable"]
    assert cond["status"] == "True" and old in cond["message"]
    assert old in st["referencedRevisions"]  # still referenced: GC must not delete it
    assert f"ms-{old}" in cluster.revisions
    # repaired: the group comes back on the old template
    cluster.revisions[f"ms-{old}"]["data"] = good
    step(cluster, clock)
    assert group_images(cluster)[1] == {"engine:v1"}
    assert group_revisions(cluster)[1] == {old}


def test_an_unreadable_revision_that_every_group_runs_starts_no_rollout():
    cluster, clock = deploy(group_ms(3))
    current = revs(cluster)[0]
    cluster.revisions[f"ms-{current}"]["data"] = "<corrupted>"
    for _ in range(4):
        r = step(cluster, clock)
        assert update_deletes(r) == []
    assert any(current in b["reason"] for b in r.blocked)


# --------------------------------------------------------------------------------------------
# Drain


def test_ready_pods_are_drained_first_and_deleted_when_no_request_is_in_flight():
    cluster, clock = deploy(group_ms(2, drain={"timeoutSeconds": 100}))
    router = CountingRouter()
    router.counts["ms-1-serve-0-0"] = 3
    change_image(cluster, "engine:v2")
    r = step(cluster, clock, router)
    assert [(a.verb, a.group) for a in r.actions] == [("drain", 1)]
    assert naming.ANNOTATION_DRAINING in cluster.pods["ms-1-serve-0-0"]["metadata"]["annotations"]
    assert r.requeue_after is not None and r.requeue_after <= 1
    for _ in range(5):
        r = step(cluster, clock, router)
        assert r.actions == []
        assert "ms-1-serve-0-0" in cluster.pods
        assert any("in-flight" in x for x in blocked_for(r, 1))
    router.counts["ms-1-serve-0-0"] = 0
    r = step(cluster, clock, router)
    assert [(a.verb, a.group) for a in r.actions] == [("delete", 1)]
    assert cluster.log == [("patch", "ms-1-serve-0-0"), ("delete", "ms-1-serve-0-0")]


def test_a_drain_ends_at_the_timeout_even_with_requests_in_flight():
    cluster, clock = deploy(group_ms(2, drain={"timeoutSeconds": 10}))
    router = CountingRouter()
    router.counts["ms-1-serve-0-0"] = 5
    change_image(cluster, "engine:v2")
    started = clock.now()
    step(cluster, clock, router)
    deleted_at = None
    for _ in range(20):
        now = clock.now()
        r = step(cluster, clock, router)
        if any(a.verb == "delete" for a in r.actions):
            deleted_at = now
            break
    assert deleted_at == started + 10


def test_a_cancelled_drain_clears_the_mark():
    cluster, clock = deploy(group_ms(2, drain={"timeoutSeconds": 100}))
    router = CountingRouter()
    router.counts["ms-1-serve-0-0"] = 2
    change_image(cluster, "engine:v2")
    step(cluster, clock, router)
    assert naming.ANNOTATION_DRAINING in cluster.pods["ms-1-serve-0-0"]["metadata"]["annotations"]
    change_image(cluster, "engine:v1")  # back: the pod is no longer to be deleted
    r = step(cluster, clock, router)
    assert [(a.verb, a.group) for a in r.actions] == [("undrain", 1)]
    assert naming.ANNOTATION_DRAINING not in (cluster.pods["ms-1-serve-0-0"]["metadata"].get("annotations") or {})
    assert "ms-1-serve-0-0" in cluster.pods


def test_pods_that_are_not_ready_are_deleted_without_a_drain():
    cluster, clock = deploy(group_ms(2, drain={"timeoutSeconds": 100}))
    set_not_ready(cluster, "ms-1-serve-0-0")
    change_image(cluster, "engine:v2")
    r = step(cluster, clock, settle=False)
    assert [(a.verb, a.group) for a in r.actions] == [("delete", 1)]


def test_spec_helper_sees_the_patched_spec():
    cluster, _ = deploy(group_ms(1))
    patch_spec(cluster, {"paused": True})
    assert spec(cluster)["paused"] is True
