"""With a cache (``passcache``), the planner memoises a group's availability and its "nothing to
recover" verdict by the observed group (reused while its pods are the same parses), keyed by the
pass's shape: whatever else those
figures read. Reusing the very same observation under another spec or history must give the figures
of that spec and history, never the memoised ones."""

from __future__ import annotations

import copy

import pytest

from controller.core import naming
from controller.core.observe import observe
from controller.core.planner import plan
from controller.core.planner.context import build_context
from controller.core.spec import parse_modelserving

from .harness import manifest, role
from .support import (
    NAME,
    NS,
    ROLLOUTS,
    cache_of,
    deploy,
    every_pass_of_a_rollout,
    history,
    patch_spec,
    plan_with_and_without_memos,
    status,
)


def converged(roles=None, replicas=2):
    cluster, _ = deploy(manifest(replicas=replicas, roles=roles or [role("serve", workers=1)]))
    pods = cluster.list_pods(NS, NAME)  # with resourceVersions, as a cluster lists them
    return cluster, pods


def context(cluster, observed, hist=None):
    ms = parse_modelserving(cluster.ms[(NS, NAME)])
    return build_context(ms, hist or history(cluster), observed, 0.0, status(cluster), None, cache_of(cluster))


def observe_(cluster, pods):
    """``observe`` through the cluster's controller cache, as its passes do."""
    return observe(pods, cache=cache_of(cluster))


def plan_(cluster, manifest_, pods):
    cache = cache_of(cluster)
    return plan(
        parse_modelserving(manifest_),
        history(cluster),
        observe(pods, cache=cache),
        0.0,
        status=status(cluster),
        cache=cache,
    )


def test_the_same_observation_twice_gives_the_same_availability():
    cluster, pods = converged()
    observed = observe_(cluster, pods)
    first = context(cluster, observed)
    again = context(cluster, observe_(cluster, pods))
    assert observe_(cluster, pods).groups[0] is observed.groups[0]  # the reuse this memo relies on
    assert first.group_available == again.group_available == {0: True, 1: True}
    assert first.instance_available == again.instance_available


def test_a_revision_that_can_no_longer_be_read_changes_the_availability_of_unchanged_groups():
    """With its revision unreadable, a group's instances are held to the spec's pod count."""
    cluster, pods = converged()
    observed = observe_(cluster, pods)
    assert context(cluster, observed).group_available == {0: True, 1: True}
    # The spec now wants 2 workers; the stored revision the pods run (1 worker) is corrupted, so
    # the pods expected per instance come from the spec: 3, and the 2-pod instances fall short.
    patch_spec(cluster, {"template": {"roles": [role("serve", workers=2)]}})
    hist = history(cluster)
    for rev in hist.revisions:
        rev.data = None
    ctx = context(cluster, observed, hist)
    assert ctx.group_available == {0: False, 1: False}
    # And back: the readable history gives the memoised-then-recomputed figures again.
    assert context(cluster, observed).group_available == {0: True, 1: True}


def test_a_role_scaled_up_gets_its_new_instance_although_the_groups_pods_did_not_change():
    cluster, pods = converged()
    plan_(cluster, cluster.ms[(NS, NAME)], pods)
    patch_spec(cluster, {"template": {"roles": [role("serve", replicas=2, workers=1)]}})
    result = plan_(cluster, cluster.ms[(NS, NAME)], pods)
    created = {(a.group, a.role, a.ordinal) for a in result.actions if a.verb == "create"}
    assert {(0, "serve", 1), (1, "serve", 1)} <= created


def test_a_lost_role_under_another_policy_is_still_recovered():
    """The "nothing to recover" verdict holds for RoleRecreate only: under ServingGroupRecreate a
    group missing an instance it had is rebuilt, memo or not."""
    cluster, pods = converged(roles=[role("prefill"), role("decode")])
    plan_(cluster, cluster.ms[(NS, NAME)], pods)
    manifest_now = copy.deepcopy(cluster.ms[(NS, NAME)])
    manifest_now["spec"]["recoveryPolicy"] = "ServingGroupRecreate"
    without_decode_0 = [p for p in pods if not p["metadata"]["name"].startswith(f"{NAME}-0-decode-")]
    result = plan_(cluster, manifest_now, without_decode_0)
    assert any(a.group == 0 and a.verb in ("delete", "drain") for a in result.actions)


@pytest.mark.parametrize("rollout", list(ROLLOUTS), ids=list(ROLLOUTS))
def test_every_pass_of_a_rollout_plans_the_same_with_and_without_the_memos(rollout):
    """Through a whole rollout (pods changing a few at a time, groups replaced, a pod lost midway),
    the memoised availability, recovery verdict and status entries never change a plan."""

    def same_plan(cluster, clock, n):
        memoised, fresh = plan_with_and_without_memos(cluster, clock)
        assert memoised == fresh, f"pass {n}"

    every_pass_of_a_rollout(rollout, same_plan)


def test_a_pod_whose_resource_version_became_empty_is_parsed_anew_not_taken_from_its_old_entry():
    """The fast path re-reads the pods whose version moved; one that can no longer key the cache
    (an empty resourceVersion) must not be answered with the parse of its previous version."""
    cluster, pods = converged()
    observe_(cluster, pods)
    changed = copy.deepcopy(pods)
    victim = changed[0]
    victim["metadata"]["resourceVersion"] = ""
    victim["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    observed = observe_(cluster, changed)
    group = observed.groups[int(victim["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL])]
    assert group.deleting
