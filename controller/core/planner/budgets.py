"""The budget arithmetic of a rollout, as small pure functions of plain numbers.

Every rule that says "how many may change now" lives here, so it can be read and table-tested on
its own (``tests/core/test_budgets.py``); the decision modules only gather the numbers.

- **Availability floor**: at least ``total - maxUnavailable`` available at all times.
- **Group step** (ServingGroupRollingUpdate): which outdated groups start their replacement now.
- **Replacement allowed** (role level): may one more instance of a role leave service now.
- **Wanted surge**: how many surge groups or instances should exist.
- **Skew quota** and **ready baseline** (coordinated roles): how many replacements a role may have
  started given how far the slowest role is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction


def availability_floor(total: int, max_unavailable: int) -> int:
    """The fewest available units the budget allows. Example: 4 groups, maxUnavailable 1 -> 3."""
    return total - max_unavailable


@dataclass(frozen=True, slots=True)
class GroupStep:
    replace: list[int]  # ordinals whose replacement starts now, in this order
    wait: list[int]  # ordinals that wait for the budget, in this order
    available_after: int  # available groups once the replacements started


def group_step(pending: Iterable[int], available: set[int], floor: int) -> GroupStep:
    """Which outdated groups start their replacement now.

    Unavailable ones go first and always (replacing them costs no availability); then available
    ones from the highest ordinal, as long as the available count stays at or above the floor.

    Example: pending 0-3 all available, floor 3 -> replace [3], wait [2, 1, 0]. Pending 0-3 with 1
    unavailable, floor 3 -> replace [1] (free), then 3 would leave 2 < 3: wait [3, 2, 0].
    """
    count = len(available)
    replace: list[int] = []
    wait: list[int] = []
    for o in sorted(pending, key=lambda o: (o in available, -o)):
        if o not in available:
            replace.append(o)
        elif count - 1 >= floor:
            replace.append(o)
            count -= 1
        else:
            wait.append(o)
    return GroupStep(replace, wait, count)


def replacement_allowed(*, candidate_available: bool, available: int, total: int, max_unavailable: int) -> bool:
    """May this instance leave service for its replacement now? An unavailable one always may; an
    available one only while the rest stays at or above the floor.

    Example: 4 instances, maxUnavailable 1, all 4 available -> yes (3 >= 3); 3 available -> no.
    """
    if not candidate_available:
        return True
    return available - 1 >= availability_floor(total, max_unavailable)


def wanted_surge(max_surge: int, outdated: int) -> int:
    """Surge units wanted while a rollout runs: one per outdated unit, at most maxSurge.

    Example: maxSurge 2 with 5 groups still outdated -> 2; with 1 left -> 1; with none -> 0.
    (Paused, a rollout keeps the surge it has and makes none: the callers decide that.)
    """
    return min(max_surge, outdated)


def started_progress(ready: int, in_flight: int, target: int) -> Fraction:
    """A role's replacements started (Ready on the target plus in flight) over its target.
    A role with nothing to replace (target 0) is done: 1."""
    if target == 0:
        return Fraction(1)
    return Fraction(min(ready + in_flight, target), target)


@dataclass(frozen=True, slots=True)
class RoleReadiness:
    ready: int  # instances on the target template and Ready (surge not counted)
    target: int  # eligible instances: replicas - partition
    held: bool = False  # its last old instance is kept back on purpose by the teardown order


def ready_baseline(roles: Iterable[RoleReadiness]) -> Fraction:
    """The lowest Ready progress among roles still rolling out (1 when none is).

    A dependency's last old instance kept back by the teardown order is not lagging: it is held on
    purpose until its old callers are gone, so it counts as done here. Without that, B=5 holding
    one old instance sits at 80% and caps its caller A=10 at ceil(0.9 * 10) = 9 of 10 replacements:
    A could never finish, so B could never let go (a permanent wait).
    """
    baseline = Fraction(1)
    for role in roles:
        if role.target == 0:
            continue
        ready = min(role.ready + 1, role.target) if role.held else role.ready
        if ready < role.target:
            baseline = min(baseline, Fraction(ready, role.target))
    return baseline


def skew_quota(target: int, baseline: Fraction, max_skew: Fraction) -> int:
    """How many replacements a coordinated role may have started (in flight included):
    ``min(T, ceil(min(1, baseline + maxSkew) * T))``.

    Example (the seed article): A=100, B=50, C=10 instances, all at 0, maxSkew 10% -> 10, 5, 1.
    """
    return min(target, math.ceil(min(Fraction(1), baseline + max_skew) * target))
