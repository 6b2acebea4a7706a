"""Promote lowers partitions and never raises one (group level and role level)."""

from __future__ import annotations

import pytest

from controller.core import controls
from controller.core.mergepatch import merge_patch

from .harness import manifest, role

ROLE_LEVEL = {"type": "RoleRollingUpdate"}


def role_partitions(ms: dict) -> dict[str, object]:
    return {r["name"]: r.get("partition") for r in ms["spec"]["template"]["roles"]}


def promoted(ms: dict, **kwargs) -> dict:
    return merge_patch(ms, controls.promote(ms, **kwargs))


def role_level(*partitions) -> dict:
    roles = []
    for i, p in enumerate(partitions):
        extra = {} if p is None else {"partition": p}
        roles.append(role(f"r{i}", replicas=4, **extra))
    return manifest(replicas=2, roles=roles, strategy=ROLE_LEVEL)


@pytest.mark.parametrize(
    "partitions, kwargs, expected",
    [
        # one step from the highest (3 -> 2); the role already at 1 stays at 1, not raised to 2
        ((3, 1), {}, {"r0": 2, "r1": 1}),
        # a role without a partition (0) is not given one
        ((3, None), {}, {"r0": 2, "r1": None}),
        # to an explicit value: each role at most that value
        ((3, 1), {"partition": 2}, {"r0": 2, "r1": 1}),
        ((3, 2), {"partition": 0}, {"r0": 0, "r1": 0}),
        # fully: every partition 0
        ((3, 1), {"full": True}, {"r0": 0, "r1": 0}),
        # a percentage counts as what it resolves to: 50% of 4 = 2, one step from 3 -> 2 keeps it
        ((3, "50%"), {}, {"r0": 2, "r1": "50%"}),
    ],
    ids=[
        "one-step-lowers-the-highest-role-and-leaves-a-lower-one-alone",
        "one-step-gives-no-partition-to-a-role-without-one",
        "to-a-value-lowers-only-roles-above-it",
        "to-zero-lowers-every-role",
        "fully-sets-every-role-to-zero",
        "a-percentage-is-compared-by-the-count-it-resolves-to",
    ],
)
def test_promote_at_role_level_never_raises_a_role_partition(partitions, kwargs, expected):
    assert role_partitions(promoted(role_level(*partitions), **kwargs)) == expected


def test_promote_one_step_twice_brings_roles_down_together_once_they_meet():
    ms = promoted(role_level(3, 1))
    ms = promoted(ms)
    assert role_partitions(ms) == {"r0": 1, "r1": 1}
    assert role_partitions(promoted(ms)) == {"r0": 0, "r1": 0}


def test_promote_at_group_level_lowers_the_group_partition_by_one():
    ms = manifest(strategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"partition": 3}})
    assert promoted(ms)["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["partition"] == 2


def test_promote_refuses_to_raise_the_partition_naming_the_field():
    with pytest.raises(controls.ControlError) as err:
        controls.promote(role_level(1, 0), partition=3)
    assert err.value.field == "partition"
