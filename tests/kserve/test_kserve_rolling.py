"""The Deployment RollingUpdate arithmetic: tables for each rule, and whole rollouts stepped until
done to check the budgets on every step."""

from __future__ import annotations

import pytest

from controller.core.intorpercent import IntOrPercent
from controller.core.kserve.rolling import (
    ReplicaSetCount,
    blocked_reasons,
    new_replica_set_target,
    old_replica_set_targets,
    resolve_fenceposts,
)

P = IntOrPercent.parse


@pytest.mark.parametrize(
    "surge,unavailable,replicas,expected",
    [("25%", "25%", 8, (2, 2)), ("25%", "25%", 6, (2, 1)), ("25%", "25%", 2, (1, 0)), (0, "10%", 4, (0, 1))],
    ids=[
        "8 replicas at 25% surge 2 and may lose 2",
        "25% of 6 rounds surge up and unavailable down",
        "25% of 2 may lose none",
        "both rounding to 0 allows one unavailable (the fencepost rule)",
    ],
)
def test_resolve_fenceposts(surge, unavailable, replicas, expected):
    assert resolve_fenceposts(P(surge), P(unavailable), replicas) == expected


def step(desired, surge, unavailable, new, olds):
    """One pass of the controller: as the Deployment controller, a pass that scales the new
    ReplicaSet up does only that; the next one scales old ReplicaSets down."""
    total = new.replicas + sum(rs.replicas for rs in olds)
    new_target = new_replica_set_target(desired, new, total, surge)
    if new_target != new.replicas:
        return ReplicaSetCount(new.name, new_target, new.available), olds
    olds_target = old_replica_set_targets(desired, unavailable, new, olds)
    olds = [ReplicaSetCount(rs.name, olds_target[rs.name], min(rs.available, olds_target[rs.name])) for rs in olds]
    return new, olds


def rollout(desired, surge, unavailable):
    """Step a rollout from all-old to all-new; yield (pods, available) after every scale step and
    every time new pods become available."""
    new = ReplicaSetCount("new", 0, 0)
    olds = [ReplicaSetCount("old", desired, desired)]
    for _ in range(100):
        new, olds = step(desired, surge, unavailable, new, olds)
        yield new.replicas + sum(r.replicas for r in olds), new.available + sum(r.available for r in olds)
        new, olds = step(desired, surge, unavailable, new, olds)
        yield new.replicas + sum(r.replicas for r in olds), new.available + sum(r.available for r in olds)
        new = ReplicaSetCount("new", new.replicas, new.replicas)  # the new pods become available
        yield new.replicas + sum(r.replicas for r in olds), new.available + sum(r.available for r in olds)
        if new.replicas == desired and not any(r.replicas for r in olds):
            return
    raise AssertionError("the rollout did not finish")


def test_a_default_rollout_of_8_never_has_more_than_10_pods_nor_fewer_than_6_available():
    surge, unavailable = resolve_fenceposts(P("25%"), P("25%"), 8)
    points = list(rollout(8, surge, unavailable))
    assert max(p for p, _ in points) == 10
    assert min(a for _, a in points) == 6
    assert points[-1] == (8, 8)


def test_a_resource_aware_rollout_never_exceeds_the_replica_count():
    surge, unavailable = resolve_fenceposts(P(0), P(1), 4)
    points = list(rollout(4, surge, unavailable))
    assert max(p for p, _ in points) == 4
    assert min(a for _, a in points) == 3


def test_an_availability_rollout_never_loses_capacity():
    surge, unavailable = resolve_fenceposts(P(1), P(0), 4)
    points = list(rollout(4, surge, unavailable))
    assert min(a for _, a in points) == 4
    assert max(p for p, _ in points) == 5


def test_unhealthy_old_pods_are_removed_first_within_the_budget():
    # 4 desired, maxUnavailable 1: at most 4 - 3 = 1 pod may go in this step, and it is an
    # unhealthy one (the old ReplicaSet has 4 pods of which 2 are not available).
    targets = old_replica_set_targets(4, 1, ReplicaSetCount("new", 0, 0), [ReplicaSetCount("old", 4, 2)])
    assert targets == {"old": 3}


def test_the_new_replica_set_waits_when_the_surge_is_spent():
    assert new_replica_set_target(8, ReplicaSetCount("new", 2, 0), 10, 2) == 2
    assert blocked_reasons(8, 2, 2, ReplicaSetCount("new", 2, 0), [ReplicaSetCount("old", 8, 8)])[0].startswith(
        "maxSurge reached: 10 of 10 pods"
    )


def test_old_pods_wait_for_new_ones_to_become_available():
    reasons = blocked_reasons(8, 2, 2, ReplicaSetCount("new", 2, 0), [ReplicaSetCount("old", 6, 6)])
    assert any(r.startswith("maxUnavailable reached: 6 available, at least 6 required") for r in reasons)


def test_a_finished_rollout_has_no_reason_to_wait():
    assert blocked_reasons(8, 2, 2, ReplicaSetCount("new", 8, 8), []) == []
