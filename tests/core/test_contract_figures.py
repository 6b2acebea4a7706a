"""The oracles' budget figures (``tests/contract.py``) match domain.md's rounding rules."""

from __future__ import annotations

import pytest

from tests import contract


@pytest.mark.parametrize(
    "fields, total, expected",
    [
        pytest.param({}, 4, (1, 0, 0), id="defaults are maxUnavailable 1, maxSurge 0, partition 0"),
        pytest.param({"maxUnavailable": "25%"}, 10, (2, 0, 0), id="maxUnavailable 25% of 10 rounds down to 2"),
        pytest.param({"maxSurge": "25%"}, 10, (1, 3, 0), id="maxSurge 25% of 10 rounds up to 3"),
        pytest.param({"partition": "50%"}, 3, (1, 0, 2), id="partition 50% of 3 rounds up to 2"),
        pytest.param({"maxUnavailable": "34%", "maxSurge": 1}, 2, (0, 1, 0), id="34% of 2 groups is 0 unavailable"),
        pytest.param({"maxUnavailable": 3, "maxSurge": "100%", "partition": 1}, 3, (3, 3, 1), id="ints as written"),
    ],
)
def test_budgets_round_as_the_contract_says(fields, total, expected):
    b = contract.budgets(fields, total)
    assert (b.max_unavailable, b.max_surge, b.partition) == expected


def test_role_level_budgets_count_each_roles_instances_and_group_level_ones_count_groups():
    spec = {
        "replicas": 8,
        "rolloutStrategy": {"type": "RoleRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": "50%"}},
        "template": {"roles": [{"name": "a", "replicas": 4, "maxUnavailable": "50%"}, {"name": "b", "replicas": 1}]},
    }
    assert contract.group_budgets(spec).max_unavailable == 4
    assert contract.role_budgets(spec)["a"].max_unavailable == 2
    assert contract.role_budgets(spec)["b"] == contract.Budgets(1, 0, 0)
