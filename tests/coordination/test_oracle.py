"""The coordination oracle (``helpers.check_pass``) is not vacuous: a pass that breaks a rule of
domain.md is reported, in words. The broken passes are written by hand on a converged cluster (the
planner never makes them), so each rule is seen failing once."""

from __future__ import annotations

from fractions import Fraction

import pytest

from .helpers import (
    check_pass,
    converged_cluster,
    coordinated,
    manifest,
    role,
    role_views,
    set_images,
    target_role_hashes,
)


def rolled_out(counts: dict[str, int], deps=None, **role_fields):
    roles = [role(n, replicas=c, **role_fields) for n, c in counts.items()]
    cluster, _ = converged_cluster(
        manifest(replicas=1, roles=roles, strategy=coordinated("10%", deps), drain={"timeoutSeconds": 0})
    )
    set_images(cluster, "engine:v2")
    return cluster


def take_away(cluster, role_name: str, ordinals) -> None:
    """What a delete does to the pods of an instance before the kubelet acts."""
    for pod in cluster.pods.values():
        labels = pod["metadata"]["labels"]
        if (
            labels["serving.rolloutui.io/role"] == role_name
            and int(labels["serving.rolloutui.io/role-ordinal"]) in ordinals
        ):
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def judge(cluster, change, *, deps=None, **rules) -> list[str]:
    hashes = target_role_hashes(cluster)
    before = role_views(cluster, hashes=hashes)
    change(cluster)
    after = role_views(cluster, hashes=hashes)
    problems: list[str] = []
    check_pass(Fraction(10, 100), deps or {}, {}, problems, **rules)(None, [before], [after])
    return problems


def test_a_pass_within_every_rule_is_not_reported():
    cluster = rolled_out({"a": 10, "b": 10}, maxUnavailable=2)
    assert judge(cluster, lambda c: (take_away(c, "a", {9}), take_away(c, "b", {9}))) == []


def test_more_replacements_than_the_skew_quota_are_reported():
    cluster = rolled_out({"a": 10, "b": 10}, maxUnavailable=5)
    problems = judge(cluster, lambda c: take_away(c, "a", {7, 8, 9}), budgets=False)
    assert problems == ["group 0 a: 3 replacements started > quota 1 (minReadyProgress 0, T 10)"]


def test_taking_away_more_than_max_unavailable_is_reported():
    cluster = rolled_out({"a": 4}, maxUnavailable=1)
    problems = judge(cluster, lambda c: take_away(c, "a", {2, 3}), bound=False)
    assert problems == ["group 0 a: 2 available < replicas 4 - maxUnavailable 1 (and 4 before the pass)"]


@pytest.mark.parametrize("surge, instances", [(0, 5), ("25%", 6)])
def test_more_instances_than_replicas_plus_max_surge_are_reported(surge, instances):
    cluster = rolled_out({"a": 4}, maxUnavailable=1, maxSurge=surge)
    hashes = target_role_hashes(cluster)
    before = role_views(cluster, hashes=hashes)
    template = next(p for p in cluster.pods.values() if p["metadata"]["labels"]["serving.rolloutui.io/role"] == "a")
    for k in range(4, instances + (1 if surge else 0)):
        extra = {**template, "metadata": {**template["metadata"], "name": f"ms-0-a-{k}-0"}}
        extra["metadata"]["labels"] = {**template["metadata"]["labels"], "serving.rolloutui.io/role-ordinal": str(k)}
        cluster.pods[extra["metadata"]["name"]] = extra
    after = role_views(cluster, hashes=hashes)
    problems: list[str] = []
    check_pass(Fraction(1), {}, {}, problems, bound=False)(None, [before], [after])
    ceiling = 4 + (1 if surge else 0)  # maxSurge 25% of 4 rounds up to 1
    assert problems == [f"group 0 a: {after['a'].existing} instances exist > replicas 4 + maxSurge {ceiling - 4}"]


def test_a_caller_started_before_its_dependency_has_new_ready_capacity_is_reported():
    cluster = rolled_out({"a": 4, "b": 4}, deps={"a": ["b"]}, maxUnavailable=1)
    problems = judge(cluster, lambda c: take_away(c, "a", {3}), deps={"a": ["b"]})
    assert problems == ["group 0: a started before a new b was Ready"]


def test_no_old_dependency_kept_while_an_old_caller_exists_is_reported():
    cluster = rolled_out({"a": 2, "b": 2}, deps={"a": ["b"]}, maxUnavailable="100%")
    problems = judge(cluster, lambda c: take_away(c, "b", {0, 1}), deps={"a": ["b"]}, bound=False)
    assert problems == ["group 0: an old a exists but no old b is kept"]
