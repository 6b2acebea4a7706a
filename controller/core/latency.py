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
        return out


def figures_of(records: Iterable[tuple[str, float | None, float | None]]) -> dict[str, Any]:
    """Figures of raw ``(status, latencyMs, feedback)`` records (bucketed like the stored sums)."""
    sums = Sums()
    for status, latency, feedback in records:
        sums.add(status, latency, feedback)
    return sums.figures()
