"""Request figures from latency histograms with fixed bucket boundaries (pure arithmetic).

Request records are summed per revision per time bucket (``controller.records``); each sum keeps a
histogram of latencies over the fixed boundaries below, so percentiles of any set of sums are exact
to the width of the bucket they fall in, without the raw records.

Boundaries (ms): every 5 ms up to 250, 10 ms up to 500, 25 ms up to 1,000, 50 ms up to 2,000,
100 ms up to 5,000, 250 ms up to 10,000, 1,000 ms up to 60,000, then one overflow bucket.
Bucket ``i`` holds latencies in ``(UPPER[i-1], UPPER[i]]``; bucket 0 is ``[0, 5]``.

A percentile is the nearest rank (as ``controller.simcluster.routing`` computes it from raw
records): p99 of ``n`` latencies is the ``ceil(0.99 * n)``-th smallest. From a histogram it is the
upper bound of the bucket holding that rank, capped by the largest latency seen.

Worked example: 200 latencies, 150 in bucket 20 (100, 105], 48 in bucket 48 (240, 245], 2 in
bucket 91 (900, 925].
p50: rank ceil(0.5 * 200) = 100 -> the first bucket -> 105 ms (the true value is in (100, 105]).
p99: rank ceil(0.99 * 200) = 198 -> 150 + 48 = 198 reaches the second bucket -> 245 ms.
p99.5 would be rank 199 -> the third bucket -> 925 ms, or the largest latency seen if smaller.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from typing import Any


def _boundaries() -> tuple[float, ...]:
    out: list[float] = []
    edge = 0.0
    for step, until in ((5, 250), (10, 500), (25, 1000), (50, 2000), (100, 5000), (250, 10000), (1000, 60000)):
        while edge < until:
            edge += step
            out.append(float(edge))
    return tuple(out)


UPPER: tuple[float, ...] = _boundaries()  # upper bounds; one more bucket above the last (overflow)
BUCKETS = len(UPPER) + 1

QUANTILES = {"latencyP50Ms": 0.50, "latencyP95Ms": 0.95, "latencyP99Ms": 0.99}
# Token figures (when records carry them), on the same boundaries: time to first token of the
# requests that got one, time per output token of the finished requests that streamed.
TTFT_QUANTILES = {"ttftP50Ms": 0.50, "ttftP95Ms": 0.95, "ttftP99Ms": 0.99}
TPOT_QUANTILES = {"tpotP50Ms": 0.50, "tpotP95Ms": 0.95, "tpotP99Ms": 0.99}
TOKEN_FIGURES = (*TTFT_QUANTILES, *TPOT_QUANTILES, "mixedPaths", "outputTokens")

# How a request travelled its path (``path_outcome``): a chain of one revision, a mixed one,
# refused for want of a consistent path, or failed on hops disagreeing on the KV cache format.
CONSISTENT, MIXED, NO_ROUTE, KV_MISMATCH = "consistent", "mixed", "noRoute", "kvMismatch"
PATH_OUTCOMES = (CONSISTENT, MIXED, NO_ROUTE, KV_MISMATCH)

OK, ERROR, TIMEOUT, INTERRUPTED = "ok", "error", "timeout", "interrupted"
STATUSES = (OK, ERROR, TIMEOUT, INTERRUPTED)


def bucket_of(latency_ms: float) -> int:
    """The histogram bucket of one latency: 3 ms -> 0 ([0, 5]), 5 ms -> 0, 5.1 ms -> 1, 100 ms -> 19."""
    return bisect.bisect_left(UPPER, latency_ms)


def bucket_width(index: int) -> float:
    if index >= len(UPPER):
        return math.inf
    return UPPER[index] - (UPPER[index - 1] if index else 0.0)


def percentile(histogram: Mapping[int, int], q: float, *, largest: float | None = None) -> float | None:
    """Nearest-rank ``q`` quantile of a histogram ``{bucket: count}`` (module docstring)."""
    total = sum(histogram.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(q * total - 1e-9))
    seen = 0
    for index in sorted(histogram):
        seen += histogram[index]
        if seen >= rank:
            upper = UPPER[index] if index < len(UPPER) else math.inf
            if largest is not None:
                upper = min(upper, largest)
            return upper
    return None  # unreachable: the ranks add up to total


class Sums:
    """Sums of request records (one revision, any set of time buckets): what a window's figures
    are computed from. ``add`` one record, or ``merge`` stored sums."""

    __slots__ = (
        "requests",
        "errors",
        "timeouts",
        "interrupted",
        "feedback_sum",
        "feedback_count",
        "hist",
        "largest",
        "durations",
        "longest",
        "ttft",
        "ttft_largest",
        "tpot",
        "tpot_largest",
        "mixed",
        "output_tokens",
        "paths",
    )

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.timeouts = 0
        self.interrupted = 0
        self.feedback_sum = 0.0
        self.feedback_count = 0
        self.hist: dict[int, int] = {}
        self.largest: float | None = None
        # Whole durations (start to end) of answered or timed-out requests, on the same boundaries:
        # their p99 is how long the canary analysis lets a window settle.
        self.durations: dict[int, int] = {}
        self.longest: float | None = None
        # Token figures and paths (records that carry them): TTFT of the requests that got a first
        # token, TPOT of the finished ones that streamed, how many went down a mixed path, output
        # tokens in total, and ``{"<first hop revision>/<last hop revision>": {outcome: n}}``.
        self.ttft: dict[int, int] = {}
        self.ttft_largest: float | None = None
        self.tpot: dict[int, int] = {}
        self.tpot_largest: float | None = None
        self.mixed = 0
        self.output_tokens = 0
        self.paths: dict[str, dict[str, int]] = {}

    def add_tokens(
        self,
        *,
        ttft_ms: float | None = None,
        tpot_ms: float | None = None,
        output_tokens: int | None = None,
        mixed: bool | None = None,
        pair: str | None = None,
        outcome: str | None = None,
    ) -> None:
        """The token figures and the path of one finished record (``add`` counted it already)."""
        if ttft_ms is not None:
            b = bucket_of(ttft_ms)
            self.ttft[b] = self.ttft.get(b, 0) + 1
            if self.ttft_largest is None or ttft_ms > self.ttft_largest:
                self.ttft_largest = ttft_ms
        if tpot_ms is not None:
            b = bucket_of(tpot_ms)
            self.tpot[b] = self.tpot.get(b, 0) + 1
            if self.tpot_largest is None or tpot_ms > self.tpot_largest:
                self.tpot_largest = tpot_ms
        if mixed:
            self.mixed += 1
        if output_tokens is not None:
            self.output_tokens += int(output_tokens)
        if pair is not None and outcome is not None:
            counts = self.paths.setdefault(pair, {})
            counts[outcome] = counts.get(outcome, 0) + 1

    def merge_tokens(
        self,
        *,
        ttft_histogram: Mapping[Any, int] | None,
        ttft_max: float | None,
        tpot_histogram: Mapping[Any, int] | None,
        tpot_max: float | None,
        mixed: int,
        output_tokens: int,
        paths: Mapping[str, Mapping[str, int]] | None,
    ) -> None:
        """Stored token sums (``RequestAggregate``'s token columns)."""
        for key, count in (ttft_histogram or {}).items():
            self.ttft[int(key)] = self.ttft.get(int(key), 0) + int(count)
        if ttft_max is not None and (self.ttft_largest is None or ttft_max > self.ttft_largest):
            self.ttft_largest = ttft_max
        for key, count in (tpot_histogram or {}).items():
            self.tpot[int(key)] = self.tpot.get(int(key), 0) + int(count)
        if tpot_max is not None and (self.tpot_largest is None or tpot_max > self.tpot_largest):
            self.tpot_largest = tpot_max
        self.mixed += int(mixed or 0)
        self.output_tokens += int(output_tokens or 0)
        for pair, outcomes in (paths or {}).items():
            counts = self.paths.setdefault(str(pair), {})
            for outcome, n in outcomes.items():
                counts[str(outcome)] = counts.get(str(outcome), 0) + int(n)

    def token_figures(self) -> dict[str, Any]:
        """TTFT and TPOT percentiles (None without data), ``mixedPaths`` and ``outputTokens``.

        Example: TTFTs 80, 90, 400 ms -> ttftP50Ms 90, ttftP95Ms 400 (nearest rank, bucket upper
        bounds capped by the largest seen); 2 mixed requests -> mixedPaths 2."""
        out: dict[str, Any] = {}
        for key, q in TTFT_QUANTILES.items():
            out[key] = percentile(self.ttft, q, largest=self.ttft_largest)
        for key, q in TPOT_QUANTILES.items():
            out[key] = percentile(self.tpot, q, largest=self.tpot_largest)
        out["mixedPaths"] = self.mixed
        out["outputTokens"] = self.output_tokens
        return out

    def add(
        self, status: str, latency_ms: float | None, feedback: float | None, duration_ms: float | None = None
    ) -> None:
        self.requests += 1
        if status == ERROR:
            self.errors += 1
        elif status == TIMEOUT:
            self.timeouts += 1
        elif status == INTERRUPTED:
            self.interrupted += 1
        # Latency percentiles are of answered requests (ok or error), as the simulated router's.
        if latency_ms is not None and status in (OK, ERROR):
            b = bucket_of(latency_ms)
            self.hist[b] = self.hist.get(b, 0) + 1
            if self.largest is None or latency_ms > self.largest:
                self.largest = latency_ms
        if feedback is not None:
            self.feedback_sum += feedback
            self.feedback_count += 1
        if duration_ms is not None and status in (OK, ERROR, TIMEOUT):
            b = bucket_of(duration_ms)
            self.durations[b] = self.durations.get(b, 0) + 1
            if self.longest is None or duration_ms > self.longest:
                self.longest = duration_ms

    def merge(
        self,
        *,
        requests: int,
        errors: int,
        timeouts: int,
        interrupted: int,
        feedback_sum: float,
        feedback_count: int,
        histogram: Mapping[Any, int],
        latency_max: float | None,
        duration_histogram: Mapping[Any, int] | None = None,
        duration_max: float | None = None,
    ) -> None:
        self.requests += requests
        self.errors += errors
        self.timeouts += timeouts
        self.interrupted += interrupted
        self.feedback_sum += feedback_sum
        self.feedback_count += feedback_count
        for key, count in histogram.items():
            b = int(key)
            self.hist[b] = self.hist.get(b, 0) + int(count)
        if latency_max is not None and (self.largest is None or latency_max > self.largest):
            self.largest = latency_max
        for key, count in (duration_histogram or {}).items():
            b = int(key)
            self.durations[b] = self.durations.get(b, 0) + int(count)
        if duration_max is not None and (self.longest is None or duration_max > self.longest):
            self.longest = duration_max

    def figures(self) -> dict[str, Any]:
        """The MetricsPort's figures: rates are shares of all finished requests, latencies of answered
        ones, ``durationP99Ms`` of the durations given.

        Example: 50 requests, 10 errors, 1 timeout -> errorRate 0.2, timeoutRate 0.02."""
        if self.requests <= 0:
            return {
                "requests": 0,
                "errorRate": None,
                "timeoutRate": None,
                **dict.fromkeys(QUANTILES),
                "feedbackMean": None,
                "durationP99Ms": None,
                **self.token_figures(),
            }
        out: dict[str, Any] = {
            "requests": self.requests,
            "errorRate": round(self.errors / self.requests, 6),
            "timeoutRate": round(self.timeouts / self.requests, 6),
        }
        for key, q in QUANTILES.items():
            out[key] = percentile(self.hist, q, largest=self.largest)
        out["feedbackMean"] = round(self.feedback_sum / self.feedback_count, 6) if self.feedback_count else None
        out["durationP99Ms"] = percentile(self.durations, 0.99, largest=self.longest)
        out.update(self.token_figures())
        return out


def refused(path_error: str | None) -> bool:
    """A request the router refused for want of a consistent path (``noRoute``) reached no revision:
    the Paths panel counts it, a revision's requests, errors and latency do not (a demo's first
    seconds, before any pod is Ready, would otherwise read as errors of the stable revision)."""
    return path_error == NO_ROUTE


def path_outcome(
    path: Any, mixed: bool | None, error: str | None = None, revision: str = "-"
) -> tuple[str, str] | None:
    """``(pair, outcome)`` of one record for the Paths panel, or None when it says nothing of a path.

    ``pair``: the revisions of its first and last hop, ``"<first>/<last>"``; a request that got no
    hop (refused) is ``"<its revision>/-"``. ``outcome``: the record's ``pathError`` (``noRoute``,
    ``kvMismatch``) when it has one, else ``mixed`` or ``consistent``.

    Examples: path [{prefill, rev a}, {decode, rev a}], mixed False -> ("a/a", "consistent");
    mixed True with hops a, b -> ("a/b", "mixed"); pathError noRoute, no hop, revision b ->
    ("b/-", "noRoute"); no path, mixed and pathError unknown -> None."""
    hops = [h for h in path if isinstance(h, Mapping)] if isinstance(path, list) else []
    if error in (NO_ROUTE, KV_MISMATCH):
        outcome = error
    elif mixed is None and not hops:
        return None
    else:
        outcome = MIXED if mixed else CONSISTENT
    if not hops:
        return f"{revision or '-'}/-", outcome
    return f"{hops[0].get('revision') or '-'}/{hops[-1].get('revision') or '-'}", outcome


def figures_of(records: Iterable[tuple[str, float | None, float | None]]) -> dict[str, Any]:
    """Figures of raw ``(status, latencyMs, feedback)`` records (bucketed like the stored sums)."""
    sums = Sums()
    for status, latency, feedback in records:
        sums.add(status, latency, feedback)
    return sums.figures()
