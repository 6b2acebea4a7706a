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
from controller.core.evidence import EVIDENCE, TTFT_EVIDENCE
from controller.core.latency import Sums, bucket_of, path_outcome, refused
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
            *TOKEN_COLUMNS,
        ):
            _merge_tokens(sums(row[0]), row[11:])
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
        for rev, status, latency, feedback, began, ended, *tokens in rows.values_list(
            "revision", "status", "latency_ms", "feedback", "started", "finished", *RECORD_TOKEN_COLUMNS
        ):
            if not refused(tokens[-1]):  # path_error, the last of RECORD_TOKEN_COLUMNS
                sums(rev).add(status, latency, feedback, None if ended is None else (ended - began) * 1000.0)
            _add_record_tokens(sums(rev), rev, status, tokens)
    return out


# The token columns of a stored bucket and of a raw record, in the order the helpers read them.
TOKEN_COLUMNS = ("ttft_histogram", "ttft_max", "tpot_histogram", "tpot_max", "mixed", "output_tokens", "paths")
RECORD_TOKEN_COLUMNS = ("ttft_ms", "tpot_ms", "output_tokens", "mixed", "path", "path_error")


def _merge_tokens(sums: Sums, row: tuple) -> None:
    ttft_histogram, ttft_max, tpot_histogram, tpot_max, mixed, output_tokens, paths = row
    sums.merge_tokens(
        ttft_histogram=ttft_histogram,
        ttft_max=ttft_max,
        tpot_histogram=tpot_histogram,
        tpot_max=tpot_max,
        mixed=mixed,
        output_tokens=output_tokens,
        paths=paths,
    )


def _add_record_tokens(sums: Sums, revision: str, status: str, row: list) -> None:
    """A finished raw record's token figures, as ``store`` sums them into its bucket."""
    ttft, tpot, output_tokens, mixed, path, error = row
    outcome = path_outcome(path, mixed, error or None, revision)
    sums.add_tokens(
        ttft_ms=ttft,
        tpot_ms=tpot if status == "ok" else None,
        output_tokens=output_tokens,
        mixed=mixed,
        pair=None if outcome is None else outcome[0],
        outcome=None if outcome is None else outcome[1],
    )


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
        waiting 35,000 ms; since 1,020 with a latency of 3,000 ms -> answered in 3,000 ms.

        ``ttftEvidence`` is the same for the time to first token (``ttft*`` checks): first tokens
        of finished and running requests, and the age of each running request without one yet (a
        record that does not say counts as without)."""
        at = end if at is None else at
        sums = _window_sums(namespace, name, start, end, revision).get(revision) or Sums()
        figures = sums.figures()
        answered = dict(sums.hist)
        waiting: list[float] = []
        first_tokens = dict(sums.ttft)
        no_first_token: list[float] = []
        running = RequestRecord.objects.filter(
            namespace=namespace,
            name=name,
            revision=revision,
            status=RequestRecord.RUNNING,
            started__gte=start,
            started__lt=end,
        ).values_list("started", "latency_ms", "ttft_ms")
        count = 0
        told_first_token = bool(sums.ttft)
        for began, latency, ttft in running:
            count += 1
            told_first_token = told_first_token or ttft is not None
            age = max(0.0, (at - began) * 1000.0)
            if latency is not None and began + latency / 1000.0 <= at:
                b = bucket_of(latency)
                answered[b] = answered.get(b, 0) + 1
            else:
                waiting.append(age)
            # Time to first token: a running request without one (or not yet as of ``at``) counts
            # by its age, as a latency does.
            if ttft is not None and began + ttft / 1000.0 <= at:
                b = bucket_of(ttft)
                first_tokens[b] = first_tokens.get(b, 0) + 1
            else:
                no_first_token.append(age)
        figures["started"] = sums.requests + count
        figures[EVIDENCE] = {"answered": answered, "waiting": sorted(waiting)}
        # TTFT evidence once the records tell first tokens (or only running requests are known, whose
        # age is evidence either way); records without token figures leave ttft* checks no data.
        if told_first_token or (count and not sums.requests):
            figures[TTFT_EVIDENCE] = {"answered": first_tokens, "waiting": sorted(no_first_token)}
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
        *TOKEN_COLUMNS,
    ):
        key = (row[0], lo + math.floor((row[1] - lo) / step) * step)
        s = points.get(key)
        if s is None:
            s = points[key] = Sums()
        _merge_tokens(s, row[10:])
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
