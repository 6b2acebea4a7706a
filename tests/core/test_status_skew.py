"""The skew figure in status is the one the planner enforces: per ServingGroup, between the
coordinated roles only, net of the partition, with maxSkew and the lead the start quotas allow."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.core.planner.status import _coordinated_skew
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.paths import EXAMPLE_SCENARIOS, TEST_SCENARIOS

P = Fraction(1, 100)


@pytest.mark.parametrize(
    "ready, max_skew, skew, limit",
    [
        ({"a": (1, 4), "b": (0, 3)}, 10 * P, Fraction(1, 4), Fraction(1, 3)),
        ({"a": (2, 4), "b": (2, 4)}, 20 * P, Fraction(0), 25 * P),
        ({"a": (4, 4), "b": (4, 4)}, 20 * P, Fraction(0), 20 * P),
        ({"a": (3, 3), "b": (0, 2)}, 20 * P, Fraction(0), Fraction(1, 2)),
        ({"a": (0, 0), "b": (1, 2), "c": (0, 2)}, 20 * P, Fraction(1, 2), Fraction(1, 2)),
    ],
    ids=[
        "rounding-up-lets-a-small-role-lead-by-one-instance-above-maxSkew",
        "level-roles-have-no-skew-and-may-lead-by-the-quota",
        "a-finished-group-shows-maxSkew-as-its-limit",
        "a-role-that-is-done-or-unchanged-leads-nobody",
        "a-role-whose-every-instance-is-protected-by-the-partition-is-left-out",
    ],
)
def test_the_coordinated_skew_of_one_group(ready, max_skew, skew, limit):
    assert _coordinated_skew(ready, max_skew) == (skew, limit)


def views_of(path) -> list[dict]:
    runner = Runner(load_scenario(path))
    views: list[dict] = []
    runner.kind.on_pass.append(lambda t, result: views.append(result.view))
    runner.run()
    return views


def test_a_coordinated_rollout_never_shows_a_skew_above_what_the_quotas_allow():
    views = views_of(TEST_SCENARIOS / "pd-coordinated.yaml")
    skews = [v["skew"] for v in views if "skew" in v]
    assert skews and all(s["maxSkewPercent"] == 20 for s in skews)
    assert all(s["percent"] <= s["limitPercent"] + 0.01 for s in skews), max(skews, key=lambda s: s["percent"])
    assert any(s["percent"] > 0 for s in skews)  # it did move unevenly at some point


def test_without_coordination_the_state_has_no_skew_figure():
    views = views_of(EXAMPLE_SCENARIOS / "group-rolling.yaml")
    assert views and all("skew" not in v for v in views)
