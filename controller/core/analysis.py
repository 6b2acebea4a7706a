"""Canary analysis: one window's figures for the stable and the canary revision, judged by the checks.

Both revisions are measured over the same window (the same traffic conditions). The rules of
evidence (``evidence``: what a window counts, latency checks over unfinished requests, the
verdicts) are applied here to one window:

- **Error** when the metrics provider failed (no figures: counts as Inconclusive for the limits);
- **Inconclusive** when fewer than ``minRequests`` canary requests *started* in it (too little
  evidence: neither pass nor fail), when a figure a check reads is not a finite number (an
  overflowed sum, an infinite percentile, NaN): that is no data, never a pass (an infinite stable
  p99 would make any canary look 0 times as slow, and NaN compares false with every limit), or
  when some check could not be decided (a latency check with too many requests still undecided,
  a figure the canary has none of) and none failed;
- **Fail** when any check fails: ``max`` / ``min`` on the canary's own value, ``maxRatioToStable``
  (canary / stable), ``maxDeltaToStable`` (canary - stable);
- **Pass** when every check passes.

Worked example: stable p99 960 ms, canary p99 1,840 ms, check ``latencyP99Ms maxRatioToStable 1.3``:
1,840 / 960 = 1.92 > 1.3 -> Fail, "canary p99 1,840 ms is 1.9x stable 960 ms, limit 1.3x".

Windows start when the canary starts and follow each other every ``intervalSeconds``; a window
holds the requests that *started* in it, and is judged a settle time after it ended
(``evidence.settle_seconds``: ``settleSeconds``, else the stable revision's p99 request duration
in the previous window), once most of those requests have finished (``due_windows``). Judged at its end, a window
would miss the requests still streaming then, and those are the good ones: an error answers after
its latency (a fraction of a second) while a good answer streams for its whole duration. Worked
example, window [0, 60), one request a second, every fifth an error after 0.2 s, the others
streaming 20 s: at t=60 the 12 errors are recorded but only the 32 good ones that started by t=40,
so the error rate reads 12 / 44 = 27% instead of 12 / 60 = 20%; at t=120 every request is in and it
reads 20%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .canary import Analysis, Check
from .evidence import ERROR, EVIDENCE_KEYS, FAIL, INCONCLUSIVE, PASS, judge_latency, window_verdict

__all__ = ["ERROR", "FAIL", "INCONCLUSIVE", "PASS", "WindowResult", "due_windows", "judge_window"]

FIGURE_KEYS = ("requests", "errorRate", "timeoutRate", "latencyP50Ms", "latencyP95Ms", "latencyP99Ms", "feedbackMean")

_WORDS = {
    "errorRate": ("error rate", "%"),
    "timeoutRate": ("timeout rate", "%"),
    "latencyP50Ms": ("p50", " ms"),
    "latencyP95Ms": ("p95", " ms"),
    "latencyP99Ms": ("p99", " ms"),
    "feedbackMean": ("mean feedback", ""),
    "ttftP50Ms": ("TTFT p50", " ms"),
    "ttftP95Ms": ("TTFT p95", " ms"),
    "ttftP99Ms": ("TTFT p99", " ms"),
    "tpotP50Ms": ("TPOT p50", " ms"),
    "tpotP95Ms": ("TPOT p95", " ms"),
    "tpotP99Ms": ("TPOT p99", " ms"),
    "mixedPaths": ("mixed-path requests", " requests"),
    "gpuUtilization": ("GPU utilisation", "%"),
    "gpuMemoryMiB": ("GPU memory", " MiB"),
}


def finite(value: Any) -> bool:
    """A number the checks can use: not None, not infinite, not NaN."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def without_non_finite(figures: dict[str, Any]) -> dict[str, Any]:
    """``figures`` with every number that is not finite as None (no data): JSON has no infinity,
    and a stored status or an API answer must not carry one."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in figures.items()}


def empty_figures() -> dict[str, Any]:
    return {"requests": 0, **{k: None for k in FIGURE_KEYS[1:]}}


def due_windows(
    started_at: float, last_end: float | None, interval: float, now: float, settle: float = 0.0
) -> list[tuple[float, float]]:
    """Windows [start, end) that ended at least ``settle`` seconds before ``now`` and were not
    judged yet.

    Example: started 100, interval 60, last judged window ended at 160, now 290 -> [(160, 220),
    (220, 280)]; with settle 60 -> [(160, 220)] ((220, 280) is due at 340)."""
    start = started_at if last_end is None else last_end
    out = []
    while start + interval + settle <= now + 1e-9:
        out.append((start, start + interval))
        start += interval
    return out


def _show(metric: str, value: float) -> str:
    name, unit = _WORDS[metric]
    if unit == "%":
        return f"{value * 100:.1f}%"
    if unit == " ms":
        return f"{value:,.0f} ms"
    if unit == " requests":
        return f"{value:,.0f}"
    if unit == " MiB":
        return f"{value:,.0f} MiB"
    return f"{value:.2f}"


def _judge(check: Check, canary: dict[str, Any], stable: dict[str, Any]) -> str | None:
    """None when the check holds (or cannot be computed), else why it failed, in words."""
    mine = canary.get(check.metric)
    if mine is None:
        return None
    name = _WORDS[check.metric][0]
    if check.kind == "max":
        if mine > check.limit:
            return f"canary {name} {_show(check.metric, mine)} is above the limit {_show(check.metric, check.limit)}"
        return None
    if check.kind == "min":
        if mine < check.limit:
            return f"canary {name} {_show(check.metric, mine)} is below the limit {_show(check.metric, check.limit)}"
        return None
    theirs = stable.get(check.metric)
    if theirs is None:
        return None  # nothing to compare with in this window
    if check.kind == "maxRatioToStable":
        if theirs == 0:
            failed = mine > 0
            ratio_text = "above stable's 0"
        else:
            ratio = mine / theirs
            failed = ratio > check.limit
            ratio_text = f"{ratio:.1f}x stable {_show(check.metric, theirs)}"
        if failed:
            return f"canary {name} {_show(check.metric, mine)} is {ratio_text}, limit {check.limit:g}x"
        return None
    delta = mine - theirs
    if delta > check.limit:
        return (
            f"canary {name} {_show(check.metric, mine)} is {_show(check.metric, delta)} above stable "
            f"{_show(check.metric, theirs)}, limit {_show(check.metric, check.limit)}"
        )
    return None


@dataclass(frozen=True, slots=True)
class WindowResult:
    start: float
    end: float
    stable_revision: str
    canary_revision: str
    stable: dict[str, Any]
    canary: dict[str, Any]
    verdict: str
    failed: tuple[str, ...]  # the metrics that failed
    reasons: tuple[str, ...]  # in words, one per failed check

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "stable": self.stable_revision,
            "canary": self.canary_revision,
            "figures": {"stable": without_non_finite(self.stable), "canary": without_non_finite(self.canary)},
            "verdict": self.verdict,
            "failed": list(self.failed),
            "reasons": list(self.reasons),
        }


def _non_finite(analysis: Analysis, stable: dict[str, Any], canary: dict[str, Any]) -> list[str]:
    """Why a figure some check reads cannot be used (one line per figure), or an empty list. A
    missing figure (None) is not listed: a check without it holds, as before."""
    reads = []
    for check in analysis.checks:
        reads.append(("canary", canary, check.metric))
        if check.kind in ("maxRatioToStable", "maxDeltaToStable"):
            reads.append(("stable", stable, check.metric))
    out = []
    for side, values, metric in reads:
        value = values.get(metric)
        line = f"{side} {_WORDS[metric][0]} {value!r} is not a finite number: no data"
        if value is not None and not finite(value) and line not in out:
            out.append(line)
    return out


def _judge_check(check: Check, canary: dict[str, Any], stable: dict[str, Any]) -> tuple[str, str | None]:
    """One check's verdict and, unless it passed, why. A latency check with the canary's evidence
    counts its requests (``evidence.judge_latency``); any other compares the figure, and a canary
    without the figure (no finished request to take a rate of, no feedback) is undecided."""
    counted = judge_latency(check, canary, stable)
    if counted is not None:
        return counted
    if canary.get(check.metric) is None:
        return INCONCLUSIVE, f"no canary {_WORDS[check.metric][0]} in this window"
    why = _judge(check, canary, stable)
    return (PASS, None) if why is None else (FAIL, why)


def judge_window(
    analysis: Analysis,
    start: float,
    end: float,
    stable_revision: str,
    canary_revision: str,
    stable: dict[str, Any],
    canary: dict[str, Any],
    *,
    error: str | None = None,
) -> WindowResult:
    """``error``: why the metrics provider could not give the figures (an Error window)."""

    def result(verdict: str, failed: tuple[str, ...], reasons: tuple[str, ...]) -> WindowResult:
        # The evidence (every request's latency or age) is what the words and counts came from;
        # the stored window keeps the figures.
        shown_stable = {k: v for k, v in stable.items() if k not in EVIDENCE_KEYS}
        shown_canary = {k: v for k, v in canary.items() if k not in EVIDENCE_KEYS}
        return WindowResult(
            start, end, stable_revision, canary_revision, shown_stable, shown_canary, verdict, failed, reasons
        )

    if error is not None:
        return result(ERROR, (), (f"metrics provider failed: {error}",))
    requests = canary.get("requests") or 0
    if not finite(requests):
        return result(INCONCLUSIVE, (), (f"canary requests {requests!r} is not a finite number: no data",))
    # Requests that started in the window, finished or not; a provider that cannot tell gives the
    # finished ones only.
    started = canary.get("started")
    started = requests if started is None or not finite(started) else started
    if started < analysis.min_requests:
        return result(INCONCLUSIVE, (), (f"{started} canary requests, fewer than minRequests {analysis.min_requests}",))
    unusable = _non_finite(analysis, stable, canary)
    if unusable:
        return result(INCONCLUSIVE, (), tuple(unusable))
    verdicts, failed, reasons, undecided = [], [], [], []
    for check in analysis.checks:
        verdict, why = _judge_check(check, canary, stable)
        verdicts.append(verdict)
        if verdict == FAIL:
            failed.append(check.metric)
            reasons.append(why)
        elif verdict == INCONCLUSIVE:
            undecided.append(why)
    verdict = window_verdict(verdicts, started=started, min_requests=analysis.min_requests)
    # A failed window says what failed; an undecided one what could not be decided.
    return result(verdict, tuple(failed), tuple(reasons) if verdict == FAIL else tuple(undecided))
