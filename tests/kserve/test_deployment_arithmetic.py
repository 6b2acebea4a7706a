"""The Deployment controller's arithmetic, kept as Kubernetes has it: one table per function of
kube-controller-manager (``pkg/controller/deployment``) and its tests, each row the case of the
upstream test it mirrors. The simulated Deployment controller and the dashboard's "why it waits"
decide with these functions (``controller.core.kserve.rolling``, ``apps``)."""

from __future__ import annotations

import pytest

from controller.core.intorpercent import IntOrPercent
from controller.core.kserve.apps import fenceposts, is_complete
from controller.core.kserve.rolling import (
    ReplicaSetCount,
    new_replica_set_target,
    old_replica_set_targets,
    resolve_fenceposts,
)

P = IntOrPercent.parse

# deployment_util_test.go TestResolveFenceposts: (maxSurge, maxUnavailable, desired) -> (surge, unavailable)
FENCEPOSTS = [
    ("0% and 0% of 0 replicas: one may be unavailable, so a rollout moves", "0%", "0%", 0, (0, 1)),
    ("39% of 10: surge rounds up to 4, unavailable down to 3", "39%", "39%", 10, (4, 3)),
    ("integers are taken as written", 1, 1, 2, (1, 1)),
    ("25% of 8: surge 2 (up), unavailable 2 (down)", "25%", "25%", 8, (2, 2)),
    ("both 0 forces unavailable to one", 0, 0, 5, (0, 1)),
]


@pytest.mark.parametrize(
    "surge,unavailable,desired,expected",
    [r[1:] for r in FENCEPOSTS],
    ids=[f"kube ResolveFenceposts: {r[0]}" for r in FENCEPOSTS],
)
def test_resolve_fenceposts_as_kubernetes_does(surge, unavailable, desired, expected):
    assert resolve_fenceposts(P(surge), P(unavailable), desired) == expected


def deployment(replicas: int, surge=None, unavailable=None, *, recreate: bool = False) -> dict:
    if recreate:
        return {"spec": {"replicas": replicas, "strategy": {"type": "Recreate"}}}
    rolling = {k: v for k, v in (("maxSurge", surge), ("maxUnavailable", unavailable)) if v is not None}
    return {"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling}}}


# deployment_util_test.go TestMaxUnavailable (and MaxSurge): the counts for the Deployment
MAX_UNAVAILABLE = [
    ("maxUnavailable less than replicas", deployment(10, 5, 5), 5),
    ("maxUnavailable equal replicas", deployment(10, 5, 10), 10),
    ("maxUnavailable greater than replicas", deployment(5, 5, 10), 5),
    ("maxUnavailable with replicas is 0", deployment(0, 0, 10), 0),
    ("maxUnavailable with Recreate deployment strategy", deployment(10, recreate=True), 0),
    ("maxUnavailable less than replicas with zero surge", deployment(10, 0, 3), 3),
    ("Percentage maxUnavailable", deployment(10, "0%", "30%"), 3),
    ("the apps/v1 defaults are 25% each", deployment(8), 2),
]


@pytest.mark.parametrize(
    "obj,expected", [r[1:] for r in MAX_UNAVAILABLE], ids=[f"kube MaxUnavailable: {r[0]}" for r in MAX_UNAVAILABLE]
)
def test_max_unavailable_of_a_deployment_as_kubernetes_counts_it(obj, expected):
    assert fenceposts(obj)[1] == expected


def test_a_recreate_deployment_has_no_surge_as_kubernetes_max_surge_says():
    assert fenceposts(deployment(10, recreate=True))[0] == 0


# rolling_test.go TestDeploymentController_reconcileNewReplicaSet (maxUnavailable 0):
# (replicas, maxSurge, old replicas, new replicas) -> new replicas after the step
RECONCILE_NEW = [
    ("should not scale up with no surge", 10, 0, 10, 0, 0),
    ("scales up by the surge", 10, 2, 10, 0, 2),
    ("scales up to the room the old ones leave", 10, 2, 5, 0, 7),
    ("waits when the surge is spent", 10, 2, 10, 2, 2),
    ("should scale down a new ReplicaSet above the desired count", 10, 2, 2, 11, 10),
]


@pytest.mark.parametrize(
    "desired,surge,old,new,expected",
    [r[1:] for r in RECONCILE_NEW],
    ids=[f"kube reconcileNewReplicaSet: {r[0]}" for r in RECONCILE_NEW],
)
def test_the_new_replica_set_grows_within_max_surge(desired, surge, old, new, expected):
    surge_count, _ = resolve_fenceposts(IntOrPercent(surge, False), IntOrPercent(0, False), desired)
    target = new_replica_set_target(desired, ReplicaSetCount("new", new, 0), old + new, surge_count)
    assert target == expected


def test_the_new_replica_set_scales_up_to_the_deployment_replicas_as_new_rs_new_replicas_says():
    # deployment_util_test.go TestNewRSNewReplicas "scale up - to depReplicas": 6 wanted, 2 there, surge 10.
    assert new_replica_set_target(6, ReplicaSetCount("new", 2, 2), 2, 10) == 6


# rolling_test.go TestDeploymentController_reconcileOldReplicaSets (maxSurge 0):
# (replicas, maxUnavailable, old, new, old available, new available) -> old replicas after the step
RECONCILE_OLD = [
    ("maxUnavailable 0 still lets one go (the fencepost)", 10, 0, 10, 0, 10, 0, 9),
    ("scales old pods down by maxUnavailable", 10, 2, 10, 0, 10, 0, 8),
    ("cleans up unhealthy old replicas first", 10, 2, 10, 0, 8, 0, 8),
    ("cleans up 1 unhealthy replica and scales 1 ready pod down", 10, 2, 10, 0, 9, 0, 8),
    ("the new ReplicaSet's unavailable pods stop any further scale-down", 10, 2, 8, 2, 8, 0, 8),
]


@pytest.mark.parametrize(
    "desired,unavailable,old,new,old_available,new_available,expected",
    [r[1:] for r in RECONCILE_OLD],
    ids=[f"kube reconcileOldReplicaSets: {r[0]}" for r in RECONCILE_OLD],
)
def test_old_replica_sets_shrink_within_max_unavailable(
    desired, unavailable, old, new, old_available, new_available, expected
):
    _, unavailable_count = resolve_fenceposts(IntOrPercent(0, False), IntOrPercent(unavailable, False), desired)
    targets = old_replica_set_targets(
        desired,
        unavailable_count,
        ReplicaSetCount("new", new, new_available),
        [ReplicaSetCount("old", old, old_available)],
    )
    assert targets == {"old": expected}


def status(replicas: int, updated: int, available: int, observed: int = 1) -> dict:
    return {
        "replicas": replicas,
        "updatedReplicas": updated,
        "availableReplicas": available,
        "observedGeneration": observed,
    }


# deployment_util_test.go TestDeploymentComplete: the Progressing condition's "complete"
COMPLETE = [
    ("not complete: min but not all pods become available", status(5, 5, 4), False),
    ("not complete: all pods are available but not updated", status(5, 4, 5), False),
    ("not complete: still running old pods", status(6, 5, 5), False),
    ("complete", status(5, 5, 5), True),
    ("not complete: the controller has not seen the new spec", status(5, 5, 5, observed=0), False),
]


@pytest.mark.parametrize(
    "deployment_status,expected", [r[1:] for r in COMPLETE], ids=[f"kube DeploymentComplete: {r[0]}" for r in COMPLETE]
)
def test_a_rollout_is_complete_as_kubernetes_decides(deployment_status, expected):
    obj = {"metadata": {"generation": 1}, "spec": {"replicas": 5}, "status": deployment_status}
    assert is_complete(obj) is expected
