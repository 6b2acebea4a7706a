"""The path router's fast least-busy pick and kept path table equal the plain scan and a fresh build."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.spec import SCOPE_GROUP, Traffic
from controller.simcluster import paths
from controller.simcluster.memory.router import InFlightCounts
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]

ROLES = ("a", "b", "c")
# Revision A: a1 b1 c1; B changes b; C changes c from B. Pods of a revision no longer stored ("Z")
# are compatible with their own only.
HISTORY = {"A": {"a": "a1", "b": "b1", "c": "c1"}, "B": {"a": "a1", "b": "b2", "c": "c1"}}
HISTORY["C"] = {"a": "a1", "b": "b2", "c": "c2"}


def _revisions() -> paths.Revisions:
    compat: dict[tuple[str, str], set[str]] = {}
    for rev, roles in HISTORY.items():
        for role, rhash in roles.items():
            compat.setdefault((role, rhash), set()).add(rev)
    return paths.Revisions({k: frozenset(v) for k, v in compat.items()}, {r: i + 1 for i, r in enumerate(HISTORY)})


def _pod(name: str, role: str, revision: str, group: int) -> dict:
    rhash = HISTORY.get(revision, {}).get(role, "zz")
    labels = {
        naming.LABEL_ROLE: role,
        naming.LABEL_REVISION: revision,
        naming.LABEL_ROLE_TEMPLATE_HASH: rhash,
        naming.LABEL_GROUP_ORDINAL: str(group),
    }
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels}}


# A pod: (role, revision, group, requests in flight); names are drawn so that their order is not
# the order the pods are listed in.
_pods = st.lists(
    st.tuples(st.sampled_from(ROLES), st.sampled_from("ABCZ"), st.integers(0, 2), st.integers(0, 3)),
    max_size=14,
).flatmap(lambda specs: st.tuples(st.just(specs), st.permutations(range(len(specs)))))


def _listed(drawn) -> tuple[list[dict], dict[str, int]]:
    specs, names = drawn
    pods, load = [], {}
    for (role, revision, group, busy), n in zip(specs, names, strict=True):
        pods.append(_pod(f"p{n:02d}", role, revision, group))
        load[f"uid-p{n:02d}"] = busy
    return pods, load


def _counts(load: dict[str, int]) -> InFlightCounts:
    """The memory router's count source over ``load`` (requests in flight by pod uid)."""
    return InFlightCounts({uid: dict.fromkeys(range(n)) for uid, n in load.items()})


def _names(pods) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


@settings(max_examples=300, deadline=None)
@given(_pods)
def test_the_first_least_busy_of_pods_in_name_order_is_the_pod_the_reference_scan_picks(drawn):
    pods, load = _listed(drawn)
    in_order = sorted(pods, key=lambda p: p["metadata"]["name"])
    by_uid = _counts(load)
    plain = lambda p: load[p["metadata"]["uid"]]  # noqa: E731 - a count source without ``each``
    reference = paths._least_busy(pods, plain)
    assert paths._first_least_busy(in_order, by_uid) is reference
    assert paths._first_least_busy(in_order, plain) is reference


def _reference_choose(traffic: Traffic, pods: list[dict], revisions: paths.Revisions, count):
    """The module docstring's rules as a plain scan of the listed pods at every hop."""
    roles = traffic.path

    def unit(p):
        return (paths.group_of(p) or "") if traffic.scope == SCOPE_GROUP else ""

    def compat(p):
        return paths.compatible(p, revisions)

    def of(u, role):
        return [p for p in pods if paths.role_of(p) == role and unit(p) == u]

    def feasible(u):
        return paths.consistent_revisions(frozenset().union(*map(compat, of(u, r))) for r in roles)

    complete = {unit(p) for p in pods if all(of(unit(p), r) for r in roles)}
    firsts = [
        p
        for p in pods
        if paths.role_of(p) == roles[0]
        and unit(p) in complete
        and (not traffic.affine or compat(p) & feasible(unit(p)))
    ]
    first = paths._least_busy(firsts, count)
    if first is None:
        return None
    hops, common = [first], compat(first) & feasible(unit(first))
    for role in roles[1:]:
        candidates = [p for p in of(unit(first), role) if not traffic.affine or compat(p) & common]
        hop = paths._least_busy(candidates, count)
        if hop is None:
            return None
        hops.append(hop)
        common = common & compat(hop)
    if not traffic.affine:
        common = paths.consistent_revisions(map(compat, hops))
    return _names(hops), common


@settings(max_examples=300, deadline=None)
@given(_pods, st.sampled_from(["group", "any"]), st.sampled_from(["revisionAffine", "blind"]))
def test_a_path_table_routes_a_request_down_the_pods_the_plain_scan_of_the_rules_picks(drawn, scope, routing_):
    pods, load = _listed(drawn)
    traffic, revisions = Traffic(ROLES, scope, routing_), _revisions()
    choice = paths.PathTable(traffic, pods, revisions).choose(_counts(load))
    expected = _reference_choose(traffic, pods, revisions, lambda p: load[p["metadata"]["uid"]])
    assert (None if choice is None else (_names(choice.pods), choice.revisions)) == expected


def _shape(table: paths.PathTable) -> tuple:
    """What a table routes by, with its pods by identity."""

    def ids(pods):
        return [id(p) for p in pods]

    units = {u: {r: ids(pods) for r, pods in by_role.items()} for u, by_role in table.units.items()}
    by_revision = {k: ids(pods) for k, pods in table.by_revision.items()}
    lists = (ids(table.first_affine), ids(table.first_blind))
    return units, by_revision, lists, table.compat, table.feasible, table.starts, table.revisions.compat


@pytest.mark.parametrize(
    "scenario",
    [
        "examples/scenarios/paths-pd-affine.yaml",
        "examples/scenarios/paths-pd-blind.yaml",
        "tests/scenarios/canary-slow-ttft.yaml",
    ],
)
def test_the_routers_kept_path_table_equals_one_built_from_its_routable_pods_after_every_change(scenario):
    runner = Runner(load_scenario(ROOT / scenario))
    router, store = runner.router, runner.store
    ns, name = runner.scenario.namespace, runner.scenario.ms_name
    kept = []

    def check(change):
        table = router._table
        if table is None:
            return
        revisions = paths.Revisions.of(store.list_revisions(ns, name))
        assert _shape(table) == _shape(paths.PathTable(router._spec_traffic, router._routable_pods(), revisions))
        kept.append(change.kind)

    store.add_listener(check)  # after the router's: it sees the change the router has taken
    runner.run()
    assert "Pod" in kept
