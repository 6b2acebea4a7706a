"""A figure that is not a finite number (an overflowed sum, an infinite percentile, NaN) is no data:
the window is Inconclusive, never a Pass (an infinite stable p99 would make any canary p99 look
0 times as slow, and NaN compares false with every limit)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.analysis import INCONCLUSIVE, PASS, judge_window
from controller.core.canary import CHECK_KINDS, METRICS, Check
from tests.core.test_analysis import analysis, figures

INF, NAN = math.inf, math.nan

CASES = [
    (
        "an infinite stable p99 under a ratio check",
        Check("latencyP99Ms", "maxRatioToStable", 1.3),
        {"latencyP99Ms": INF},
        {},
    ),
    (
        "an infinite stable timeout rate under a delta check",
        Check("timeoutRate", "maxDeltaToStable", 0.01),
        {"timeoutRate": INF},
        {},
    ),
    ("a NaN canary error rate under a max check", Check("errorRate", "max", 0.02), {}, {"errorRate": NAN}),
    (
        "an infinite canary mean feedback under a min check",
        Check("feedbackMean", "min", 0.8),
        {},
        {"feedbackMean": INF},
    ),
    ("a minus-infinite canary p95 under a max check", Check("latencyP95Ms", "max", 500.0), {}, {"latencyP95Ms": -INF}),
    ("a NaN stable p50 under a ratio check", Check("latencyP50Ms", "maxRatioToStable", 1.3), {"latencyP50Ms": NAN}, {}),
]


@pytest.mark.parametrize("check,stable,canary", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_figure_that_is_not_finite_makes_the_window_inconclusive(check, stable, canary):
    stable, canary = figures(**{"feedbackMean": 0.9, **stable}), figures(**{"feedbackMean": 0.9, **canary})
    result = judge_window(analysis(check), 0, 60, "old", "new", stable, canary)
    assert result.verdict == INCONCLUSIVE
    assert any("not a finite number" in reason for reason in result.reasons), result.reasons


def test_a_window_with_a_non_finite_figure_is_stored_with_that_figure_as_null():
    check = Check("latencyP99Ms", "maxRatioToStable", 1.3)
    stored = judge_window(analysis(check), 0, 60, "old", "new", figures(latencyP99Ms=INF), figures()).to_json()
    assert stored["figures"]["stable"]["latencyP99Ms"] is None


@given(
    metric=st.sampled_from(METRICS),
    kind=st.sampled_from(CHECK_KINDS),
    side=st.sampled_from(["stable", "canary"]),
    bad=st.sampled_from([INF, -INF, NAN]),
    good=st.floats(min_value=0, max_value=1e6),
    limit=st.floats(min_value=0, max_value=1e6),
)
def test_a_non_finite_figure_never_passes_a_check_that_reads_it(metric, kind, side, bad, good, limit):
    reads_stable = kind in ("maxRatioToStable", "maxDeltaToStable")
    if side == "stable" and not reads_stable:
        return  # a max/min check reads the canary's figure only
    values = {"stable": figures(**{metric: good}), "canary": figures(**{metric: good})}
    values[side] = figures(**{metric: bad})
    result = judge_window(analysis(Check(metric, kind, limit)), 0, 60, "old", "new", values["stable"], values["canary"])
    assert result.verdict != PASS
