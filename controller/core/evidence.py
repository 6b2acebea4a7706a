"""Evidence before progress: the arithmetic that decides a canary analysis window and whether a
timed pause may end (pure functions; the planner's ``canary`` module applies them).

**What a window counts.** A window holds the requests that *started* in it (``started``); it is
judged a settle time after it ended (``settle_seconds``), and ``minRequests`` is compared with
``started``, so a canary too slow to finish its requests still has evidence. Rates (errors,
timeouts) are shares of the started requests that finished.

**A latency check with unfinished requests.** "pXX <= L" is decided by counting, among the N
started requests, K known to be above L (answered above L, or still waiting for an answer and
already older than L) and U still waiting and not older than L. With A = (100 - XX)% of N, the
share the percentile lets be slower:

- **Fail** when K > A: more requests are already known to be slower than the percentile allows;
- **Pass** when K + U <= A: even if every undecided request turned out slow, the percentile holds;
- **Inconclusive** otherwise.

Worked example, p99 <= 1,300 ms over N = 200 started requests, A = 2:
K = 3 (1 answered in 2,100 ms, 2 waiting for 5 s) -> Fail (3 > 2, whatever the others do);
K = 1, U = 1 (one waiting for 400 ms) -> Pass (1 + 1 <= 2);
K = 2, U = 3 -> Inconclusive (2 <= 2 but 2 + 3 > 2).
A request that timed out or was interrupted never answered: it counts in N, not in K (the
timeout and error rates judge it). A slow canary therefore fails on the requests it is still
serving, and a healthy one is not held up by the few still streaming.

The limit L of a check: ``max`` L; ``maxRatioToStable`` r -> L = r * stable's figure;
``maxDeltaToStable`` d -> L = stable's figure + d (stable's figure over the same window).

**A window's verdict.** Error when the metrics provider failed; Inconclusive when
``started < minRequests``; else Fail if any check fails, Pass if every check passes, Inconclusive
otherwise.

**The ledger** (kept in ``status.canary``): ``failures`` counts failed windows since the canary
started, in total (as Argo Rollouts' and Flagger's failure limits do: a canary failing every other
window is stopped too); ``inconclusive`` counts Inconclusive (and Error) windows in a row;
``passed`` counts passing windows that ended after the current step began; ``lastVerdict`` is the
latest judged window's.

**A timed pause is a minimum.** It ends only when its time is up, at least ``minPassWindows``
windows that ended after the step began passed, and the latest judged window did not fail (a
failure below the limit holds the step, as Flagger halts advancement).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .canary import Check
from .latency import UPPER, bucket_of

PASS, FAIL, INCONCLUSIVE, ERROR = "Pass", "Fail", "Inconclusive", "Error"

# The percentile of each latency figure, in percent (integers keep the arithmetic exact).
LATENCY_PERCENT = {"latencyP50Ms": 50, "latencyP95Ms": 95, "latencyP99Ms": 99}
# Time to first token: decided by the same counting over started requests (a running request
# without a first token yet counts by its age). ``tpot*`` is not here: it is known only once a
# request finished, so it compares the figure of the finished ones.
TTFT_PERCENT = {"ttftP50Ms": 50, "ttftP95Ms": 95, "ttftP99Ms": 99}

# The key of a MetricsPort's figures that carries the latency evidence of a window (see
# ``ports.MetricsPort``): never stored or traced, the window's words and counts say what it showed.
EVIDENCE = "evidence"
# The same for the time to first token: first tokens of the started requests, and the age of each
# request still waiting for its first one.
TTFT_EVIDENCE = "ttftEvidence"
EVIDENCE_KEYS = (EVIDENCE, TTFT_EVIDENCE)

# Each counted metric: its percentile and the figures' key of its evidence.
_COUNTED = {
    **{metric: (percent, EVIDENCE) for metric, percent in LATENCY_PERCENT.items()},
    **{metric: (percent, TTFT_EVIDENCE) for metric, percent in TTFT_PERCENT.items()},
}

# A window is judged at most this long after it ended when the settle is the stable revision's
# p99 request duration (the contract's cap).
MAX_SETTLE_SECONDS = 300.0


# -- one latency check --------------------------------------------------------------------------


def latency_verdict(percent: int, started: int, above: int, undecided: int) -> str:
    """The verdict of "p``percent`` <= L" from the counts (module docstring).

    Compared in whole numbers: K > (100 - XX)% of N is 100 K > (100 - XX) N. Examples (p99, N =
    200, A = 2): (K, U) = (3, 0) -> Fail; (1, 1) -> Pass; (2, 3) -> Inconclusive; (0, 0) -> Pass."""
    allowed = (100 - percent) * started
    if above * 100 > allowed:
        return FAIL
    if (above + undecided) * 100 <= allowed:
        return PASS
    return INCONCLUSIVE


class Counted(NamedTuple):
    """A window's requests against one latency limit."""

    above: int  # K: known to be above the limit
    waiting_above: int  # the part of K still waiting for an answer (older than the limit)
    undecided: int  # U: still waiting, not older than the limit


def count_against(limit_ms: float, evidence: Mapping[str, Any]) -> Counted:
    """Count the requests of ``evidence`` against ``limit_ms``.

    ``evidence``: ``{"answered": {bucket: count}, "waiting": [age ms, ...]}``: the latencies of the
    answered requests as a histogram over ``latency.UPPER`` (a stored record's latency is known to
    its bucket) and the age of every request still waiting for its answer. An answered request is
    above the limit when its bucket's upper bound is: a check is decided to the histogram's
    resolution, a latency in the bucket holding the limit counting as above it (at most one bucket
    width, 2.5-5% of the latency above 1 s). That way a request counted at or under the limit stays
    there whatever the others do, and one counted above stays above. A waiting one is above when its
    age is (its answer can only come later).

    Example: limit 450 ms; answered {bucket (440, 450]: 5, bucket (600, 625]: 2}; waiting ages
    [300, 900] -> above 2 + 1 = 3 (1 waiting), undecided 1.
    """
    above = 0
    for bucket, count in (evidence.get("answered") or {}).items():
        upper = UPPER[int(bucket)] if int(bucket) < len(UPPER) else float("inf")
        if upper > limit_ms:
            above += int(count)
    waiting_above = undecided = 0
    for age in evidence.get("waiting") or ():
        if age > limit_ms:
            waiting_above += 1
        else:
            undecided += 1
    return Counted(above + waiting_above, waiting_above, undecided)


def evidence_of(answered_ms: Iterable[float], waiting_ages_ms: Iterable[float]) -> dict[str, Any]:
    """The evidence of one revision's window (``count_against``'s shape) from the latencies of its
    answered requests and the ages of those still waiting for an answer, both in ms.

    Example: answered [120, 130, 980], waiting [2,500] -> {"answered": {bucket of 120: 1, bucket of
    130: 1, bucket of 980: 1}, "waiting": [2500]}."""
    histogram: dict[int, int] = {}
    for value in answered_ms:
        bucket = bucket_of(value)
        histogram[bucket] = histogram.get(bucket, 0) + 1
    return {"answered": histogram, "waiting": sorted(waiting_ages_ms)}


def latency_limit(check: Check, stable_value: float | None) -> float | None:
    """The limit L in ms a latency check holds the canary to; None when it is relative and stable
    has no figure in the window (nothing to compare with). Examples: max 3,000 -> 3,000;
    maxRatioToStable 1.3 with stable 960 -> 1,248; maxDeltaToStable 200 with stable 960 -> 1,160."""
    if check.kind == "max":
        return check.limit
    if stable_value is None:
        return None
    if check.kind == "maxRatioToStable":
        return check.limit * stable_value
    return stable_value + check.limit


def _ms(value: float) -> str:
    return f"{value:,.0f} ms"


def _figure_name(metric: str) -> str:
    """latencyP99Ms -> "p99"; ttftP95Ms -> "TTFT p95"."""
    if metric.startswith("ttft"):
        return "TTFT " + metric.removeprefix("ttft").removesuffix("Ms").lower()
    return metric.removeprefix("latency").removesuffix("Ms").lower()


def _limit_words(check: Check, limit_ms: float, stable_value: float | None) -> str:
    name = _figure_name(check.metric)
    if check.kind == "max":
        return f"the limit {_ms(limit_ms)}"
    if check.kind == "maxRatioToStable":
        return f"{_ms(limit_ms)} ({check.limit:g}x stable {name} {_ms(stable_value or 0)})"
    return f"{_ms(limit_ms)} (stable {name} {_ms(stable_value or 0)} + {_ms(check.limit)})"


def judge_latency(check: Check, canary: Mapping[str, Any], stable: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """A latency check decided on the canary's evidence (answered and still waiting requests):
    ``(verdict, why)`` with ``why`` None for a pass; None when the check has no evidence to count
    (a provider that only gives percentiles: the figure is compared instead).

    Words, p99 against 1.3x stable 960 ms over 40 started requests: "canary p99 is above 1,248 ms
    (1.3x stable p99 960 ms): 3 of 40 requests took longer, 2 of them still unanswered; at most 1%
    may" (Fail) or "canary p99 is undecided against ...: 0 of 40 requests took longer, 1 still
    unanswered and younger; at most 1% may" (Inconclusive)."""
    counted_by = _COUNTED.get(check.metric)
    if counted_by is None:
        return None
    percent, key = counted_by
    evidence = canary.get(key)
    if evidence is None:
        return None
    stable_value = stable.get(check.metric)
    limit_ms = latency_limit(check, stable_value)
    if limit_ms is None:
        return PASS, None  # nothing to compare with in this window, as for a figure
    started = int(canary.get("started") or 0)
    counted = count_against(limit_ms, evidence)
    verdict = latency_verdict(percent, started, counted.above, counted.undecided)
    if verdict == PASS:
        return PASS, None
    name = ("TTFT " if key == TTFT_EVIDENCE else "") + f"p{percent}"
    against = _limit_words(check, limit_ms, stable_value)
    share = f"at most {100 - percent}% may"
    if verdict == FAIL:
        still = f", {counted.waiting_above} of them still unanswered" if counted.waiting_above else ""
        return FAIL, (
            f"canary {name} is above {against}: {counted.above} of {started} requests took longer{still}; {share}"
        )
    return INCONCLUSIVE, (
        f"canary {name} is undecided against {against}: {counted.above} of {started} requests took longer, "
        f"{counted.undecided} still unanswered and younger; {share}"
    )


# -- one window ---------------------------------------------------------------------------------


def window_verdict(check_verdicts: Iterable[str], *, started: int, min_requests: int, error: bool = False) -> str:
    """Error when the provider failed; Inconclusive below ``min_requests`` started requests; else
    Fail if any check fails, Pass if every check passes, Inconclusive otherwise.

    Examples (minRequests 20): started 12 -> Inconclusive whatever the checks; started 40 with
    [Pass, Inconclusive] -> Inconclusive; [Inconclusive, Fail] -> Fail; [Pass, Pass] -> Pass."""
    if error:
        return ERROR
    if started < min_requests:
        return INCONCLUSIVE
    verdicts = list(check_verdicts)
    if FAIL in verdicts:
        return FAIL
    if all(v == PASS for v in verdicts):
        return PASS
    return INCONCLUSIVE


def settle_seconds(explicit: float | None, interval: float, stable_duration_p99_ms: float | None) -> float:
    """How long after its end a window is judged: ``analysis.settleSeconds`` when given, else the
    stable revision's p99 request duration in the previous window, at most 300 s; before any
    window was judged (or without a duration figure) one interval, at most 300 s.

    Examples: explicit 0 -> 0; p99 duration 38,400 ms -> 38.4; 900,000 ms -> 300; none, interval
    60 -> 60."""
    if explicit is not None:
        return explicit
    if stable_duration_p99_ms is None:
        return min(interval, MAX_SETTLE_SECONDS)
    return min(stable_duration_p99_ms / 1000.0, MAX_SETTLE_SECONDS)


# -- the ledger and the steps -------------------------------------------------------------------


def count_window(ledger: Mapping[str, Any], verdict: str, window_end: float, step_started_at: float) -> dict[str, Any]:
    """The ledger after one more judged window (module docstring). ``ledger`` keys: ``failures``,
    ``inconclusive``, ``passed``, ``lastVerdict`` (missing ones are 0 / None).

    Example: {failures 1, inconclusive 2, passed 0}, a Pass of a window that ended after the step
    began -> {failures 1, inconclusive 0, passed 1, lastVerdict Pass}: a pass forgives nothing."""
    out = {
        "failures": int(ledger.get("failures") or 0),
        "inconclusive": int(ledger.get("inconclusive") or 0),
        "passed": int(ledger.get("passed") or 0),
        "lastVerdict": verdict,
    }
    if verdict == FAIL:
        out["failures"] += 1
        out["inconclusive"] = 0
    elif verdict == PASS:
        out["inconclusive"] = 0
        if window_end > step_started_at:
            out["passed"] += 1
    else:  # Inconclusive, or Error (which counts as Inconclusive for the limits)
        out["inconclusive"] += 1
    return out


def pause_hold(
    now: float, step_started_at: float, seconds: float, ledger: Mapping[str, Any] | None, min_pass_windows: int
) -> str | None:
    """Why a timed pause does not end yet, in words; None when it may end. ``ledger`` None: the
    canary has no analysis, so time alone ends the pause.

    Examples (pause 120 s from t=100, minPassWindows 1): t=150 -> "70 s left"; t=230 with no
    passing window since the step began -> "waiting for 1 passing window since this step began
    (0 so far)"; t=230, 1 passed but the latest failed -> "the latest window failed"; t=230, 1
    passed, latest Pass -> None."""
    left = step_started_at + seconds - now
    if left > 0:
        return f"{left:,.0f} s left"
    if ledger is None:
        return None
    passed = int(ledger.get("passed") or 0)
    if passed < min_pass_windows:
        plural = "s" if min_pass_windows > 1 else ""
        return f"waiting for {min_pass_windows} passing window{plural} since this step began ({passed} so far)"
    if ledger.get("lastVerdict") == FAIL:
        return "the latest window failed"
    return None


def shortfall(windows: Sequence[Mapping[str, Any]], min_requests: int) -> str:
    """Why the analysis could not decide, in words, from the Inconclusive (or Error) windows in a
    row that reached the limit (stored window records, oldest first).

    Examples: three windows with 4, 12 and 9 canary requests started, minRequests 20 -> "3 windows
    with 4-12 canary requests, fewer than minRequests 20"; three with 7 each -> "3 windows with 7
    canary requests, fewer than minRequests 20"; otherwise "3 windows in a row without a verdict;
    the latest: <its reasons>"."""
    count = len(windows)
    plural = "s" if count != 1 else ""
    started = [_started(w) for w in windows]
    if windows and all(s < min_requests for s in started) and all(w.get("verdict") == INCONCLUSIVE for w in windows):
        low, high = min(started), max(started)
        span = f"{low}" if low == high else f"{low}-{high}"
        return f"{count} window{plural} with {span} canary requests, fewer than minRequests {min_requests}"
    latest = "; ".join(str(r) for r in (windows[-1].get("reasons") or ())) if windows else ""
    return f"{count} window{plural} in a row without a verdict" + (f"; the latest: {latest}" if latest else "")


def _started(window: Mapping[str, Any]) -> int:
    canary = (window.get("figures") or {}).get("canary") or {}
    value = canary.get("started")
    if value is None:
        value = canary.get("requests")
    return int(value or 0)
