"""Request records: ingestion of batches and the comparison of revisions (docs/canary.md,
"Request records").

Place in the flow: ``POST /api/request-records/`` -> ``ingest`` (validate every record, check
``rolloutui.ingest_requestrecords`` in each namespace, store all or nothing through
``controller.records.store``); ``GET /api/modelservings/<ns>/<name>/comparison/`` -> ``comparison``
(figures per revision over one window, stable and canary named from ``status.canary``).

A record (JSON, camelCase): ``requestId`` (string, required), ``namespace``, ``name`` (the
ModelServing), ``revision`` (controller revision hash), ``deploymentRevision``, ``modelVersion``
(optional strings), ``latencyMs`` (0 to ``MAX_LATENCY_MS``, one day; required unless status is
timeout or interrupted), ``status`` (ok, error, timeout, interrupted, or running), ``feedback``
(optional, 0 to ``MAX_FEEDBACK``), ``started``, ``finished`` (epoch seconds before the year 10000,
or ISO 8601 times with a zone; finished >= started).

Token figures and the path, all optional: ``ttftMs`` (time to first token) and ``tpotMs`` (time per
output token), 0 to ``MAX_LATENCY_MS``; ``inputTokens``, ``outputTokens`` (whole numbers, 0 to
``MAX_TOKENS``); ``path``: the hops in order, at most ``MAX_HOPS`` objects ``{"role", "pod",
"revision"}`` (strings; ``pod`` optional); ``mixed`` (true when the hops ran more than one revision);
``pathError`` (``noRoute``: refused for want of a consistent path; ``kvMismatch``: hops disagreed
on the KV cache format).

A request still running is sent with ``status: running`` and no ``finished`` (``latencyMs`` once
its answer has begun, if it streams): the canary analysis counts it as started in its window and,
while its answer is not known, by its age. Its finished record, with the same ``requestId``,
replaces it (``controller.records.store``). Every figure is bounded on the way in: a finite number in its
range, or the batch is refused naming the record and the field. Unbounded, one ``1e308`` latency or
feedback made the sums infinite: the comparison then failed for everyone (JSON has no infinity)
and a ratio to an infinite stable figure passed any canary.
Ingestion is not a control: it writes no audit record; each batch is logged.
"""

from __future__ import annotations

import logging
import math
import re
from datetime import datetime
from typing import Any

from django.conf import settings

from controller.core.ports import NotFound
from controller.records import store
from controller.records.figures import compare
from rolloutui import permissions

from . import access, kv_advice

log = logging.getLogger(__name__)

INGEST = f"rolloutui.{permissions.INGEST}"
VIEW = f"rolloutui.{permissions.VIEW}"
RUNNING = "running"
STATUSES = ("ok", "error", "timeout", "interrupted", RUNNING)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
# A hop's revision: a controller revision hash or name (never a "/": the Paths panel's pairs are
# "<first>/<last>").
HOP_REVISION = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$")
FIELDS = {
    "requestId",
    "namespace",
    "name",
    "revision",
    "deploymentRevision",
    "modelVersion",
    "latencyMs",
    "status",
    "feedback",
    "started",
    "finished",
    "ttftMs",
    "tpotMs",
    "inputTokens",
    "outputTokens",
    "path",
    "mixed",
    "pathError",
}
HOP_FIELDS = ("role", "pod", "revision")
PATH_ERRORS = ("noRoute", "kvMismatch")
MAX_WINDOW_SECONDS = 7 * 24 * 3600
# Bounds of a record's figures (inclusive). A request answering after more than a day is not a
# latency the analysis can use; feedback is a score (0..1, 1..5, 0..100 are usual), never a sum.
MAX_LATENCY_MS = 24 * 3600 * 1000
MAX_FEEDBACK = 1_000_000
# A request's tokens (prompt or answer): ten million is far past any context window.
MAX_TOKENS = 10_000_000
# Hops of one path (a role per hop: prefill, decode, ... a handful in practice).
MAX_HOPS = 16
# 9999-12-31T23:59:59Z: ISO 8601 cannot write a later time, and epoch seconds must not either.
MAX_TIME = 253_402_300_799.0
MAX_POINTS = 2000


class RecordsInvalid(ValueError):
    """The batch was refused; ``errors`` is the API's body: ``{"records": {"3": {"latencyMs": [...]}}}``
    or ``{"records": ["..."]}`` for the batch as a whole."""

    def __init__(self, errors: dict[str, Any]) -> None:
        super().__init__("invalid request records")
        self.errors = errors


class RecordsDenied(PermissionError):
    pass


def max_batch() -> int:
    return int(getattr(settings, "ROLLOUTUI_RECORDS_MAX_BATCH", 5000))


def max_body_bytes() -> int:
    return int(getattr(settings, "ROLLOUTUI_RECORDS_MAX_BODY_BYTES", 4 * 1024 * 1024))


def _time(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("must be epoch seconds or an ISO 8601 time")
    if isinstance(value, (int, float)):
        t = float(value)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 time") from None
        if parsed.tzinfo is None:
            raise ValueError(f"{value!r} has no time zone (add Z or +00:00)")
        t = parsed.timestamp()
    else:
        raise ValueError("must be epoch seconds or an ISO 8601 time")
    if not math.isfinite(t) or t < 0:
        raise ValueError("must be a time after 1970")
    if t > MAX_TIME:
        raise ValueError("must be a time before the year 10000")
    return t


def _number(value: Any, *, maximum: float) -> float:
    """A finite number from 0 to ``maximum``; ``ValueError`` saying which bound it breaks."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a number")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        number = math.inf
    if not math.isfinite(number):
        raise ValueError("must be a number (finite)")
    if number < 0:
        raise ValueError("must be at least 0")
    if number > maximum:
        raise ValueError(f"must be at most {maximum:.0f}")
    return number


def _whole(value: Any, *, maximum: int) -> int:
    """A whole number from 0 to ``maximum`` (``12.0`` is 12); ``ValueError`` saying what is wrong."""
    number = _number(value, maximum=maximum)
    if number != int(number):
        raise ValueError("must be a whole number")
    return int(number)


def _path(value: Any) -> list[dict[str, str]]:
    """The hops of a path: a list of at most ``MAX_HOPS`` objects with ``role`` and ``revision``
    (and optionally ``pod``), strings. ``ValueError`` naming the hop and field."""
    if not isinstance(value, list):
        raise ValueError('must be a list of hops [{"role", "pod", "revision"}]')
    if len(value) > MAX_HOPS:
        raise ValueError(f"at most {MAX_HOPS} hops, got {len(value)}")
    hops = []
    for index, hop in enumerate(value):
        if not isinstance(hop, dict):
            raise ValueError(f'hop {index} must be an object {{"role", "pod", "revision"}}')
        unknown = sorted(set(hop) - set(HOP_FIELDS))
        if unknown:
            raise ValueError(f"hop {index}: unknown field {unknown[0]!r} (known: {', '.join(HOP_FIELDS)})")
        out = {}
        for key, limit, required, pattern in (
            ("role", 63, True, DNS_LABEL),
            ("pod", 253, False, NAME),
            ("revision", 128, True, HOP_REVISION),
        ):
            item = hop.get(key)
            if item is None or item == "":
                if required:
                    raise ValueError(f"hop {index}: {key} is required")
                continue
            if not isinstance(item, str):
                raise ValueError(f"hop {index}: {key} must be a string")
            if len(item) > limit:
                raise ValueError(f"hop {index}: {key} at most {limit} characters")
            if not pattern.match(item):
                raise ValueError(f"hop {index}: {key} {item!r} must be a Kubernetes name (letters, digits, '-', '.')")
            out[key] = item
        hops.append(out)
    return hops


def _tokens(record: dict, out: dict[str, Any], errors: dict[str, list[str]]) -> None:
    """The optional token figures and path of ``record`` into ``out`` (module docstring)."""
    for key, field in (("ttftMs", "ttft_ms"), ("tpotMs", "tpot_ms")):
        out[field] = None
        if record.get(key) is not None:
            try:
                out[field] = _number(record[key], maximum=MAX_LATENCY_MS)
            except ValueError as exc:
                errors[key] = [str(exc)]
    for key, field in (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens")):
        out[field] = None
        if record.get(key) is not None:
            try:
                out[field] = _whole(record[key], maximum=MAX_TOKENS)
            except ValueError as exc:
                errors[key] = [str(exc)]
    out["path"] = None
    if record.get("path") is not None:
        try:
            out["path"] = _path(record["path"])
        except ValueError as exc:
            errors["path"] = [str(exc)]
    mixed = record.get("mixed")
    if mixed is not None and not isinstance(mixed, bool):
        errors["mixed"] = ["must be true or false"]
    out["mixed"] = mixed if isinstance(mixed, bool) else None
    error = record.get("pathError")
    if error is not None and error not in PATH_ERRORS:
        errors["pathError"] = [f"must be one of {', '.join(PATH_ERRORS)}, got {error!r}"]
    out["path_error"] = error if error in PATH_ERRORS else None


def _text(record: dict, key: str, errors: dict, *, required: bool, max_length: int, pattern=None) -> str:
    value = record.get(key)
    if value is None or value == "":
        if required:
            errors[key] = ["this field is required"]
        return ""
    if not isinstance(value, str):
        errors[key] = ["must be a string"]
        return ""
    if len(value) > max_length:
        errors[key] = [f"at most {max_length} characters"]
        return ""
    if pattern is not None and not pattern.match(value):
        errors[key] = ["must be a Kubernetes name (lowercase letters, digits, '-')"]
        return ""
    return value


def _one(record: Any) -> tuple[dict[str, Any] | None, dict[str, list[str]]]:
    if not isinstance(record, dict):
        return None, {"non_field_errors": ["a record must be an object"]}
    errors: dict[str, list[str]] = {}
    unknown = sorted(set(record) - FIELDS)
    for key in unknown[:5]:
        errors[key] = [f"unknown field (known: {', '.join(sorted(FIELDS))})"]
    out: dict[str, Any] = {
        "request_id": _text(record, "requestId", errors, required=True, max_length=128),
        "namespace": _text(record, "namespace", errors, required=True, max_length=63, pattern=DNS_LABEL),
        "name": _text(record, "name", errors, required=True, max_length=253, pattern=NAME),
        "revision": _text(record, "revision", errors, required=True, max_length=128),
        "deployment_revision": _text(record, "deploymentRevision", errors, required=False, max_length=64),
        "model_version": _text(record, "modelVersion", errors, required=False, max_length=253),
    }
    status = record.get("status")
    if status not in STATUSES:
        errors["status"] = [f"must be one of {', '.join(STATUSES)}, got {status!r}"]
    out["status"] = status
    latency = record.get("latencyMs")
    if latency is None:
        if status in ("ok", "error"):
            errors["latencyMs"] = ["required for an answered request (status ok or error)"]
        out["latency_ms"] = None
    else:
        try:
            out["latency_ms"] = _number(latency, maximum=MAX_LATENCY_MS)
        except ValueError as exc:
            errors["latencyMs"] = [str(exc)]
    feedback = record.get("feedback")
    out["feedback"] = None
    if feedback is not None:
        try:
            out["feedback"] = _number(feedback, maximum=MAX_FEEDBACK)
        except ValueError as exc:
            errors["feedback"] = [str(exc)]
    for key in ("started", "finished"):
        if key == "finished" and status == RUNNING:
            if record.get(key) is not None:
                errors[key] = ["a running request has not finished: leave finished out (or send its final status)"]
            out[key] = None
            continue
        if record.get(key) is None:
            errors[key] = ["this field is required"]
            continue
        try:
            out[key] = _time(record[key])
        except ValueError as exc:
            errors[key] = [str(exc)]
    if out.get("started") is not None and out.get("finished") is not None and out["finished"] < out["started"]:
        errors["finished"] = ["must not be before started"]
    _tokens(record, out, errors)
    return (None, errors) if errors else (out, {})


def validate(payload: Any) -> list[dict[str, Any]]:
    """The records of a batch (a JSON list, or ``{"records": [...]}``), validated; raises
    ``RecordsInvalid`` naming each bad record by its index and field, and nothing is kept."""
    if isinstance(payload, dict):
        if set(payload) != {"records"}:
            raise RecordsInvalid({"records": ['send a JSON list of records, or {"records": [...]}']})
        payload = payload["records"]
    if not isinstance(payload, list):
        raise RecordsInvalid({"records": ['send a JSON list of records, or {"records": [...]}']})
    if not payload:
        raise RecordsInvalid({"records": ["the batch is empty"]})
    if len(payload) > max_batch():
        raise RecordsInvalid({"records": [f"{len(payload)} records in one batch, at most {max_batch()} accepted"]})
    good, errors = [], {}
    for index, raw in enumerate(payload):
        record, problems = _one(raw)
        if problems:
            errors[str(index)] = problems
        else:
            good.append(record)
    if errors:
        raise RecordsInvalid({"records": errors})
    return good


def ingest(user, payload: Any) -> dict[str, Any]:
    """Validate and store one batch, all or nothing. Needs ``rolloutui.ingest_requestrecords`` in
    every namespace the batch names (``RecordsDenied`` names the first one missing)."""
    records = validate(payload)
    for namespace in sorted({r["namespace"] for r in records}):
        if not access.allowed(user, INGEST, namespace):
            raise RecordsDenied(f"You need the {INGEST} permission in namespace {namespace} to send its records.")
    stored = store.write_records(records)
    modelservings = len({(r["namespace"], r["name"]) for r in records})
    log.info("request records ingested: %d records of %d ModelServings by %s", stored, modelservings, user)
    return {"stored": stored}


def comparison(
    user, namespace: str, name: str, *, window: float, bucket: float, now: float | None = None
) -> dict[str, Any]:
    """Figures per revision over the last ``window`` seconds (the same window for each), and a series
    per revision per ``bucket`` seconds; stable and canary from ``status.canary`` while a canary
    runs (else ``stable`` is the current revision and ``canary`` is None). Times are clock seconds
    (epoch seconds; simulated time on the embedded cluster). See the API view for the shape."""
    from . import gpu_revisions
    from .cluster import get_clock, get_cluster

    if not access.allowed(user, VIEW, namespace):
        raise NotFound(f"modelserving {namespace}/{name} not found")
    obj = get_cluster().get_modelserving(namespace, name)  # raises NotFound
    if not (0 < window <= MAX_WINDOW_SECONDS):
        raise RecordsInvalid({"window": [f"must be between 1 and {MAX_WINDOW_SECONDS} seconds"]})
    if not (0 < bucket <= window):
        raise RecordsInvalid({"bucket": ["must be more than 0 and at most the window"]})
    if window / max(bucket, store.BUCKET_SECONDS) > MAX_POINTS:
        raise RecordsInvalid({"bucket": [f"at most {MAX_POINTS} buckets per window: make it larger"]})
    end = get_clock().now() if now is None else now
    start = end - window
    got = compare(namespace, name, start, end, bucket)
    status = obj.get("status") or {}
    canary_state = status.get("canary") or {}
    revisions = got["revisions"]

    # GPU utilisation and memory per revision (gpu_revisions), as separate keys of each entry.
    resources = gpu_revisions.by_revision(namespace, name, window_seconds=window)

    def entry(revision: str | None) -> dict[str, Any] | None:
        if not revision:
            return None
        figures = revisions.get(revision) or compare_empty()
        return {"revision": revision, **figures, **gpu_revisions.figures_of(resources, revision)}

    running = canary_state.get("revision") and canary_state.get("phase") in ("Running", "Paused", "Failed")
    if running:
        stable, canary = entry(canary_state.get("stable")), entry(canary_state.get("revision"))
    else:
        stable = entry(status.get("currentRevision") or status.get("updateRevision"))
        canary = None
    return {
        "window": {"start": start, "end": end, "seconds": window},
        "bucketSeconds": got["bucketSeconds"],
        "stable": stable,
        "canary": canary,
        "revisions": [
            {"revision": rev, **figures, **gpu_revisions.figures_of(resources, rev)}
            for rev, figures in revisions.items()
        ],
        "resourcesSource": resources["source"],
        "series": got["series"],
    }


PATHS_MAX_WINDOW_SECONDS = 24 * 3600


def paths(user, namespace: str, name: str, *, window: float, bucket: float, now: float | None = None) -> dict[str, Any]:
    """The Paths panel's data: requests per revision pair and outcome over the last ``window``
    seconds in ``bucket``-second points, from the stored sums (a few rows per bucket, however many
    requests), and per ServingGroup the revisions with a consistent path right now.

    ``{"path": ["prefill", "decode"] | [], "reason": str | None, "window": {...}, "bucketSeconds": 60,
    "totals": {"consistent": n, "mixed": n, "noRoute": n, "kvMismatch": n},
    "series": [{"pair": "a/b", "bucketStart": t, "consistent": n, "mixed": n, ...}],
    "groups": [{"group": 0, "consistent": ["<rev>", ...]}], "warnings": [{"path", "message"}]}``
    (``warnings``: the spec's path hands the KV cache between images of different formats,
    ``kv_advice``: every request of its revision fails, however it is routed). A pair is the revisions of the first
    and last hop (``"<rev>/-"`` for a request refused before any hop). Without ``spec.traffic.path``
    the ModelServing has no path: ``path`` is ``[]`` and ``reason`` says so."""
    from controller.core.latency import PATH_OUTCOMES
    from controller.core.pathview import consistent_revisions
    from controller.core.revisions import History
    from controller.models import RequestAggregate

    from .cluster import get_clock, get_cluster
    from .state import get_state

    if not access.allowed(user, VIEW, namespace):
        raise NotFound(f"modelserving {namespace}/{name} not found")
    cluster = get_cluster()
    obj = cluster.get_modelserving(namespace, name)  # raises NotFound
    if not (0 < window <= PATHS_MAX_WINDOW_SECONDS):
        raise RecordsInvalid({"window": [f"must be between 1 and {PATHS_MAX_WINDOW_SECONDS} seconds"]})
    if not (0 < bucket <= window):
        raise RecordsInvalid({"bucket": ["must be more than 0 and at most the window"]})
    if window / max(bucket, store.BUCKET_SECONDS) > MAX_POINTS:
        raise RecordsInvalid({"bucket": [f"at most {MAX_POINTS} buckets per window: make it larger"]})
    traffic = (obj.get("spec") or {}).get("traffic") or {}
    path = [str(role) for role in (traffic.get("path") or []) if isinstance(role, str)]
    end = get_clock().now() if now is None else now
    start = end - window
    step = max(store.BUCKET_SECONDS, math.ceil(bucket / store.BUCKET_SECONDS) * store.BUCKET_SECONDS)
    out: dict[str, Any] = {
        "path": path,
        "reason": None if path else "this ModelServing has no request path (spec.traffic.path)",
        "window": {"start": start, "end": end, "seconds": window},
        "bucketSeconds": step,
        "totals": dict.fromkeys(PATH_OUTCOMES, 0),
        "series": [],
        "groups": [],
        "warnings": kv_advice.warnings_of_stored(obj) if path else [],
    }
    if not path:
        return out
    lo = math.floor(start / store.BUCKET_SECONDS) * store.BUCKET_SECONDS
    points: dict[tuple[str, float], dict[str, int]] = {}
    rows = RequestAggregate.objects.filter(
        namespace=namespace, name=name, bucket_start__gte=lo, bucket_start__lt=end
    ).values_list("bucket_start", "paths")
    for began, pairs in rows:
        t = lo + math.floor((began - lo) / step) * step
        for pair, outcomes in (pairs or {}).items():
            counts = points.setdefault((str(pair), t), dict.fromkeys(PATH_OUTCOMES, 0))
            for outcome, n in (outcomes or {}).items():
                if outcome in counts:
                    counts[outcome] += int(n)
                    out["totals"][outcome] += int(n)
    # A hop's revision has no "/" (ingestion refuses one), so the pair splits at its last "/".
    out["series"] = [
        {"pair": pair, "first": pair.rpartition("/")[0], "last": pair.rpartition("/")[2], "bucketStart": t}
        | points[(pair, t)]
        for pair, t in sorted(points)
    ]
    history = History.from_objects(cluster.list_revisions(namespace, name))
    role_hashes = {rev.hash: rev.role_hashes() for rev in history.revisions if rev.readable}
    state = get_state(namespace, name)
    reach = consistent_revisions(state.get("instances") or [], path, role_hashes)
    out["groups"] = [{"group": g, "consistent": revs} for g, revs in sorted(reach.items())]
    return out


def compare_empty() -> dict[str, Any]:
    from controller.core.analysis import empty_figures
    from controller.core.latency import Sums

    return {**empty_figures(), **Sums().token_figures()}
