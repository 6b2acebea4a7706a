"""Storing request records: raw rows plus the sums of their time buckets, in one transaction.

A record (the keys ``write_records`` takes, already validated): ``request_id``, ``namespace``,
``name``, ``revision``, ``deployment_revision``, ``model_version``, ``latency_ms`` (or None),
``status`` (ok, error, timeout, interrupted, or running), ``feedback`` (or None), ``started``,
``finished`` (clock seconds; None while running); optionally the token figures and the path:
``ttft_ms``, ``tpot_ms``, ``input_tokens``, ``output_tokens``, ``path`` (``[{"role", "pod",
"revision"}]``), ``mixed`` (bool) and ``path_error`` (``noRoute``, ``kvMismatch``).

Each finished record is added to the ``RequestAggregate`` of its revision and of the bucket its
start falls in: ``bucket_start = floor(started / BUCKET_SECONDS) * BUCKET_SECONDS``. Example:
started 1,700,000,123.4 with 10 s buckets -> bucket 1,700,000,120.

A record of a request still running (status ``running``) is kept as a raw row only: the canary
analysis counts it as started and, until its answer is known, by its age. The finished record of
the same request (same ModelServing and ``request_id``) replaces it, in the same transaction;
a running record whose request already has its finished record is not stored (shippers may send
them out of order). Example: a router sends ``{requestId: r7, status: running}`` at the start
and ``{requestId: r7, status: ok, finished: ...}`` at the end: one row, summed once.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction

from controller.core.latency import Sums, path_outcome, refused
from controller.models import RequestAggregate, RequestRecord

log = logging.getLogger(__name__)

BUCKET_SECONDS = 10.0
INSERT_BATCH = 2000
# Raw records are kept a day, sums a month (clock seconds); settings may change both.
RECORDS_RETENTION_SECONDS = 24 * 3600.0
AGGREGATES_RETENTION_SECONDS = 30 * 24 * 3600.0


def bucket_start(t: float) -> float:
    return math.floor(t / BUCKET_SECONDS) * BUCKET_SECONDS


Key = tuple[str, str, str, float]


def _sums(records: Iterable[Mapping[str, Any]]) -> dict[Key, Sums]:
    out: dict[Key, Sums] = {}
    for r in records:
        if r["status"] == RequestRecord.RUNNING:
            continue  # summed once it finished
        key = (r["namespace"], r["name"], r["revision"], bucket_start(r["started"]))
        sums = out.get(key)
        if sums is None:
            sums = out[key] = Sums()
        duration = None if r.get("finished") is None else (r["finished"] - r["started"]) * 1000.0
        if not refused(r.get("path_error")):
            sums.add(r["status"], r.get("latency_ms"), r.get("feedback"), duration)
        outcome = path_outcome(r.get("path"), r.get("mixed"), r.get("path_error"), r["revision"])
        sums.add_tokens(
            ttft_ms=r.get("ttft_ms"),
            # Time per output token of the requests that finished their answer.
            tpot_ms=r.get("tpot_ms") if r["status"] == "ok" else None,
            output_tokens=r.get("output_tokens"),
            mixed=r.get("mixed"),
            pair=None if outcome is None else outcome[0],
            outcome=None if outcome is None else outcome[1],
        )
    return out


def _by_modelserving(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for r in records:
        if r.get("request_id"):
            out.setdefault((r["namespace"], r["name"]), []).append(str(r["request_id"])[:128])
    return out


def _replace_running(records: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """In the caller's transaction: delete the running records of the requests ``records`` are
    about (a finished record ends its request; a newer running one, with its answer begun, says
    more), and return ``records`` without the running ones whose request already finished
    (module docstring)."""
    finished = [r for r in records if r["status"] != RequestRecord.RUNNING]
    running = [r for r in records if r["status"] == RequestRecord.RUNNING]
    for (namespace, name), ids in _by_modelserving(records).items():
        RequestRecord.objects.filter(
            namespace=namespace, name=name, status=RequestRecord.RUNNING, request_id__in=ids
        ).delete()
    if not running:
        return records
    ended: set[tuple[str, str, str]] = {(r["namespace"], r["name"], str(r.get("request_id"))[:128]) for r in finished}
    for (namespace, name), ids in _by_modelserving(running).items():
        done = (
            RequestRecord.objects.filter(namespace=namespace, name=name, request_id__in=ids)
            .exclude(status=RequestRecord.RUNNING)
            .values_list("request_id", flat=True)
        )
        ended.update((namespace, name, rid) for rid in done)
    return [
        r
        for r in records
        if r["status"] != RequestRecord.RUNNING
        or (r["namespace"], r["name"], str(r.get("request_id"))[:128]) not in ended
    ]


def write_records(records: list[Mapping[str, Any]]) -> int:
    """Store ``records`` and add the finished ones to their buckets' sums, replacing the running
    records they end; all or nothing. Returns how many were given."""
    if not records:
        return 0
    # Plain rows for one parameterised INSERT sent with executemany: building a model instance per
    # record and Django's bulk_create compiling every value cost ~0.5 ms a record (2,500: 1.3 s).
    rows = [
        (
            str(r.get("request_id") or "")[:128],
            r["namespace"],
            r["name"],
            r["revision"],
            str(r.get("deployment_revision") or "")[:64],
            str(r.get("model_version") or "")[:253],
            r.get("latency_ms"),
            r["status"],
            r.get("feedback"),
            r["started"],
            r["finished"],
            r.get("ttft_ms"),
            r.get("tpot_ms"),
            r.get("input_tokens"),
            r.get("output_tokens"),
            None if r.get("path") is None else json.dumps(r["path"]),
            r.get("mixed"),
            str(r.get("path_error") or "")[:16],
        )
        for r in records
    ]
    sums = _sums(records)
    replaces = any(r.get("request_id") for r in records)
    for attempt in range(3):
        try:
            with transaction.atomic():
                kept = rows
                if replaces:
                    keep = {id(r) for r in _replace_running(records)}
                    kept = [row for row, r in zip(rows, records, strict=True) if id(r) in keep]
                _insert_records(kept)
                _add_to_aggregates(sums)
            return len(rows)
        except IntegrityError:
            # Two writers created the same new bucket at once: the loser starts again and now
            # finds the row (its own records were rolled back with it).
            if attempt == 2:
                raise
            log.info("request aggregates: a bucket was created concurrently, retrying")
    return 0  # unreachable


_RECORD_COLUMNS = (
    "request_id",
    "namespace",
    "name",
    "revision",
    "deployment_revision",
    "model_version",
    "latency_ms",
    "status",
    "feedback",
    "started",
    "finished",
    "ttft_ms",
    "tpot_ms",
    "input_tokens",
    "output_tokens",
    "path",
    "mixed",
    "path_error",
)


def _insert_records(rows: list[tuple]) -> None:
    """INSERT ``rows`` (values in ``_RECORD_COLUMNS`` order, ``path`` as JSON text). SQLite: one
    prepared one-row statement sent with executemany (in-process, so each row costs no round trip);
    PostgreSQL: one statement, its rows as one array per column (one statement per row cost the
    server a parse and an execution each)."""
    if not rows:
        return
    table = RequestRecord._meta.db_table
    columns = ", ".join(_RECORD_COLUMNS)
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            one = "(" + ", ".join(["%s"] * len(_RECORD_COLUMNS)) + ")"
            sql = f"INSERT INTO {table} ({columns}) VALUES {one}"
            for i in range(0, len(rows), INSERT_BATCH):
                cursor.executemany(sql, rows[i : i + INSERT_BATCH])
            return
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT "
            + ", ".join(f"{c}::jsonb" if c == "path" else c for c in _RECORD_COLUMNS)
            + f" FROM {_unnest(_RECORD_PG_TYPES)} AS u({columns})",
            _arrays(rows, _RECORD_PG_TYPES),
        )


# PostgreSQL: rows travel as one array per column (``UNNEST``): a statement of one parameter per
# value costs psycopg a parse of the whole query text (18,000 placeholders: ~0.1 s) every time.
_RECORD_PG_TYPES = (
    ("text",) * 6
    + ("double precision", "text", "double precision", "double precision", "double precision")
    + ("double precision", "double precision", "bigint", "bigint", "text", "boolean", "text")
)
_CONVERT = {"text": str, "double precision": float, "bigint": int, "boolean": bool}


def _unnest(types: tuple[str, ...]) -> str:
    return "UNNEST(" + ", ".join(f"%s::{t}[]" for t in types) + ")"


def _arrays(rows: list[tuple], types: tuple[str, ...]) -> list[list]:
    """One list per column, each value converted to the column's Python type (None kept)."""
    out = []
    for k, t in enumerate(types):
        convert = _CONVERT[t]
        out.append([None if row[k] is None else convert(row[k]) for row in rows])
    return out


_AGG_COLUMNS = (
    "requests",
    "errors",
    "timeouts",
    "interrupted",
    "feedback_sum",
    "feedback_count",
    "latency_max",
    "histogram",
    "duration_max",
    "duration_histogram",
    "ttft_max",
    "ttft_histogram",
    "tpot_max",
    "tpot_histogram",
    "mixed",
    "output_tokens",
    "paths",
)
_AGG_JSON = frozenset({"histogram", "duration_histogram", "ttft_histogram", "tpot_histogram", "paths"})
_AGG_PG_TYPES = {
    c: "jsonb" if c in _AGG_JSON else "double precision" if c.endswith(("_sum", "_max")) else "bigint"
    for c in _AGG_COLUMNS
}


def _json_value(raw: Any) -> dict:
    if raw is None:
        return {}
    if isinstance(raw, (str, bytes, bytearray, memoryview)):
        return orjson.loads(bytes(raw) if isinstance(raw, memoryview) else raw) or {}
    return raw  # a driver that decodes JSON itself


def _merge_counts(stored: dict, counts: Mapping[Any, int]) -> dict:
    out = dict(stored)
    for b, n in counts.items():
        out[str(b)] = int(out.get(str(b), 0)) + n
    return out


def _larger(stored: float | None, mine: float | None) -> float | None:
    if mine is not None and (stored is None or mine > stored):
        return mine
    return stored


def _add_to_aggregates(sums: dict[Key, Sums]) -> None:
    """Add ``sums`` to their stored buckets (locked while read) and create the buckets not yet
    stored: one SELECT per ModelServing (``_stored_buckets``), one executemany UPDATE
    (``_update_buckets``), one INSERT. The rows are read and written as plain SQL values (JSON by
    orjson): model instances and the JSON fields' own conversion cost more than the sums
    themselves for a batch spread over many buckets."""
    by_ms: dict[tuple[str, str], list[Key]] = {}
    for key in sums:
        by_ms.setdefault((key[0], key[1]), []).append(key)
    postgres = connection.vendor == "postgresql"
    updates: list[tuple] = []
    creates: list[RequestAggregate] = []
    with connection.cursor() as cursor:
        for (namespace, name), keys in by_ms.items():
            existing = _stored_buckets(cursor, namespace, name, keys, lock=postgres)
            for key in keys:
                row = existing.get(key)
                if row is None:
                    creates.append(_new_bucket(key, sums[key]))
                else:
                    updates.append(_merged_bucket(row, sums[key]))
        if updates:
            _update_buckets(cursor, updates, postgres=postgres)
    if creates:
        RequestAggregate.objects.bulk_create(creates, batch_size=500)


def _stored_buckets(cursor, namespace: str, name: str, keys: list[Key], *, lock: bool) -> dict[Key, tuple]:
    """The stored rows of ``keys`` (all of one ModelServing) by key: ``(id, revision,
    bucket_start, *_AGG_COLUMNS)``, locked until the transaction ends when ``lock`` (PostgreSQL:
    two batches adding to one bucket at once add in turn; SQLite has no FOR UPDATE and lets one
    writer in at a time)."""
    starts = sorted({k[3] for k in keys})
    revisions = sorted({k[2] for k in keys})
    cursor.execute(
        f"SELECT id, revision, bucket_start, {', '.join(_AGG_COLUMNS)} FROM {RequestAggregate._meta.db_table} "
        f"WHERE namespace = %s AND name = %s AND revision IN ({', '.join(['%s'] * len(revisions))}) "
        f"AND bucket_start IN ({', '.join(['%s'] * len(starts))})" + (" FOR UPDATE" if lock else ""),
        [namespace, name, *revisions, *starts],
    )
    return {(namespace, name, row[1], row[2]): row for row in cursor.fetchall()}


def _new_bucket(key: Key, s: Sums) -> RequestAggregate:
    """The bucket ``key`` holding ``s`` alone (histogram keys as JSON object keys: strings)."""
    return RequestAggregate(
        namespace=key[0],
        name=key[1],
        revision=key[2],
        bucket_start=key[3],
        requests=s.requests,
        errors=s.errors,
        timeouts=s.timeouts,
        interrupted=s.interrupted,
        feedback_sum=s.feedback_sum,
        feedback_count=s.feedback_count,
        latency_max=s.largest,
        histogram={str(b): n for b, n in s.hist.items()},
        duration_max=s.longest,
        duration_histogram={str(b): n for b, n in s.durations.items()},
        ttft_max=s.ttft_largest,
        ttft_histogram={str(b): n for b, n in s.ttft.items()},
        tpot_max=s.tpot_largest,
        tpot_histogram={str(b): n for b, n in s.tpot.items()},
        mixed=s.mixed,
        output_tokens=s.output_tokens,
        paths=s.paths,
    )


def _merged_bucket(row: tuple, s: Sums) -> tuple:
    """The UPDATE parameters of stored ``row`` plus ``s``: ``(*_AGG_COLUMNS, id)``, JSON columns
    as text. Counts add, maxima take the larger, histograms add bin by bin.
    Example: stored 10 requests, latency max 900, histogram {"3": 10}; ``s`` 2 requests, largest
    1200, hist {3: 1, 4: 1} -> 12, 1200, '{"3":11,"4":1}'."""
    (pk, _revision, _start, requests, errors, timeouts, interrupted, feedback_sum, feedback_count) = row[:9]
    (latency_max, histogram, duration_max, duration_histogram, ttft_max, ttft_histogram) = row[9:15]
    (tpot_max, tpot_histogram, mixed, output_tokens, paths) = row[15:]
    return (
        requests + s.requests,
        errors + s.errors,
        timeouts + s.timeouts,
        interrupted + s.interrupted,
        feedback_sum + s.feedback_sum,
        feedback_count + s.feedback_count,
        _larger(latency_max, s.largest),
        orjson.dumps(_merge_counts(_json_value(histogram), s.hist)).decode(),
        _larger(duration_max, s.longest),
        orjson.dumps(_merge_counts(_json_value(duration_histogram), s.durations)).decode(),
        _larger(ttft_max, s.ttft_largest),
        orjson.dumps(_merge_counts(_json_value(ttft_histogram), s.ttft)).decode(),
        _larger(tpot_max, s.tpot_largest),
        orjson.dumps(_merge_counts(_json_value(tpot_histogram), s.tpot)).decode(),
        int(mixed or 0) + s.mixed,
        int(output_tokens or 0) + s.output_tokens,
        orjson.dumps(_merge_paths(_json_value(paths), s.paths)).decode(),
        pk,
    )


def _merge_paths(stored: dict, paths: Mapping[str, Mapping[str, int]]) -> dict:
    """Path counts ``{pair: {outcome: n}}`` added pair by pair, outcome by outcome.
    Example: {"A/B": {"ok": 2}} + {"A/B": {"ok": 1, "error": 1}} -> {"A/B": {"ok": 3, "error": 1}}."""
    merged = {pair: dict(counts) for pair, counts in stored.items()}
    for pair, counts in paths.items():
        mine = merged.setdefault(pair, {})
        for outcome, n in counts.items():
            mine[outcome] = int(mine.get(outcome, 0)) + n
    return merged


def _update_buckets(cursor, updates: list[tuple], *, postgres: bool) -> None:
    """Writes ``_merged_bucket`` rows back. One parameterised UPDATE per row, sent with
    executemany: Django's bulk_update builds a CASE expression per field per row, which costs ~2 ms
    per row here (700 rows: 1.5 s). PostgreSQL: one UPDATE ... FROM UNNEST(one array per column)
    instead."""
    table = RequestAggregate._meta.db_table
    if not postgres:
        assignments = ", ".join(f"{c} = %s" for c in _AGG_COLUMNS)
        cursor.executemany(f"UPDATE {table} SET {assignments} WHERE id = %s", updates)
        return
    names = ", ".join((*_AGG_COLUMNS, "id"))
    types = tuple("text" if c in _AGG_JSON else _AGG_PG_TYPES[c] for c in _AGG_COLUMNS) + ("bigint",)
    assignments = ", ".join(f"{c} = u.{c}{'::jsonb' if c in _AGG_JSON else ''}" for c in _AGG_COLUMNS)
    cursor.execute(
        f"UPDATE {table} AS t SET {assignments} FROM {_unnest(types)} AS u({names}) WHERE t.id = u.id",
        _arrays(updates, types),
    )


def cleanup(
    now: float,
    *,
    records_seconds: float = RECORDS_RETENTION_SECONDS,
    aggregates_seconds: float = AGGREGATES_RETENTION_SECONDS,
) -> dict[str, int]:
    """Delete raw records that finished more than ``records_seconds`` before ``now`` (a running
    record whose request never finished: that started so long ago) and sums of buckets that
    started more than ``aggregates_seconds`` before it. Returns how many of each."""
    records, _ = RequestRecord.objects.filter(finished__lt=now - records_seconds).delete()
    lost, _ = RequestRecord.objects.filter(
        status=RequestRecord.RUNNING, finished__isnull=True, started__lt=now - records_seconds
    ).delete()
    records += lost
    aggregates, _ = RequestAggregate.objects.filter(bucket_start__lt=now - aggregates_seconds).delete()
    if records or aggregates:
        log.info("request records cleanup: %d records, %d aggregates deleted", records, aggregates)
    return {"records": records, "aggregates": aggregates}
