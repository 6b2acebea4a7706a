"""How long a plan holds (``Plan.holds_for``): for the same inputs, the time until a decision of the
pass or its ``requeue_after`` could change by the clock alone. A caller whose inputs did not change
replays the plan within that time instead of planning again (``plan.still_holds``); the runner's
traces prove it on whole scenarios (``tests/sim/test_sim_skip_unchanged.py``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.core.plan import HOLD_MARGIN_SECONDS, still_holds
from controller.core.planner import _wake_at_progress_deadline, drain
from controller.core.planner.builder import MIN_REQUEUE_SECONDS, PlanBuilder
from controller.core.workqueue import RESYNC_SECONDS

from .test_drain_cases import _pod, _remove


def _builder() -> PlanBuilder:
    return PlanBuilder(SimpleNamespace(now=100.0))


@pytest.mark.parametrize(
    ("polls", "deadlines", "changes", "requeue", "holds"),
    [
        pytest.param([], [], [], None, None, id="a plan with nothing timed holds for ever"),
        pytest.param([0.5], [], [], 0.5, None, id="a poll alone holds for ever (the same wait at any time)"),
        pytest.param([0.5], [3.2], [], 0.5, 2.7, id="a deadline behind a poll holds until the poll no longer wins"),
        pytest.param([0.5], [0.3], [], 0.3, 0.0, id="a deadline that is the soonest wait holds only now"),
        pytest.param([], [0.01], [], MIN_REQUEUE_SECONDS, 0.01 - MIN_REQUEUE_SECONDS, id="a clamped deadline never"),
        pytest.param([2.0], [9.0, 4.0], [], 2.0, 2.0, id="the soonest deadline counts"),
        pytest.param([0.5], [], [40.0], 0.5, 40.0, id="a decision that changes by itself bounds it"),
        pytest.param([0.5], [3.0], [1.0], 0.5, 1.0, id="whichever comes first"),
    ],
)
def test_a_plan_holds_until_its_first_time_based_decision_or_wait_could_change(
    polls, deadlines, changes, requeue, holds
):
    out = _builder()
    for seconds in polls:
        out.requeue(seconds)
    for seconds in deadlines:
        out.requeue_at_deadline(seconds)
    for seconds in changes:
        out.changes_in(seconds)
    assert out.requeue_after == (None if requeue is None else pytest.approx(requeue))
    assert out.holds_for() == (None if holds is None else pytest.approx(holds))


@pytest.mark.parametrize(
    ("holds_for", "elapsed", "holds"),
    [
        pytest.param(None, 1e9, True, id="a plan without a timed decision always"),
        pytest.param(2.7, 0.5, True, id="within the time it holds"),
        pytest.param(2.7, 2.7, False, id="not at its end"),
        pytest.param(2.7, 2.7 - HOLD_MARGIN_SECONDS / 2, False, id="not within float rounding of its end"),
        pytest.param(0.0, 0.0, False, id="a plan that holds only now never again"),
    ],
)
def test_a_plan_is_replayed_only_strictly_within_the_time_it_holds(holds_for, elapsed, holds):
    assert still_holds(holds_for, elapsed) is holds


@pytest.mark.parametrize(
    ("draining_since", "holds"),
    [
        pytest.param(
            150.0, 50.0 - drain.DRAIN_POLL_SECONDS, id="a young drain holds until its timeout is nearer than the poll"
        ),
        pytest.param(100.2, 0.0, id="a drain whose timeout comes before the poll holds only now"),
    ],
)
def test_a_waiting_drain_holds_until_its_timeout_is_nearer_than_the_poll(draining_since, holds):
    out = _remove([_pod("e-0", draining_since=draining_since)], {"e-0": 3})
    assert out.holds_for() == pytest.approx(holds, abs=1e-9)


def test_a_drain_holds_the_same_requeue_at_every_time_it_holds_for():
    """Replaying is exact: planned again at any time the plan holds, the same drain asks for the
    same pass and decides the same (in-flight counts unchanged)."""
    first = _remove([_pod("e-0", draining_since=150.0)], {"e-0": 3})
    for later in (0.5, 10.0, 49.0):
        ctx = SimpleNamespace(
            now=drain_now(later),
            observed=SimpleNamespace(in_flight={"e-0": 3}),
            ms=SimpleNamespace(drain_timeout_seconds=100.0),
        )
        again = PlanBuilder(ctx)
        drain.remove_pods(
            again,
            [_pod("e-0", draining_since=150.0)],
            group=1,
            role="decode",
            ordinal=0,
            revision="r2",
            reason="update",
            may_start=True,
        )
        assert still_holds(first.holds_for(), later)
        assert again.requeue_after == first.requeue_after
        assert [b.reason for b in again.blocked] == [b.reason for b in first.blocked]
        assert again.actions == first.actions == []


def drain_now(elapsed: float) -> float:
    return 200.0 + elapsed  # ``test_drain_cases.NOW`` plus the time gone by


def _progress_out(left: float, *, paused=False, converged=False) -> PlanBuilder:
    ctx = SimpleNamespace(now=1000.0, ms=SimpleNamespace(paused=paused, progress_deadline_seconds=600))
    out = PlanBuilder(ctx)
    status = {"converged": converged, "progress": {"lastProgressTime": 1000.0 + left - 600}}
    _wake_at_progress_deadline(out, status)
    return out


@pytest.mark.parametrize(
    ("left", "requeue", "holds"),
    [
        pytest.param(100.0, None, 100.0 - RESYNC_SECONDS, id="far from the deadline: holds until the wake-up is asked"),
        pytest.param(20.0, 20.0, 0.0, id="within the resync: the wake-up at the deadline is the wait"),
        pytest.param(-5.0, None, None, id="past the deadline: nothing changes by time any more"),
    ],
)
def test_the_progress_deadline_bounds_how_long_a_running_rollouts_plan_holds(left, requeue, holds):
    out = _progress_out(left)
    assert out.requeue_after == (None if requeue is None else pytest.approx(requeue))
    assert out.holds_for() == (None if holds is None else pytest.approx(holds))


@pytest.mark.parametrize(("paused", "converged"), [(True, False), (False, True)], ids=["paused", "converged"])
def test_a_paused_or_complete_rollout_runs_no_deadline_so_its_plan_holds_for_ever(paused, converged):
    assert _progress_out(100.0, paused=paused, converged=converged).holds_for() is None
