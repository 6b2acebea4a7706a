"""Evidence before progress (``controller.core.evidence`` and ``analysis.judge_window``): a window
counts the requests that started in it, a latency check counts the unfinished ones by their age,
and the ledger that decides when a timed pause may end.

The rules are the traffic contract's ("Evidence before progress"); the failure limit counting in
total is Argo Rollouts' (``failureLimit``: failed measurements in total) and Flagger's
(``threshold``: failed checks before rollback, a pass not resetting it).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core.analysis import ERROR, FAIL, INCONCLUSIVE, PASS, judge_window
from controller.core.canary import Analysis, Check, parse_canary
from controller.core.evidence import (
    count_against,
    count_window,
    evidence_of,
    latency_verdict,
    pause_hold,
    settle_seconds,
    shortfall,
    window_verdict,
)
from controller.core.latency import figures_of


def analysis(*checks: Check, min_requests: int = 10) -> Analysis:
    return Analysis(60.0, min_requests, 1, "Pause", "simulated", checks, {})


def canary_window(finished_ms=(), waiting_ms=(), *, unanswered=0, errors=0, evidence=True) -> dict:
    """A canary's figures as a metrics port gives them: ``finished_ms`` answered and finished,
    ``waiting_ms`` the ages of requests still waiting for an answer, ``unanswered`` finished without
    an answer (timed out), the first ``errors`` finished ones answered with an error."""
    records = [("error" if i < errors else "ok", ms, None) for i, ms in enumerate(finished_ms)]
    records += [("timeout", None, None)] * unanswered
    figures = figures_of(records)
    figures["started"] = len(finished_ms) + unanswered + len(waiting_ms)
    if evidence:
        figures["evidence"] = evidence_of(finished_ms, waiting_ms)
    return figures


STABLE = {**figures_of([("ok", 1000.0, None)] * 50), "started": 50}  # every figure 1,000 ms

P99_MAX_1000 = Check("latencyP99Ms", "max", 1000.0)

# (promise, check, stable, canary figures, minRequests, verdict). Rows name the window's finished
# and unfinished requests; the limits are in ms.
WINDOWS = [
    (
        "a canary whose requests all answered under the limit passes",
        P99_MAX_1000,
        STABLE,
        canary_window([200.0] * 40),
        10,
        PASS,
    ),
    (
        "one of 40 requests answered above the limit fails p99 (at most 0.4 of them may be)",
        P99_MAX_1000,
        STABLE,
        canary_window([200.0] * 39 + [1500.0]),
        10,
        FAIL,
    ),
    (
        "a request still waiting and already older than the limit fails p99 like a finished slow one",
        P99_MAX_1000,
        STABLE,
        canary_window([200.0] * 39, [5000.0]),
        10,
        FAIL,
    ),
    (
        "a slow canary fails on the requests it still serves though none of them has finished",
        P99_MAX_1000,
        STABLE,
        canary_window([], [8000.0] * 40),
        20,
        FAIL,
    ),
    (
        "a healthy canary is not held up by a few requests still streaming under the limit (p95 of 100)",
        Check("latencyP95Ms", "max", 1000.0),
        STABLE,
        canary_window([200.0] * 97, [300.0] * 3),
        10,
        PASS,
    ),
    (
        "more undecided requests than the percentile leaves room for is Inconclusive, not Pass",
        P99_MAX_1000,
        STABLE,
        canary_window([200.0] * 39, [300.0]),
        10,
        INCONCLUSIVE,
    ),
    (
        "fewer started requests than minRequests is Inconclusive whatever they show",
        P99_MAX_1000,
        STABLE,
        canary_window([], [9000.0] * 5),
        20,
        INCONCLUSIVE,
    ),
    (
        "minRequests is compared with the started requests, not the finished ones",
        Check("latencyP50Ms", "max", 1000.0),
        STABLE,
        canary_window([200.0] * 20, [300.0] * 10),
        25,
        PASS,
    ),
    (
        "a ratio limit is stable's figure times the ratio: 1,400 ms is within 1.5x stable 1,000 ms",
        Check("latencyP99Ms", "maxRatioToStable", 1.5),
        STABLE,
        canary_window([1400.0] * 40),
        10,
        PASS,
    ),
    (
        "a request waiting longer than 1.5x stable fails the ratio limit",
        Check("latencyP99Ms", "maxRatioToStable", 1.5),
        STABLE,
        canary_window([1400.0] * 39, [1600.0]),
        10,
        FAIL,
    ),
    (
        "a delta limit is stable's figure plus the delta: waiting 1,300 ms fails stable 1,000 + 200",
        Check("latencyP99Ms", "maxDeltaToStable", 200.0),
        STABLE,
        canary_window([300.0] * 39, [1300.0]),
        10,
        FAIL,
    ),
    (
        "a request that timed out counts among the started ones but not above a latency limit",
        P99_MAX_1000,
        STABLE,
        canary_window([200.0] * 39, unanswered=1),
        10,
        PASS,
    ),
    (
        "without evidence (a provider of percentiles only) the p99 figure is compared with the limit",
        P99_MAX_1000,
        STABLE,
        canary_window([200.0] * 39 + [1500.0], evidence=False),
        10,
        FAIL,
    ),
    (
        "an error rate is a share of the finished requests, the unfinished ones aside",
        Check("errorRate", "max", 0.05),
        STABLE,
        canary_window([200.0] * 10, [300.0] * 30, errors=1),
        10,
        FAIL,
    ),
    (
        "a rate with no finished canary request is Inconclusive",
        Check("errorRate", "max", 0.05),
        STABLE,
        canary_window([], [300.0] * 40),
        10,
        INCONCLUSIVE,
    ),
    (
        "a relative check with no stable figure in the window has nothing to compare with and holds",
        Check("latencyP99Ms", "maxRatioToStable", 1.5),
        {**figures_of([]), "started": 0},
        canary_window([200.0] * 39, [5000.0]),
        10,
        PASS,
    ),
]


@pytest.mark.parametrize(
    ("check", "stable", "canary", "min_requests", "verdict"), [w[1:] for w in WINDOWS], ids=[w[0] for w in WINDOWS]
)
def test_a_window_is_judged_on_its_finished_and_unfinished_requests(check, stable, canary, min_requests, verdict):
    result = judge_window(analysis(check, min_requests=min_requests), 0, 60, "old", "new", stable, canary)
    assert result.verdict == verdict, result.reasons


def test_a_window_whose_metrics_provider_failed_is_an_error_window_saying_why():
    result = judge_window(analysis(P99_MAX_1000), 0, 60, "old", "new", {}, {}, error="connection refused")
    assert result.verdict == ERROR
    assert result.reasons == ("metrics provider failed: connection refused",)


def test_a_slow_canary_s_failure_says_how_many_requests_took_longer_and_how_many_still_run():
    check = Check("latencyP99Ms", "maxRatioToStable", 1.3)
    result = judge_window(
        analysis(check), 0, 60, "old", "new", STABLE, canary_window([200.0] * 37 + [2000.0], [5000.0] * 2)
    )
    assert result.failed == ("latencyP99Ms",)
    assert result.reasons == (
        "canary p99 is above 1,300 ms (1.3x stable p99 1,000 ms): 3 of 40 requests took longer, "
        "2 of them still unanswered; at most 1% may",
    )


def test_a_stored_window_keeps_the_figures_and_started_but_not_the_evidence():
    record = judge_window(analysis(P99_MAX_1000), 0, 60, "old", "new", STABLE, canary_window([200.0] * 40)).to_json()
    assert "evidence" not in record["figures"]["canary"]
    assert record["figures"]["canary"]["started"] == 40


# The contract's rule in counts: (percentile, N started, K known above, U undecided) -> verdict.
COUNTS = [
    ("p99 of 200: 3 known above is more than the 2 allowed", 99, 200, 3, 0, FAIL),
    ("p99 of 200: 1 above and 1 undecided cannot exceed the 2 allowed", 99, 200, 1, 1, PASS),
    ("p99 of 200: 2 above and 3 undecided may or may not exceed the 2 allowed", 99, 200, 2, 3, INCONCLUSIVE),
    ("p99 of 200: exactly the 2 allowed above passes", 99, 200, 2, 0, PASS),
    ("p99 of 40: a single request above fails (0.4 allowed)", 99, 40, 1, 0, FAIL),
    ("p50 of 10: 5 above is the half allowed", 50, 10, 5, 0, PASS),
    ("p50 of 10: 6 above is more than half", 50, 10, 6, 0, FAIL),
    ("no request at all decides nothing against the check", 95, 0, 0, 0, PASS),
]


@pytest.mark.parametrize(
    ("percent", "started", "above", "undecided", "verdict"), [c[1:] for c in COUNTS], ids=[c[0] for c in COUNTS]
)
def test_a_latency_check_is_decided_by_counting_requests_above_its_limit(percent, started, above, undecided, verdict):
    assert latency_verdict(percent, started, above, undecided) == verdict


COUNTED = [
    ("answered under the limit are neither above nor undecided", [100.0, 200.0], [], (0, 0, 0)),
    ("answered above the limit are above", [100.0, 1500.0], [], (1, 0, 0)),
    ("waiting longer than the limit is above, and said to be waiting", [], [1200.0, 5000.0], (2, 2, 0)),
    ("waiting no longer than the limit is undecided", [], [300.0, 1000.0], (0, 0, 2)),
    ("a latency is known to its histogram bucket: 998 ms is in (975, 1000], not above", [998.0], [], (0, 0, 0)),
    ("a latency known to its bucket (1000, 1050] is above: 1,004 ms", [1004.0], [], (1, 0, 0)),
]


@pytest.mark.parametrize(("answered", "waiting", "counted"), [c[1:] for c in COUNTED], ids=[c[0] for c in COUNTED])
def test_requests_are_counted_against_a_limit_of_1000_ms(answered, waiting, counted):
    assert tuple(count_against(1000.0, evidence_of(answered, waiting))) == counted


@given(
    percent=st.sampled_from([50, 95, 99]),
    limit=st.floats(min_value=5, max_value=20_000),
    answered=st.lists(st.floats(min_value=0, max_value=30_000), max_size=60),
    waiting=st.lists(
        st.tuples(st.floats(min_value=0, max_value=30_000), st.floats(min_value=0, max_value=30_000)), max_size=60
    ),
    unanswered=st.integers(min_value=0, max_value=5),
)
@settings(max_examples=300, deadline=None)
def test_no_verdict_on_unfinished_requests_is_overturned_by_how_they_end(percent, limit, answered, waiting, unanswered):
    """Whatever latency each waiting request ends with (at least its age), a Pass stays true and
    a Fail stays true once all of them answered: counting them early is never wrong, only early."""
    ages = [age for age, _ in waiting]
    eventual = [age + more for age, more in waiting]
    started = len(answered) + len(waiting) + unanswered
    now = count_against(limit, evidence_of(answered, ages))
    verdict = latency_verdict(percent, started, now.above, now.undecided)
    final = count_against(limit, evidence_of(answered + eventual, []))
    holds = latency_verdict(percent, started, final.above, 0) == PASS
    if verdict == PASS:
        assert holds
    if verdict == FAIL:
        assert not holds


VERDICTS = [
    ("any failed check fails the window", [PASS, INCONCLUSIVE, FAIL], 40, 20, False, FAIL),
    ("every check passing passes the window", [PASS, PASS], 40, 20, False, PASS),
    ("an undecided check and no failed one is Inconclusive", [PASS, INCONCLUSIVE], 40, 20, False, INCONCLUSIVE),
    ("too few started requests is Inconclusive even with passing checks", [PASS], 12, 20, False, INCONCLUSIVE),
    ("a provider failure is an Error window", [], 0, 20, True, ERROR),
]


@pytest.mark.parametrize(
    ("checks", "started", "min_requests", "error", "verdict"), [v[1:] for v in VERDICTS], ids=[v[0] for v in VERDICTS]
)
def test_a_window_verdict_follows_from_its_checks(checks, started, min_requests, error, verdict):
    assert window_verdict(checks, started=started, min_requests=min_requests, error=error) == verdict


LEDGER = [
    (
        "a pass of a window that ended after the step began counts for the step",
        {},
        PASS,
        130.0,
        {"failures": 0, "inconclusive": 0, "passed": 1, "lastVerdict": PASS},
    ),
    (
        "a pass of a window that ended before the step began is no evidence for it",
        {},
        PASS,
        100.0,
        {"failures": 0, "inconclusive": 0, "passed": 0, "lastVerdict": PASS},
    ),
    (
        "a pass forgives no failure: failures count since the canary started, in total",
        {"failures": 1},
        PASS,
        130.0,
        {"failures": 1, "inconclusive": 0, "passed": 1, "lastVerdict": PASS},
    ),
    (
        "a failure adds to the total and ends a run of Inconclusive windows",
        {"failures": 1, "inconclusive": 2},
        FAIL,
        130.0,
        {"failures": 2, "inconclusive": 0, "passed": 0, "lastVerdict": FAIL},
    ),
    (
        "an Error window counts as Inconclusive in a row",
        {"inconclusive": 1},
        ERROR,
        130.0,
        {"failures": 0, "inconclusive": 2, "passed": 0, "lastVerdict": ERROR},
    ),
]


@pytest.mark.parametrize(("ledger", "verdict", "end", "after"), [c[1:] for c in LEDGER], ids=[c[0] for c in LEDGER])
def test_the_ledger_after_a_window_judged_in_a_step_that_began_at_100(ledger, verdict, end, after):
    assert count_window(ledger, verdict, end, 100.0) == after


# A pause of 120 s that began at t=100, minPassWindows 1 unless said.
HOLDS = [
    ("a pause holds while its time runs", 150.0, {"passed": 3, "lastVerdict": PASS}, 1, "70 s left"),
    (
        "a pause whose time is up holds without a passing window since it began",
        230.0,
        {"passed": 0, "lastVerdict": INCONCLUSIVE},
        1,
        "waiting for 1 passing window since this step began (0 so far)",
    ),
    (
        "a pause holds until minPassWindows windows passed",
        230.0,
        {"passed": 1, "lastVerdict": PASS},
        2,
        "waiting for 2 passing windows since this step began (1 so far)",
    ),
    (
        "a failure below the limit holds the step although enough windows passed",
        230.0,
        {"passed": 2, "lastVerdict": FAIL},
        1,
        "the latest window failed",
    ),
    ("a pause with its time up and its evidence ends", 230.0, {"passed": 1, "lastVerdict": PASS}, 1, None),
    ("without an analysis time alone ends a pause", 230.0, None, 1, None),
]


@pytest.mark.parametrize(("now", "ledger", "min_pass", "hold"), [c[1:] for c in HOLDS], ids=[c[0] for c in HOLDS])
def test_a_timed_pause_is_a_minimum(now, ledger, min_pass, hold):
    assert pause_hold(now, 100.0, 120.0, ledger, min_pass) == hold


def stored(started: int, verdict: str = INCONCLUSIVE, reasons=()) -> dict:
    return {"verdict": verdict, "figures": {"canary": {"requests": 0, "started": started}}, "reasons": list(reasons)}


SHORTFALLS = [
    (
        "too few requests in each window names their range and minRequests",
        [stored(4), stored(12), stored(9)],
        "3 windows with 4-12 canary requests, fewer than minRequests 20",
    ),
    (
        "the same count in every window is said once",
        [stored(7), stored(7), stored(7)],
        "3 windows with 7 canary requests, fewer than minRequests 20",
    ),
    (
        "other reasons are the latest window's",
        [stored(4), stored(40, reasons=["canary p99 is undecided"]), stored(40, ERROR, ["metrics provider failed: x"])],
        "3 windows in a row without a verdict; the latest: metrics provider failed: x",
    ),
]


@pytest.mark.parametrize(("windows", "words"), [c[1:] for c in SHORTFALLS], ids=[c[0] for c in SHORTFALLS])
def test_the_inconclusive_pause_says_the_shortfall_in_words(windows, words):
    assert shortfall(windows, 20) == words


SETTLES = [
    ("an explicit settleSeconds is kept, 0 included", 0.0, 60.0, 38_400.0, 0.0),
    ("by default a window settles for stable's p99 request duration", None, 60.0, 38_400.0, 38.4),
    ("the default is at most 300 s", None, 60.0, 900_000.0, 300.0),
    ("before any duration is known a window settles for one interval", None, 60.0, None, 60.0),
    ("the first window's settle is at most 300 s too", None, 900.0, None, 300.0),
]


@pytest.mark.parametrize(
    ("explicit", "interval", "duration", "settle"), [c[1:] for c in SETTLES], ids=[c[0] for c in SETTLES]
)
def test_a_window_is_judged_a_settle_time_after_it_ended(explicit, interval, duration, settle):
    assert settle_seconds(explicit, interval, duration) == settle


def parsed_analysis(**fields) -> Analysis:
    raw = {"metrics": [{"metric": "errorRate", "max": 0.05}], **fields}
    canary = parse_canary(
        {"steps": [{"setPartition": 1}], "analysis": raw},
        "spec.rolloutStrategy.canary",
        strategy_type="ServingGroupRollingUpdate",
        group_partition_set=False,
    )
    return canary.analysis


def test_the_evidence_fields_default_to_one_passing_window_three_inconclusive_and_stable_s_duration():
    got = parsed_analysis()
    assert (got.min_pass_windows, got.inconclusive_limit, got.settle_seconds) == (1, 3, None)
    got = parsed_analysis(minPassWindows=2, inconclusiveLimit=5, settleSeconds=10)
    assert (got.min_pass_windows, got.inconclusive_limit, got.settle_seconds) == (2, 5, 10.0)
