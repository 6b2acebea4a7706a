"""The named steps of the preview service (``services.simulation.preview``), one table each: the
load the copy takes, the progress callback's wall-time budget, and the timeline shaped for the page
(capacity steps, distinct blocked reasons, the floor). The preview run on a copy is in
``test_preview.py``; the whole service on the live stack in ``tests/live``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.core.spec import parse_modelserving
from controller.models import SimTraffic
from controller.runtime.simulator import Span, Traffic
from rolloutui.services.simulation import (
    PreviewTooLong,
    _offered_traffic,
    _preview_result,
    _progress_reporter,
    capacity_steps,
    distinct_reasons,
)
from tests.factories import group_strategy, modelserving


def sample(t: float, available: int, *blocked: str) -> SimpleNamespace:
    return SimpleNamespace(t=t, available=available, blocked=list(blocked))


@pytest.mark.parametrize(
    "availability, expected",
    [
        pytest.param([], [], id="no samples have no steps"),
        pytest.param([4], [[0, 4]], id="the first sample is always a step"),
        pytest.param([4, 4, 3, 3, 4], [[0, 4], [2, 3], [4, 4]], id="a step at each change of the available groups"),
        pytest.param([2, 2, 2], [[0, 2]], id="an unchanged capacity is one step"),
    ],
)
def test_the_capacity_step_keeps_each_change_of_the_available_groups(availability, expected):
    assert capacity_steps([sample(t, a) for t, a in enumerate(availability)]) == expected


@pytest.mark.parametrize(
    "blocked, expected",
    [
        pytest.param([[]], [], id="no reasons are none"),
        pytest.param(
            [["waiting for 5 in-flight request(s)"], ["waiting for 4 in-flight request(s)"]],
            ["waiting for 5 in-flight request(s)"],
            id="reasons that differ only in numbers are one reason with the first wording",
        ),
        pytest.param([["a", "b"], ["b", "a", "c"]], ["a", "b", "c"], id="reasons keep the order they first appear in"),
        pytest.param([["", None, "a"]], ["a"], id="empty reasons are left out"),
    ],
)
def test_the_reasons_step_gives_each_blocked_reason_once(blocked, expected):
    assert distinct_reasons([sample(t, 1, *reasons) for t, reasons in enumerate(blocked)]) == expected


def test_the_progress_step_stops_a_preview_past_its_wall_time_budget_naming_where_it_was():
    progress = _progress_reporter(-1.0, None)  # any elapsed time is past a negative budget
    with pytest.raises(PreviewTooLong, match=r"stopped after -1.0 s of computation \(rollout, 42 simulated seconds\)"):
        progress("rollout", 42.0)


def test_the_progress_step_within_its_budget_and_without_a_job_does_nothing():
    assert _progress_reporter(3600.0, None)("rollout", 1.0) is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    "rows, expected",
    [
        pytest.param([], None, id="no traffic row is no load"),
        pytest.param([dict(rps=0.0)], None, id="a row of zero requests per second is no load"),
        pytest.param(
            [dict(rps=4.0, duration_low=2.0, duration_high=6.0)], Traffic(4.0, Span(2.0, 6.0)), id="the rate and span"
        ),
        pytest.param(
            [dict(rps=4.0, duration_low=5.0, duration_high=1.0)],
            Traffic(4.0, Span(5.0, 5.0)),
            id="a span written backwards is raised to its low end",
        ),
        pytest.param([dict(name="other", rps=4.0)], None, id="another modelservings traffic is not this ones"),
    ],
)
def test_the_traffic_step_gives_the_copy_the_load_the_modelserving_takes(rows, expected):
    for row in rows:
        SimTraffic.objects.create(**{"namespace": "default", "name": "demo", **row})
    assert _offered_traffic("default", "demo") == expected


@pytest.mark.django_db
@pytest.mark.parametrize(
    "replicas, budgets, floor",
    [
        pytest.param(4, {"maxUnavailable": 1}, 3, id="four groups with one unavailable keep three"),
        pytest.param(4, {"maxUnavailable": "50%"}, 2, id="half of four unavailable keeps two"),
        pytest.param(1, {"maxUnavailable": 2}, 0, id="the floor never goes below zero"),
    ],
)
def test_the_result_step_shapes_the_timeline_for_the_page(replicas, budgets, floor):
    parsed = parse_modelserving(modelserving(name="demo", replicas=replicas, strategy=group_strategy(**budgets)))
    timeline = SimpleNamespace(
        converged_after=12.0,
        converged=True,
        baseline_converged=True,
        samples=[sample(0, replicas), sample(5, replicas - 1, "waiting for 2 pods"), sample(9, replicas)],
        simulated_seconds=20.0,
        nodes=[],
        requests=None,
    )
    result = _preview_result(timeline, parsed)
    assert (result["desired"], result["floor"], result["minAvailable"]) == (replicas, floor, replicas - 1)
    assert result["capacity"] == [[0, replicas], [5, replicas - 1], [9, replicas]]
    assert result["blockedReasons"] == ["waiting for 2 pods"]
