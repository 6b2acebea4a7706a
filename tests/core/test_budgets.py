"""The budget arithmetic of a rollout, one table per rule (``controller.core.planner.budgets``).

Each row is a sentence that says the promise it checks, in the manner of LWS's
``rollingUpdateParameters`` tests and Argo Rollouts' ``canary_test.go``.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.core.planner.budgets import (
    RoleReadiness,
    availability_floor,
    group_step,
    ready_baseline,
    replacement_allowed,
    skew_quota,
    started_progress,
    wanted_surge,
)


def rows(*cases):
    """(sentence, *values) -> parametrize values with the sentence as the test id."""
    return pytest.mark.parametrize("case", [c[1:] for c in cases], ids=[c[0] for c in cases])


@rows(
    ("four groups with one unavailable allowed keep three available", 4, 1, 3),
    ("zero unavailable allowed keeps every group available", 4, 0, 4),
    ("a budget as large as the total allows none", 2, 2, 0),
)
def test_availability_floor(case):
    total, max_unavailable, floor = case
    assert availability_floor(total, max_unavailable) == floor


@rows(
    (
        "all four groups available with a floor of three replace only the highest ordinal",
        [0, 1, 2, 3],
        {0, 1, 2, 3},
        3,
        [3],
        [2, 1, 0],
        3,
    ),
    (
        "an unavailable outdated group is replaced first and costs nothing",
        [0, 1, 2, 3],
        {0, 2, 3},
        3,
        [1],
        [3, 2, 0],
        3,
    ),
    (
        "two unavailable allowed replace the two highest ordinals at once",
        [0, 1, 2, 3],
        {0, 1, 2, 3},
        2,
        [3, 2],
        [1, 0],
        2,
    ),
    (
        "a floor already reached lets no available group go",
        [0, 1],
        {0, 1},
        2,
        [],
        [1, 0],
        2,
    ),
    (
        "several unavailable groups all go regardless of the budget",
        [0, 1, 2],
        set(),
        3,
        [2, 1, 0],
        [],
        0,
    ),
    (
        "groups already at the update revision are not candidates (only pending ones are passed)",
        [1],
        {0, 1, 2, 3},
        3,
        [1],
        [],
        3,
    ),
    ("nothing pending replaces nothing", [], {0, 1}, 1, [], [], 2),
)
def test_group_step(case):
    pending, available, floor, replace, wait, after = case
    step = group_step(pending, available, floor)
    assert (step.replace, step.wait, step.available_after) == (replace, wait, after)


@rows(
    ("an unavailable instance may always be replaced", False, 1, 4, 1, True),
    ("an available instance may go while the rest stays at the floor", True, 4, 4, 1, True),
    ("an available instance waits when its going would cross the floor", True, 3, 4, 1, False),
    ("with zero unavailable allowed no available instance may go", True, 4, 4, 0, False),
    ("with zero unavailable allowed a surge instance makes room for one", True, 5, 4, 0, True),
)
def test_replacement_allowed(case):
    candidate_available, available, total, max_unavailable, allowed = case
    assert (
        replacement_allowed(
            candidate_available=candidate_available,
            available=available,
            total=total,
            max_unavailable=max_unavailable,
        )
        is allowed
    )


@rows(
    ("surge is capped by maxSurge while many units are outdated", 2, 5, 2),
    ("surge shrinks with the work left", 2, 1, 1),
    ("no surge is wanted once nothing is outdated", 2, 0, 0),
    ("no surge is wanted when maxSurge is zero", 0, 5, 0),
)
def test_wanted_surge(case):
    max_surge, outdated, wanted = case
    assert wanted_surge(max_surge, outdated) == wanted


@rows(
    ("nothing started is zero progress", 0, 0, 10, Fraction(0)),
    ("ready and in-flight replacements both count as started", 2, 3, 10, Fraction(1, 2)),
    ("started progress never exceeds one", 8, 5, 10, Fraction(1)),
    ("a role with nothing to replace is done", 0, 0, 0, Fraction(1)),
)
def test_started_progress(case):
    ready, in_flight, target, progress = case
    assert started_progress(ready, in_flight, target) == progress


@rows(
    ("the slowest role sets the baseline", [RoleReadiness(5, 10), RoleReadiness(1, 4)], Fraction(1, 4)),
    ("roles that are done do not hold the baseline down", [RoleReadiness(10, 10), RoleReadiness(2, 4)], Fraction(1, 2)),
    ("roles with nothing to replace are ignored", [RoleReadiness(0, 0), RoleReadiness(3, 6)], Fraction(1, 2)),
    ("when every role is done the baseline is one", [RoleReadiness(4, 4), RoleReadiness(2, 2)], Fraction(1)),
    (
        "a dependency holding its last old instance on purpose counts as done",
        [RoleReadiness(4, 5, held=True), RoleReadiness(6, 10)],
        Fraction(6, 10),
    ),
    (
        "without the hold the same dependency would cap its caller at four fifths",
        [RoleReadiness(4, 5), RoleReadiness(10, 10)],
        Fraction(4, 5),
    ),
)
def test_ready_baseline(case):
    roles, baseline = case
    assert ready_baseline(roles) == baseline


@rows(
    ("the seed article's role of 100 instances may start 10 at a skew of 10 percent", 100, Fraction(0), 10),
    ("the seed article's role of 50 instances may start 5", 50, Fraction(0), 5),
    ("the seed article's role of 10 instances may start 1", 10, Fraction(0), 1),
    ("a quota rounds up so a small role can always start one", 3, Fraction(0), 1),
    ("the quota grows with the baseline", 100, Fraction(1, 2), 60),
    ("the quota never exceeds the role's target", 10, Fraction(19, 20), 10),
)
def test_skew_quota_at_ten_percent(case):
    target, baseline, quota = case
    assert skew_quota(target, baseline, Fraction(10, 100)) == quota
