"""Canary analysis windows (``controller.core.analysis``): each check kind, Inconclusive, the words."""

from __future__ import annotations

import pytest

from controller.core.analysis import FAIL, INCONCLUSIVE, PASS, due_windows, judge_window
from controller.core.canary import Analysis, Check, parse_canary
from controller.core.latency import figures_of


def analysis(*checks: Check, min_requests: int = 50) -> Analysis:
    return Analysis(60.0, min_requests, 1, "Pause", "simulated", checks, {})


def figures(requests=200, **values):
    base = {
        "requests": requests,
        "errorRate": 0.0,
        "timeoutRate": 0.0,
        "latencyP50Ms": 200.0,
        "latencyP95Ms": 700.0,
        "latencyP99Ms": 960.0,
        "feedbackMean": None,
    }
    return {**base, **values}


CASES = [
    (
        "a canary error rate under its max passes",
        Check("errorRate", "max", 0.02),
        figures(),
        figures(errorRate=0.01),
        PASS,
    ),
    (
        "a canary error rate over its max fails",
        Check("errorRate", "max", 0.02),
        figures(),
        figures(errorRate=0.3),
        FAIL,
    ),
    (
        "a p99 1.9 times stable's fails a ratio limit of 1.3",
        Check("latencyP99Ms", "maxRatioToStable", 1.3),
        figures(latencyP99Ms=960.0),
        figures(latencyP99Ms=1840.0),
        FAIL,
    ),
    (
        "a p99 1.2 times stable's passes a ratio limit of 1.3",
        Check("latencyP99Ms", "maxRatioToStable", 1.3),
        figures(latencyP99Ms=1000.0),
        figures(latencyP99Ms=1200.0),
        PASS,
    ),
    (
        "a timeout rate 2 points above stable fails a delta limit of 1 point",
        Check("timeoutRate", "maxDeltaToStable", 0.01),
        figures(timeoutRate=0.01),
        figures(timeoutRate=0.03),
        FAIL,
    ),
    (
        "a timeout rate half a point above stable passes a delta limit of 1 point",
        Check("timeoutRate", "maxDeltaToStable", 0.01),
        figures(timeoutRate=0.01),
        figures(timeoutRate=0.015),
        PASS,
    ),
    (
        "a mean feedback under its min fails",
        Check("feedbackMean", "min", 0.8),
        figures(feedbackMean=0.9),
        figures(feedbackMean=0.7),
        FAIL,
    ),
    (
        "a ratio check with no stable figure cannot fail",
        Check("latencyP99Ms", "maxRatioToStable", 1.3),
        figures(requests=0, latencyP99Ms=None),
        figures(latencyP99Ms=5000.0),
        PASS,
    ),
    (
        "fewer canary requests than minRequests is Inconclusive, not Fail",
        Check("errorRate", "max", 0.02),
        figures(),
        figures(requests=10, errorRate=0.5),
        INCONCLUSIVE,
    ),
]


@pytest.mark.parametrize("check,stable,canary,verdict", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_window_verdict(check, stable, canary, verdict):
    assert judge_window(analysis(check), 0, 60, "old", "new", stable, canary).verdict == verdict


def test_a_failed_ratio_says_the_figures_and_the_limit_in_words():
    result = judge_window(
        analysis(Check("latencyP99Ms", "maxRatioToStable", 1.3)),
        0,
        60,
        "old",
        "new",
        figures(latencyP99Ms=960.0),
        figures(latencyP99Ms=1840.0),
    )
    assert result.reasons == ("canary p99 1,840 ms is 1.9x stable 960 ms, limit 1.3x",)
    assert result.failed == ("latencyP99Ms",)


def test_every_failing_check_is_named():
    result = judge_window(
        analysis(Check("errorRate", "max", 0.02), Check("latencyP99Ms", "maxRatioToStable", 1.3)),
        0,
        60,
        "old",
        "new",
        figures(),
        figures(errorRate=0.1, latencyP99Ms=3000.0),
    )
    assert result.failed == ("errorRate", "latencyP99Ms")


@pytest.mark.parametrize(
    "started,last_end,now,windows",
    [
        (100.0, None, 150.0, []),
        (100.0, None, 160.0, [(100.0, 160.0)]),
        (100.0, 160.0, 290.0, [(160.0, 220.0), (220.0, 280.0)]),
    ],
    ids=[
        "no window is due before the first one ends",
        "the first window is due once it ended",
        "every window that ended since the last judged one is due, in order",
    ],
)
def test_due_windows(started, last_end, now, windows):
    assert due_windows(started, last_end, 60.0, now) == windows


@pytest.mark.parametrize(
    "started,last_end,now,windows",
    [
        (100.0, None, 219.0, []),
        (100.0, None, 220.0, [(100.0, 160.0)]),
        (100.0, 160.0, 340.0, [(160.0, 220.0), (220.0, 280.0)]),
    ],
    ids=[
        "a window that ended is not due before it settled",
        "a window is due once it ended and settled",
        "every settled window since the last judged one is due, in order",
    ],
)
def test_due_windows_wait_for_the_requests_of_the_window_to_finish(started, last_end, now, windows):
    assert due_windows(started, last_end, 60.0, now, settle=60.0) == windows


def test_the_settle_is_stable_s_request_duration_unless_set_and_can_be_turned_off():
    def settle(**fields):
        raw = {"intervalSeconds": 30, "metrics": [{"metric": "errorRate", "max": 0.05}], **fields}
        parsed = parse_canary(
            {"steps": [{"setPartition": 1}], "analysis": raw},
            "spec.rolloutStrategy.canary",
            strategy_type="ServingGroupRollingUpdate",
            group_partition_set=False,
        )
        return parsed.analysis.settle_seconds

    # None: the planner takes stable's p99 request duration of the previous window (core.evidence).
    assert (settle(), settle(settleSeconds=90), settle(settleSeconds=0)) == (None, 90.0, 0.0)


# The worked example of controller/core/analysis.py: window [0, 60), one request a second, every
# fifth (t = 0, 5, ..., 55) an error answered after 0.2 s, the others streaming for 20 s. A record
# exists once its request has finished.
REQUESTS = [(float(t), 0.2 if t % 5 == 0 else 20.0, "error" if t % 5 == 0 else "ok") for t in range(60)]


@pytest.mark.parametrize(
    "settle,requests,error_rate",
    [(0.0, 44, 12 / 44), (60.0, 60, 0.2)],
    ids=[
        "judged at its end the window misses the good requests still streaming: 12 errors of 44 read 27%",
        "judged one interval later every request of the window is in: 12 errors of 60 read 20%",
    ],
)
def test_a_window_judged_after_it_settled_is_not_biased_towards_short_errors(settle, requests, error_rate):
    (due,) = due_windows(0.0, None, 60.0, 60.0 + settle, settle)
    start, end = due
    now = end + settle
    recorded = [(status, 150.0, None) for t, seconds, status in REQUESTS if start <= t < end and t + seconds <= now]
    got = figures_of(recorded)
    assert got["requests"] == requests and got["errorRate"] == pytest.approx(error_rate, abs=1e-6)
