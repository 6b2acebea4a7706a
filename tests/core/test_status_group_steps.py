"""The named steps of ``planner.status._group_entry``: the revisions a group runs and is rebuilt on,
one role's counts in the group, the instances its entry lists, the group's part of the totals and
the entry itself."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.core.plan import BECAUSE_UPDATE
from controller.core.planner import status

ROLE = SimpleNamespace(name="decode", replicas=3)


def _inst(revision="B", role_hash="new", *, draining=False, deleting=False):
    return SimpleNamespace(revision=revision, role_hash=role_hash, draining=draining, deleting=deleting)


def _scope(instances, *, ready=(), rev="B", group_level=False, surge=False, removals=None, recorded=None, o=0):
    """Group ``o`` of role decode: ``instances`` {k: inst}; ``ready`` the ks that are available."""
    return status._GroupScope(
        o=o,
        rev=rev,
        instances={("decode", k): inst for k, inst in instances.items()},
        surge=surge,
        group_level=group_level,
        group_partition=1,
        rev_updated=rev == "B",
        available_of={(o, "decode", k): k in ready for k in instances},
        equivalent={"B"},
        target_hashes={"decode": "new"},
        removals=removals or {},
        recorded_instances=recorded or {},
        referenced=set(),
    )


OLD = _inst("A", "old")


@pytest.mark.parametrize(
    ("instances", "ready", "partition", "expected"),
    [
        pytest.param(
            {0: _inst(), 1: _inst(), 2: _inst()},
            {0, 1, 2},
            0,
            ((3, 3, 3, 0, 0, 3, 3), {"B": 3}, {}, True, True),
            id="three Ready instances on the update are a converged updated role",
        ),
        pytest.param(
            {0: _inst(), 1: _inst()},
            {0, 1},
            0,
            ((3, 2, 2, 1, 0, 2, 2), {"B": 2}, {}, False, False),
            id="a missing instance above the partition leaves the role neither converged nor updated",
        ),
        pytest.param(
            {1: _inst(), 2: _inst()},
            {1, 2},
            1,
            ((3, 2, 2, 1, 0, 2, 2), {"B": 2}, {}, False, True),
            id="a missing instance below the partition keeps the role updated",
        ),
        pytest.param(
            {0: OLD, 1: _inst(), 2: _inst()},
            {0, 1, 2},
            1,
            ((3, 3, 2, 0, 0, 2, 2), {"A": 1, "B": 2}, {"0": "A"}, True, False),
            id="an old instance below the partition is listed and converged but not updated",
        ),
        pytest.param(
            {0: _inst(), 1: _inst(), 2: OLD},
            {0, 1},
            0,
            ((3, 2, 2, 1, 0, 2, 3), {"B": 2, "A": 1}, {"2": "A"}, False, False),
            id="an eligible old instance that is not Ready is unavailable and not converged",
        ),
        pytest.param(
            {0: _inst(draining=True), 1: _inst(), 2: _inst()},
            {0, 1, 2},
            0,
            ((3, 3, 3, 0, 1, 3, 3), {"B": 3}, {}, False, True),
            id="a draining instance is counted and keeps the role from converging",
        ),
    ],
)
def test_one_roles_counts_in_a_group(instances, ready, partition, expected):
    assert status._count_role(_scope(instances, ready=ready), ROLE, partition) == expected


def test_a_missing_instance_keeps_its_recorded_revision_listed_and_referenced():
    scope = _scope({0: _inst(), 1: _inst()}, ready={0, 1}, recorded={(0, "decode", 2): "A"})
    _, _, listed, _, _ = status._count_role(scope, ROLE, 0)
    assert listed == {"2": "A"} and scope.referenced == {"A"}


def test_a_surge_group_desires_no_instance_of_any_role():
    scope = _scope({0: _inst()}, ready={0}, surge=True)
    assert status._count_role(scope, ROLE, 0) == ((0, 0, 0, 0, 0, 0, 0), {}, {}, True, True)
    assert status._extra_instances(scope, {"decode": 3}) == {"decode": 1}


def test_instances_beyond_the_spec_replicas_are_extra():
    scope = _scope({0: _inst(), 3: _inst(), 4: _inst()})
    assert status._extra_instances(scope, {"decode": 3}) == {"decode": 2}


@pytest.mark.parametrize(
    ("removal", "listed"),
    [
        pytest.param(None, True, id="an off-group instance nobody removes is listed"),
        pytest.param(SimpleNamespace(reason=BECAUSE_UPDATE), False, id="one removed for the update is not"),
        pytest.param(SimpleNamespace(reason="failed"), True, id="one removed for another reason is listed"),
    ],
)
def test_an_instance_on_another_revision_is_listed_unless_the_update_removes_it(removal, listed):
    scope = _scope({0: OLD}, removals={} if removal is None else {(0, "decode", 0): removal})
    assert status._listed_apart(scope, "decode", 0) is listed


@pytest.mark.parametrize(
    ("revisions", "expected_revisions"),
    [
        pytest.param({"B": 2}, None, id="one revision is not repeated in the role's line"),
        pytest.param({"A": 1, "B": 1}, {"A": 1, "B": 1}, id="two revisions are shown with their counts"),
    ],
)
def test_a_roles_line_in_the_entry(revisions, expected_revisions):
    line = status._role_counts("decode", (3, 2, 2, 1, 0, 2, 2), 1, revisions)
    expected = {"name": "decode", "desired": 3, "ready": 2, "updated": 2, "unavailable": 1, "surge": 1, "draining": 0}
    assert line == expected | ({"revisions": expected_revisions} if expected_revisions else {})


def _ctx(*, replicas=2, group_revisions=None, role_sizes=None):
    return SimpleNamespace(
        ms=SimpleNamespace(replicas=replicas),
        update_hash="B",
        group_revisions=group_revisions or {},
        equivalent={"B"},
        role_sizes=role_sizes or {"decode": 3},
    )


def _totals(*, group_level=False):
    return status._Totals(roles={}, referenced=set(), group_level=group_level, group_partition=0, role_partitions={})


def _group(revision="A", roles=("decode",)):
    return SimpleNamespace(
        revision=revision, instances={(r, 0): None for r in roles}, revisions=lambda: {revision}, being_removed=False
    )


@pytest.mark.parametrize(
    ("group_level", "group", "recorded", "expected", "referenced"),
    [
        pytest.param(False, _group("A"), {}, ("A", None), {"A"}, id="role-level a group runs its instances' revision"),
        pytest.param(False, None, {}, ("B", None), set(), id="role-level a missing group is rebuilt on the update"),
        pytest.param(
            True, _group("A"), {0: "A"}, ("A", "A"), {"A"}, id="group-level a group runs its recorded revision"
        ),
        pytest.param(True, None, {}, ("B", "B"), {"B"}, id="group-level a group with none recorded runs the update"),
    ],
)
def test_the_revisions_a_group_runs_and_is_rebuilt_on(group_level, group, recorded, expected, referenced):
    totals = _totals(group_level=group_level)
    out = SimpleNamespace(group_removals={})
    ctx = _ctx(group_revisions=recorded)
    assert status._entry_revisions(ctx, out, 0, totals, group) == expected
    assert totals.referenced == referenced


@pytest.mark.parametrize(
    ("o", "walk", "group", "expected"),
    [
        pytest.param(
            0, status._GroupWalk(), _group("B"), (True, True, 1, {}, 1), id="an updated converged group counts updated"
        ),
        pytest.param(
            0,
            status._GroupWalk(updated=False, converged=False),
            _group("A"),
            (False, False, 0, {"A": 1}, 1),
            id="a group not updated counts its revision among the non-updated",
        ),
        pytest.param(
            2, status._GroupWalk(), _group("B"), (True, False, 0, {}, 1), id="a Ready surge group is available only"
        ),
        pytest.param(
            0,
            status._GroupWalk(),
            _group("B", roles=("decode", "gone")),
            (False, False, 0, {"B": 1}, 1),
            id="instances of a role that left the spec keep the group from being updated",
        ),
    ],
)
def test_a_groups_part_of_the_totals(o, walk, group, expected):
    totals = _totals()
    updated = status._add_group_outcome(_ctx(), o, group, group.revision, walk, totals, available=True)
    got = (updated, totals.converged, totals.updated_groups, totals.non_updated_revisions, totals.available_groups)
    assert got == expected


def test_the_entry_lists_only_what_differs():
    walk = status._GroupWalk(notable=[{"name": "decode"}], instance_revisions={"decode/0": "A"})
    entry = status._entry_of(2, 2, "B", "C", None, False, False, walk)
    assert entry == {
        "ordinal": 2,
        "revision": "B",
        "phase": entry["phase"],
        "ready": False,
        "updated": False,
        "targetRevision": "C",
        "surge": True,
        "roles": [{"name": "decode"}],
        "instanceRevisions": {"decode/0": "A"},
    }
    assert status._entry_of(0, 2, "B", "B", None, True, True, status._GroupWalk()).keys() == {
        "ordinal",
        "revision",
        "phase",
        "ready",
        "updated",
    }
