"""The figures of ``docs/concepts.md`` computed from a manifest, for the tests' oracles.

Written from the contract's words, not from ``controller.core.strategy``, so an oracle that uses
them does not inherit a rounding mistake of the code it checks:

- ``maxUnavailable``: int or percent, rounds down, default 1;
- ``maxSurge``: int or percent, rounds up, default 0;
- ``partition``: int or percent, rounds up, default 0;
- at group level they count ServingGroups (``spec.replicas``); for role-level strategies the same
  fields on each role count that role's instances inside each group (``role.replicas``).

Worked example: ``maxUnavailable: "25%"`` of 10 groups is 2 (2.5 rounded down), ``maxSurge:
"25%"`` of 10 is 3 (rounded up), ``partition: "50%"`` of 3 is 2 (1.5 rounded up).

The strategy sources beyond the object (cluster defaults, the multi-node override) are not
modelled: these helpers are for manifests that carry their own values or rely on the built-in
defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

GROUP_LEVEL = "ServingGroupRollingUpdate"


def count(value, total: int, *, round_up: bool, default: int) -> int:
    """An int-or-percent budget against ``total``."""
    if value is None:
        return default
    if isinstance(value, str) and value.endswith("%"):
        share = Fraction(int(value[:-1]), 100) * total
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


@dataclass(frozen=True)
class Budgets:
    max_unavailable: int
    max_surge: int
    partition: int


def budgets(fields: dict, total: int) -> Budgets:
    """The budgets written in ``fields`` (a rollingUpdateConfiguration or a role) over ``total``."""
    return Budgets(
        max_unavailable=count(fields.get("maxUnavailable"), total, round_up=False, default=1),
        max_surge=count(fields.get("maxSurge"), total, round_up=True, default=0),
        partition=count(fields.get("partition"), total, round_up=True, default=0),
    )


def strategy_type(spec: dict) -> str:
    return (spec.get("rolloutStrategy") or {}).get("type") or GROUP_LEVEL


def group_budgets(spec: dict) -> Budgets:
    """Group-level budgets, counting ServingGroups."""
    config = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    return budgets(config, int(spec.get("replicas", 1)))


def role_budgets(spec: dict) -> dict[str, Budgets]:
    """Per-role budgets (role-level strategies), counting the role's instances in one group."""
    return {r["name"]: budgets(r, int(r.get("replicas", 1))) for r in spec["template"]["roles"]}
