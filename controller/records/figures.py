"""Figures of stored request records: the canary analysis' ``MetricsPort`` and the comparison.

A window ``[start, end)`` is read from the sums of the time buckets it covers whole, plus the raw
records of the bucket parts at its two edges, so it is exact (as exact as the histogram: see
``controller.core.latency``) for any start and end, and costs a few rows however many requests
there were. Example with 10 s buckets: window [1005, 1065) -> sums of the buckets 1010 ... 1050
(five rows per revision) + raw records started in [1005, 1010) and [1060, 1065).

Records of requests still running are never in the sums: the analysis' window reads them apart
(``DatabaseMetrics.window``), as started requests and evidence by their age.
"""

from __future__ import annotations

import math
from typing import Any

from controller.core.analysis import without_non_finite
from controller.core.evidence import EVIDENCE
from controller.core.latency import Sums, bucket_of
from controller.models import RequestAggregate, RequestRecord

from .store import BUCKET_SECONDS


def _window_sums(namespace: str, name: str, start: float, end: float, revision: str | None = None) -> dict[str, Sums]:
    out: dict[str, Sums] = {}

    def sums(rev: str) -> Sums:
        s = out.get(rev)
        if s is None:
            s = out[rev] = Sums()
        return s

    if end <= start:
        return out
    first_full = math.ceil(start / BUCKET_SECONDS) * BUCKET_SECONDS
    last_full_end = math.floor(end / BUCKET_SECONDS) * BUCKET_SECONDS
    raw_ranges: list[tuple[float, float]]
    if first_full >= last_full_end:
        raw_ranges = [(start, end)]  # inside one bucket (or two partial ones): raw records only
    else:
        aggs = RequestAggregate.objects.filter(
            namespace=namespace, name=name, bucket_start__gte=first_full, bucket_start__lt=last_full_end
        )
        if revision is not None:
            aggs = aggs.filter(revision=revision)
        for row in aggs.values_list(
            "revision",
            "requests",
            "errors",
            "timeouts",
            "interrupted",
            "feedback_sum",
            "feedback_count",
            "histogram",
            "latency_max",
            "duration_histogram",
            "duration_max",
        ):
            sums(row[0]).merge(
                requests=row[1],
                errors=row[2],
                timeouts=row[3],
                interrupted=row[4],
                feedback_sum=row[5],
                feedback_count=row[6],
                histogram=row[7] or {},
                latency_max=row[8],
                duration_histogram=row[9] or {},
                duration_max=row[10],
            )
        raw_ranges = [(start, first_full), (last_full_end, end)]
    for lo, hi in raw_ranges:
        if hi <= lo:
            continue
        rows = RequestRecord.objects.filter(namespace=namespace, name=name, started__gte=lo, started__lt=hi).exclude(
            status=RequestRecord.RUNNING
        )
        if revision is not None:
            rows = rows.filter(revision=revision)
        for rev, status, latency, feedback, began, ended in rows.values_list(
            "revision", "status", "latency_ms", "feedback", "started", "finished"
        ):
            sums(rev).add(status, latency, feedback, None if ended is None else (ended - began) * 1000.0)
    return out


class DatabaseMetrics:
    """The ``MetricsPort`` over the stored request records (the simulated router's, or those sent
    to ``POST /api/request-records/``). Figures are given as computed, a non-finite one included:
    the analysis judges such a window Inconclusive, whereas a None in its place would let a
    relative check pass."""

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict[str, Any]:
        """The finished requests' figures, plus ``started`` (finished and running) and the
        ``evidence`` of the running ones as of ``at`` (default: the window's end): a running record
        with a latency has answered once ``started + latency`` has passed, any other is waiting,
        as old as ``at - started``. Example at 1,040: running since 1,005 without a latency ->
        waiting 35,000 ms; since 1,020 with a latency of 3,000 ms -> answered in 3,000 ms."""
        at = end if at is None else at
        sums = _window_sums(namespace, name, start, end, revision).get(revision) or Sums()
        figures = sums.figures()
        answered = dict(sums.hist)
        waiting: list[float] = []
        running = RequestRecord.objects.filter(
            namespace=namespace,
            name=name,
            revision=revision,
            status=RequestRecord.RUNNING,
            started__gte=start,
            started__lt=end,
        ).values_list("started", "latency_ms")
        count = 0
        for began, latency in running:
            count += 1
            if latency is not None and began + latency / 1000.0 <= at:
                b = bucket_of(latency)
                answered[b] = answered.get(b, 0) + 1
            else:
                waiting.append(max(0.0, (at - began) * 1000.0))
        figures["started"] = sums.requests + count
        figures[EVIDENCE] = {"answered": answered, "waiting": sorted(waiting)}
        return figures


def compare(namespace: str, name: str, start: float, end: float, bucket: float) -> dict[str, Any]:
    """Figures per revision over ``[start, end)`` and a series per revision per ``bucket`` seconds.

    ``bucket`` is rounded up to a multiple of the stored bucket (10 s); series points are whole
    stored buckets, ``bucket`` wide from the stored bucket holding ``start`` (``bucketStart`` =
    that bucket's start + k * bucket) to the one before ``end``. Example: start 1,004, bucket 30
    -> points at 1,000, 1,030, 1,060, ... Returns ``{"revisions": {rev: figures}, "series": [{"revision",
    "bucketStart", **figures}]}`` with times in clock seconds. A figure that is not finite (sums
    stored before ingestion was bounded) is None: no data, and JSON has no infinity.
    """
    per_revision = {
        rev: without_non_finite(s.figures()) for rev, s in sorted(_window_sums(namespace, name, start, end).items())
    }
    step = max(BUCKET_SECONDS, math.ceil(bucket / BUCKET_SECONDS) * BUCKET_SECONDS)
    lo = math.floor(start / BUCKET_SECONDS) * BUCKET_SECONDS
    points: dict[tuple[str, float], Sums] = {}
    for row in RequestAggregate.objects.filter(
        namespace=namespace, name=name, bucket_start__gte=lo, bucket_start__lt=end
    ).values_list(
        "revision",
        "bucket_start",
        "requests",
        "errors",
        "timeouts",
        "interrupted",
        "feedback_sum",
        "feedback_count",
        "histogram",
        "latency_max",
    ):
        key = (row[0], lo + math.floor((row[1] - lo) / step) * step)
        s = points.get(key)
        if s is None:
            s = points[key] = Sums()
        s.merge(
            requests=row[2],
            errors=row[3],
            timeouts=row[4],
            interrupted=row[5],
            feedback_sum=row[6],
            feedback_count=row[7],
            histogram=row[8] or {},
            latency_max=row[9],
        )
    series = [
        {"revision": rev, "bucketStart": t, **without_non_finite(points[(rev, t)].figures())}
        for rev, t in sorted(points, key=lambda k: (k[0], k[1]))
    ]
    return {"revisions": per_revision, "series": series, "bucketSeconds": step}
