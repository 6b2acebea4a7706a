"""Request routing of the simulated cluster, as pure rules: which pod a request goes to, how long it
keeps the pod busy, how it ends, and which requests a pod that stops serving takes down with it.

Both drivers apply these and only keep the requests their own way: the in-memory router
(``memory.router``: request records and timers on the event loop; ``simulate``'s trace) and the
live app's traffic (``database.traffic``: in-flight counts in the Redis hash a real router keeps,
read by the controller through the Kubernetes adapter's ``RedisInFlightRouter``).

- Only ENTRY pods serve (pod index 0, or the entry label), and only while routable: Ready (and
  phase Running), not terminating (``deletionTimestamp``), not marked draining (annotation
  ``serving.rolloutui.io/draining``, the controller's half of the router contract).
- A request goes to the routable entry pod with the fewest requests in flight; ties go to the pod
  name that sorts first (Kthena's least-request router). With none routable it is ``rejected``.
- It has a latency (time to first token) drawn from the image's ``latencyMs`` (default 80-300 ms)
  and is answered with an error with the image's ``errorRate``. An error answer frees the pod after
  its latency; a good one streams for its whole duration (at least its latency).
- A pod that stops serving (deleted, a container restarted, its node lost, killed) interrupts every
  request in flight on its engine: an entry pod its own; a worker pod (index > 0) those of its
  entry, since a request runs on the whole engine (entry and workers).

Results: ``ok``, ``error``, ``interrupted``, ``rejected``. ``summary`` is the trace's ``requests``.

InferenceServices (KServe): a request first goes to one traffic target, drawn by the weights of
the InferenceService's traffic split (``isvc_targets``: Knative revisions in Serverless mode,
the predictor and canary Deployments in Standard mode), then to the least busy routable pod of
that target; a target without a routable pod rejects it (a Service without endpoints). Requests
are counted per revision: the ModelServing revision label, else the Knative revision, else the
pod-template-hash (``revision_label``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from controller.core import naming
from controller.core.evidence import EVIDENCE, TTFT_EVIDENCE, evidence_of
from controller.core.kserve.apps import LABEL_APP, LABEL_KNATIVE_REVISION, LABEL_TEMPLATE_HASH
from controller.core.ports import Obj

from . import paths
from .config import DEFAULT_LATENCY_MS, DEFAULT_TPOT_MS, ClusterConfig, Traffic

OK, ERROR, TIMEOUT, INTERRUPTED, REJECTED = "ok", "error", "timeout", "interrupted", "rejected"


def is_entry(pod: Obj) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if naming.LABEL_ENTRY in labels:
        return str(labels[naming.LABEL_ENTRY]).lower() == "true"
    return str(labels.get(naming.LABEL_POD_INDEX, "0")) == "0"


def is_routable(pod: Obj) -> bool:
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp") or naming.ANNOTATION_DRAINING in (meta.get("annotations") or {}):
        return False
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def routable_entries(pods: Iterable[Obj]) -> list[Obj]:
    """The pods a new request may go to."""
    return [p for p in pods if is_entry(p) and is_routable(p)]


def pick(pods: list[Obj], in_flight: Callable[[Obj], int]) -> Obj | None:
    """The least busy of ``pods`` (ties: the first name); ``None`` when there is none (rejected).

    Example: in flight {"a": 2, "b": 1, "c": 1} -> "b".
    """
    if not pods:
        return None
    return min(pods, key=lambda p: (in_flight(p), p["metadata"]["name"]))


def engine_entry(pod_name: str) -> str:
    """The pod whose requests stop when ``pod_name`` stops serving: a worker's entry, else itself.

    Pod names end in ``-<podIndex>`` (0 = the entry): "g-0-serve-0-1" -> "g-0-serve-0-0".
    """
    base, _, index = pod_name.rpartition("-")
    if index.isdigit() and index != "0" and base:
        return f"{base}-0"
    return pod_name


def revision_label(pod: Obj) -> str | None:
    """The revision a request to ``pod`` is counted under (see the module docstring)."""
    return _revision_of_labels((pod.get("metadata") or {}).get("labels") or {})


def _revision_of_labels(labels: dict) -> str | None:
    return labels.get(naming.LABEL_REVISION) or labels.get(LABEL_KNATIVE_REVISION) or labels.get(LABEL_TEMPLATE_HASH)


@dataclass(frozen=True)
class Target:
    """One traffic target of an InferenceService: pods whose ``label`` is ``value`` get ``percent``."""

    revision: str | None
    percent: int
    label: str
    value: str


def isvc_targets(isvc: Obj) -> list[Target]:
    """The predictor's traffic targets from the InferenceService's status (what KServe wrote on the
    Knative route or the HTTPRoute). Example (Serverless canary): ``[Target("llm-predictor-00002",
    10, revision label, ...), Target("llm-predictor-00001", 90, ...)]``."""
    entries = ((((isvc.get("status") or {}).get("components") or {}).get("predictor") or {}).get("traffic")) or []
    out = []
    for e in entries:
        percent = int(e.get("percent") or 0)
        if e.get("backend"):
            out.append(Target(e.get("revisionName"), percent, LABEL_APP, f"isvc.{e['backend']}"))
        elif e.get("revisionName"):
            out.append(Target(e["revisionName"], percent, LABEL_KNATIVE_REVISION, e["revisionName"]))
    return out


def pick_target(targets: list[Target], rng: random.Random) -> Target | None:
    """A target drawn by weight (one draw from ``rng``); None when no target has a share.

    Example: shares 10 and 90: a draw below 0.1 goes to the first."""
    total = sum(t.percent for t in targets if t.percent > 0)
    if total <= 0:
        return None
    point = rng.random() * total
    for t in targets:
        if t.percent <= 0:
            continue
        if point < t.percent:
            return t
        point -= t.percent
    return next(t for t in reversed(targets) if t.percent > 0)


def target_pods(target: Target, pods: Iterable[Obj]) -> list[Obj]:
    """The routable pods of ``target``."""
    return [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(target.label) == target.value and is_routable(p)
    ]


@dataclass
class Request:
    id: int
    start: float
    pod: str | None
    pod_uid: str | None
    revision: str | None
    latency_ms: float | None
    duration: float
    result: str | None = None  # None while in flight
    end: float | None = None
    busy: float = 0.0  # seconds it keeps its pod busy from ``start``
    answer: str | None = None  # the result it gets unless it is interrupted first
    # With a request path or token figures (``send_path``); None otherwise. ``hops``: (role, pod,
    # uid, revision label) in order, and ``hop_busy`` the seconds each keeps its pod busy.
    hops: tuple[tuple[str, str, str, str | None], ...] | None = None
    hop_busy: tuple[float, ...] = ()
    mixed: bool | None = None
    mixed_pair: str | None = None  # "<first hop's revision>/<first hop off it>" of a mixed path
    path_error: str | None = None  # paths.NO_ROUTE or paths.KV_MISMATCH
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def record(self) -> dict:
        out = {
            "id": self.id,
            "revision": self.revision,
            "pod": self.pod,
            "start": round(self.start, 3),
            "latencyMs": None if self.latency_ms is None else round(self.latency_ms, 1),
            "end": None if self.end is None else round(self.end, 3),
            "result": self.result,
        }
        # What a path or token figures add, only when known (records of other runs keep their keys).
        if self.ttft_ms is not None:
            out["ttftMs"] = round(self.ttft_ms, 1)
        if self.tpot_ms is not None:
            out["tpotMs"] = round(self.tpot_ms, 2)
        if self.input_tokens is not None:
            out["inputTokens"] = self.input_tokens
        if self.output_tokens is not None:
            out["outputTokens"] = self.output_tokens
        if self.hops is not None:
            out["path"] = [{"role": h[0], "pod": h[1], "revision": h[3]} for h in self.hops]
        if self.mixed is not None:
            out["mixed"] = self.mixed
        if self.path_error is not None:
            out["pathError"] = self.path_error
        return out


def send(request_id: int, now: float, duration: float, pod: Obj | None, config: ClusterConfig, rng: random.Random):
    """A request arriving at ``now`` for ``duration`` seconds, sent to ``pod`` (``None``: rejected).

    Draws from ``rng``, in this order: the latency, then (only for an image with an error rate)
    whether it is answered with an error.
    """
    if pod is None:
        return Request(request_id, now, None, None, None, None, duration, result=REJECTED, end=now)
    meta = pod["metadata"]
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    behaviour = config.image(containers[0].get("image", ""))
    latency_ms = (behaviour.latency_ms or DEFAULT_LATENCY_MS).draw(rng)
    error = behaviour.error_rate > 0 and rng.random() < behaviour.error_rate
    # Drawn only for an image with a timeout rate, so other runs draw exactly as before.
    timeout = not error and behaviour.timeout_rate > 0 and rng.random() < behaviour.timeout_rate
    # An error answer ends after its latency; a good one streams for the whole duration; a request
    # that times out holds the pod for its whole duration and never answers.
    busy = latency_ms / 1000.0 if error else max(duration, latency_ms / 1000.0)
    revision = revision_label(pod)
    if timeout:
        return Request(
            request_id, now, meta["name"], meta["uid"], revision, None, duration, busy=duration, answer=TIMEOUT
        )
    return Request(
        request_id,
        now,
        meta["name"],
        meta["uid"],
        revision,
        latency_ms,
        duration,
        busy=busy,
        answer=ERROR if error else OK,
    )


def _image_of(pod: Obj, config: ClusterConfig):
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return config.image(containers[0].get("image", ""))


def refused(request_id: int, now: float, *, path: bool) -> Request:
    """A request with no hop for some role of its path, or no consistent path (``noRoute``):
    refused at once, never sent down a mixed path."""
    req = Request(request_id, now, None, None, None, None, 0.0, result=REJECTED, end=now)
    if path:
        req.hops, req.path_error = (), paths.NO_ROUTE
    return req


def send_path(
    request_id: int,
    now: float,
    duration: float | None,
    choice: paths.Choice,
    traffic: Traffic,
    config: ClusterConfig,
    rng: random.Random,
    *,
    mixed_pair: str | None = None,
    with_path: bool = True,
) -> Request:
    """A request arriving at ``now`` sent down ``choice``'s pods (one pod without a path).

    Its timing is ``_draw_path_timing``'s, its failures ``_draw_path_failures``' (an image's
    ``errorRate``/``timeoutRate`` of any hop apply as in ``send``), and how it ends
    ``_end_path_request``'s (hops whose images declare different ``kvFormat`` fail with
    ``kvMismatch`` at the first token). Draws from ``rng``, in this order: the timing's draws,
    then for each hop whose image has an error rate whether it errs, then likewise for timeouts.
    """
    pods_ = choice.pods
    images = [_image_of(p, config) for p in pods_]
    input_tokens, output_tokens, ttft, tpot, duration = _draw_path_timing(images, traffic, duration, rng)
    error, timeout = _draw_path_failures(images, rng)
    entry = pods_[0]["metadata"]
    req = Request(
        request_id,
        now,
        entry["name"],
        entry["uid"],
        choice.revision,
        ttft,
        duration,
        hops=_hops_of(pods_) if with_path else None,
        mixed=choice.mixed if with_path else None,
        mixed_pair=mixed_pair,
        ttft_ms=ttft,
        tpot_ms=tpot,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )
    mismatch = paths.kv_mismatch(image.kv_format for image in images)
    _end_path_request(req, len(pods_), mismatch=mismatch, error=error, timeout=timeout)
    return req


def _draw_path_timing(images: list, traffic: Traffic, duration: float | None, rng: random.Random) -> tuple:
    """``(input tokens, output tokens, ttft ms, tpot ms, duration s)`` of a request down hops
    with ``images``.

    The time to first token comes from the first hop's image (``ttftMs``, else ``latencyMs``, else
    the default latency); with token figures (``traffic.tokens``) the output tokens take
    ``tpotMs`` each (the last hop's image; default ``DEFAULT_TPOT_MS``), so the request lasts
    ``ttft + output x tpot``; without them it lasts ``duration`` (tokens and tpot None). Never
    shorter than its time to first token. Draws, in this order: input and output tokens (with
    token figures), the time to first token, the time per output token (with token figures).
    Example: ttft 100 ms, 50 output tokens at 20 ms -> it lasts 0.1 + 50 x 0.02 = 1.1 s.
    """
    first, last = images[0], images[-1]
    input_tokens = output_tokens = None
    if traffic.tokens:
        input_tokens = int(round(traffic.input_tokens.draw(rng))) if traffic.input_tokens is not None else None
        output_tokens = int(round(traffic.output_tokens.draw(rng)))
    ttft = (first.ttft_ms or first.latency_ms or DEFAULT_LATENCY_MS).draw(rng)
    tpot = None
    if output_tokens is not None:
        tpot = (last.tpot_ms or DEFAULT_TPOT_MS).draw(rng)
        duration = (ttft + output_tokens * tpot) / 1000.0
    return input_tokens, output_tokens, ttft, tpot, max(float(duration or 0.0), ttft / 1000.0)


def _draw_path_failures(images: list, rng: random.Random) -> tuple[bool, bool]:
    """``(error, timeout)`` of a request down hops with ``images``.

    Every hop whose image has an error rate draws (all of them, even after one erred, so the
    number of draws does not depend on their outcome); only a request that did not err then draws
    likewise for timeouts. Images without rates draw nothing, so other runs draw as before.
    """
    error = False
    for image in images:
        if image.error_rate > 0 and rng.random() < image.error_rate:
            error = True
    timeout = False
    if not error:
        for image in images:
            if image.timeout_rate > 0 and rng.random() < image.timeout_rate:
                timeout = True
    return error, timeout


def _hops_of(pods_: list[Obj]) -> tuple[tuple[str, str, str, str | None], ...]:
    """``(role, pod name, uid, revision label)`` of each pod of a path, in order (``paths.role_of``
    and ``revision_label`` from one read of the labels: every hop of every request)."""
    return tuple(map(_hop_of, pods_))


def _hop_of(pod: Obj) -> tuple[str, str, str, str | None]:
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    return labels.get(naming.LABEL_ROLE) or "", meta["name"], meta["uid"], _revision_of_labels(labels)


def _end_path_request(req: Request, hop_count: int, *, mismatch: bool, error: bool, timeout: bool) -> None:
    """Sets how ``req`` (its ``ttft_ms`` and ``duration`` drawn) ends and how long each hop is busy.

    - KV formats that disagree (``mismatch``) or an engine error: an error answer at the first
      token, every hop busy until then, no time per output token.
    - A timeout: no answer and no latency figures, but it holds its hops as a good answer would.
    - Otherwise a good answer. Every hop but the last is busy until the first token, the last until
      the end. Example: ttft 100 ms, duration 1.1 s, two hops -> busy (0.1, 1.1).
    """
    first_token = req.ttft_ms / 1000.0
    if mismatch or error:
        # The KV cache cannot be handed over (or the engine errs): an error answer at the first token.
        req.answer, req.busy, req.tpot_ms = ERROR, first_token, None
        req.path_error = paths.KV_MISMATCH if mismatch else None
        req.hop_busy = (first_token,) * hop_count
        return
    if timeout:
        req.answer, req.latency_ms, req.ttft_ms, req.tpot_ms = TIMEOUT, None, None, None
    else:
        req.answer = OK
    req.busy = req.duration
    req.hop_busy = (first_token,) * (hop_count - 1) + (req.duration,)


def window_figures(
    requests: list[Request], revision: str, start: float, end: float, at: float | None = None, *, tokens: bool = False
) -> dict:
    """The canary analysis' figures of one revision (``ports.MetricsPort.window``) as known at
    ``at`` (default: the window's end): the requests that started in [start, end) on its pods
    (``started``; rejected ones never reached a revision) and those of them that have finished
    (``requests``). Rates are shares of the finished ones; latencies (time to the answer) of the
    answered finished ones, nearest rank; ``durationP99Ms`` of the finished ones' whole durations.

    ``evidence`` carries every answer's latency, finished or still streaming, and the age of each
    request still waiting for its answer (``core.evidence``): a request that is still running
    has answered once its latency has passed. Example at t=100: a request that started at 70 with
    a latency of 5 s and streams until 130 has answered (5,000 ms); one that started at 90 with a
    latency of 40 s is waiting, 10,000 ms old.

    ``tokens`` (a run with request paths or token figures): the figures add ``ttftP50Ms``..
    ``ttftP99Ms`` (time to first token of the answered finished requests), ``tpotP50Ms``..
    ``tpotP99Ms`` (time per output token of the finished good ones), ``mixedPaths`` (finished
    requests whose path was mixed) and ``ttftEvidence`` (the time to first token's evidence, the
    same as ``evidence`` since a request's latency is its time to first token)."""
    at = end if at is None else at
    mine = [r for r in requests if r.revision == revision and start <= r.start < end and r.result != REJECTED]
    out = _window_figures(mine, at)
    if tokens:
        done = [r for r in mine if r.result is not None]
        ttft = sorted(r.ttft_ms for r in done if r.result in (OK, ERROR) and r.ttft_ms is not None)
        tpot = sorted(r.tpot_ms for r in done if r.result == OK and r.tpot_ms is not None)
        for q in (50, 95, 99):
            out[f"ttftP{q}Ms"] = _percentile(ttft, q / 100)
        for q in (50, 95, 99):
            out[f"tpotP{q}Ms"] = _percentile(tpot, q / 100)
        out["mixedPaths"] = sum(bool(r.mixed) for r in done) if done else None
        out[TTFT_EVIDENCE] = out[EVIDENCE]
    return out


def _window_figures(mine: list[Request], at: float) -> dict:
    done = [r for r in mine if r.result is not None]
    answered, waiting = [], []
    for r in mine:
        if r.result is None and (r.latency_ms is None or r.start + r.latency_ms / 1000.0 > at):
            waiting.append((at - r.start) * 1000.0)
        elif r.result in (None, OK, ERROR) and r.latency_ms is not None:
            answered.append(r.latency_ms)
    evidence = evidence_of(answered, waiting)
    if not done:
        return {
            "requests": 0,
            "started": len(mine),
            "errorRate": None,
            "timeoutRate": None,
            "latencyP50Ms": None,
            "latencyP95Ms": None,
            "latencyP99Ms": None,
            "feedbackMean": None,
            "durationP99Ms": None,
            EVIDENCE: evidence,
        }
    latencies = sorted(r.latency_ms for r in done if r.result in (OK, ERROR) and r.latency_ms is not None)
    durations = sorted((r.end - r.start) * 1000.0 for r in done if r.result in (OK, ERROR, TIMEOUT))
    return {
        "requests": len(done),
        "started": len(mine),
        "errorRate": round(sum(r.result == ERROR for r in done) / len(done), 6),
        "timeoutRate": round(sum(r.result == TIMEOUT for r in done) / len(done), 6),
        "latencyP50Ms": _percentile(latencies, 0.50),
        "latencyP95Ms": _percentile(latencies, 0.95),
        "latencyP99Ms": _percentile(latencies, 0.99),
        "feedbackMean": None,
        "durationP99Ms": _percentile(durations, 0.99),
        EVIDENCE: evidence,
    }


def summary(requests: list[Request]) -> dict:
    """The trace's ``requests`` object.

    ``failed`` = every finished request that did not succeed (error + interrupted + rejected);
    ``interrupted`` and ``rejected`` break it down; ``unfinished`` were still in flight at the end.
    Per revision: p50/p99 of the latency (ms) of answered (ok or error) requests, nearest rank:
    for 200 answers p99 is the 198th smallest (ceil(0.99 * 200) = 198).
    """
    done = [r for r in requests if r.result is not None]
    counts = {k: 0 for k in (OK, ERROR, TIMEOUT, INTERRUPTED, REJECTED)}
    for r in done:
        counts[r.result] += 1
    by_rev: dict[str, list[Request]] = {}
    for r in done:
        if r.revision is not None:
            by_rev.setdefault(r.revision, []).append(r)
    with_path = any(r.hops is not None for r in requests)
    with_tokens = any(r.ttft_ms is not None or r.output_tokens is not None for r in requests)
    out = {
        "total": len(done),
        "succeeded": counts[OK],
        "failed": len(done) - counts[OK],
        "interrupted": counts[INTERRUPTED],
        "rejected": counts[REJECTED],
        "errors": counts[ERROR],
        "timeouts": counts[TIMEOUT],
        "unfinished": len(requests) - len(done),
        "byRevision": {},
    }
    for rev in sorted(by_rev):
        reqs = by_rev[rev]
        lat = sorted(r.latency_ms for r in reqs if r.result in (OK, ERROR))
        errors = sum(r.result == ERROR for r in reqs)
        out["byRevision"][rev] = {
            "total": len(reqs),
            "ok": sum(r.result == OK for r in reqs),
            "failed": sum(r.result != OK for r in reqs),
            "timeouts": sum(r.result == TIMEOUT for r in reqs),
            "interrupted": sum(r.result == INTERRUPTED for r in reqs),
            "errorRate": round(errors / len(reqs), 4),
            "p50": _percentile(lat, 0.50),
            "p95": _percentile(lat, 0.95),
            "p99": _percentile(lat, 0.99),
        }
        if with_tokens:
            out["byRevision"][rev].update(_token_figures(reqs))
    if with_path:
        out["paths"], out["mixedByPair"] = _path_counts(requests)
    return out


def _token_figures(reqs: list[Request]) -> dict:
    """A revision's token figures: time to first token (answered requests) and per output token
    (good ones), nearest rank, in ms; ``outputTokens``: the output tokens of its good requests."""
    ttft = sorted(r.ttft_ms for r in reqs if r.result in (OK, ERROR) and r.ttft_ms is not None)
    tpot = sorted(r.tpot_ms for r in reqs if r.result == OK and r.tpot_ms is not None)
    return {
        "ttftP50": _percentile(ttft, 0.50),
        "ttftP95": _percentile(ttft, 0.95),
        "ttftP99": _percentile(ttft, 0.99),
        "tpotP50": _percentile(tpot, 0.50),
        "tpotP95": _percentile(tpot, 0.95),
        "tpotP99": _percentile(tpot, 0.99),
        "outputTokens": sum(r.output_tokens or 0 for r in reqs if r.result == OK),
    }


def _path_counts(requests: list[Request]) -> tuple[dict, dict]:
    """The trace's ``requests.paths`` over every request sent down a path (finished or not):
    ``total`` = ``consistent`` + ``mixed`` + ``noRoute``; ``kvMismatch`` counts those of them that
    failed because their hops disagreed on the KV format. ``mixedByPair``: mixed requests by
    "<first hop's revision>/<revision of the first hop that left it>", sorted."""
    counts = {"total": 0, "consistent": 0, "mixed": 0, "noRoute": 0, "kvMismatch": 0}
    pairs: dict[str, int] = {}
    for r in requests:
        if r.hops is None:
            continue
        counts["total"] += 1
        if r.path_error == paths.NO_ROUTE:
            counts["noRoute"] += 1
            continue
        if r.mixed:
            counts["mixed"] += 1
            if r.mixed_pair:
                pairs[r.mixed_pair] = pairs.get(r.mixed_pair, 0) + 1
        else:
            counts["consistent"] += 1
        if r.path_error == paths.KV_MISMATCH:
            counts["kvMismatch"] += 1
    return counts, dict(sorted(pairs.items()))


def _percentile(sorted_values: list[float], q: float) -> int | None:
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return int(round(sorted_values[rank - 1]))


class SimulatedVerifier:
    """The ``VerifierPort`` of the simulated cluster: the model server's answer to
    ``spec.verification`` follows the entry pod's image profile, deterministically. An image whose
    ``errorRate`` is 1 answers 500 (a broken build); any other answers the expected status.

    Example: images {"engine:v2-bad": {errorRate: 1}} -> verification of a v2-bad instance fails with
    status 500; "engine:v2" passes with status 200.
    """

    def __init__(self, config: ClusterConfig | Callable[[], ClusterConfig]) -> None:
        self._config = config

    def verify(self, namespace: str, pod: Obj, verification: dict) -> dict:
        config = self._config() if callable(self._config) else self._config
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        behaviour = config.image(containers[0].get("image", ""))
        latency = (behaviour.latency_ms or DEFAULT_LATENCY_MS).low
        expect = int(verification.get("expectStatus") or 200)
        if behaviour.crash:
            return {"passed": False, "status": None, "error": "connection refused", "latencyMs": None}
        status = 500 if behaviour.error_rate >= 1 else expect
        body = "internal error" if status == 500 else "ok"
        return {"passed": status == expect, "status": status, "body": body, "latencyMs": latency}
