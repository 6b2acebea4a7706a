"""Simulated request traffic of the live app, with in-flight counts in Redis.

The in-flight counts are kept exactly as a real router keeps them for the Kubernetes adapter's
``RedisInFlightRouter`` (hash ``kthena:on-flight-requests``, field ``<namespace>/<pod>``, a decimal
count; the field is deleted at 0), so the controller reads them through that same router on both
backends. Next to it, each busy pod has a sorted set of its requests scored by their (simulated) end
time, from which each tick finishes the requests that ended.

An InferenceService's row (``kind``) sends each request to a traffic target drawn by the weights in
its status, then to that target's least busy routable pod (``routing.isvc_targets``).

Per tick, for every ``SimTraffic`` row with ``rps > 0``: the number of arrivals since the last tick
is drawn from a Poisson distribution (mean ``rps * elapsed``; at rps 20 and a 1 s tick, 20 on
average), each with a duration drawn from ``[duration_low, duration_high]``. Where a request goes,
how long it keeps its pod busy and which requests a stopping pod interrupts are the rules of
``controller.simcluster.routing`` (the in-memory router's too): the least busy routable entry pod,
rejected when there is none; a pod that stops serving (deleted, container restarted, node failed,
killed) interrupts the requests of its engine. Sent, completed, interrupted and rejected requests
are counted in the ``SimTraffic`` row (an error or timeout answer counts as completed).

Every request that reached a pod leaves a request record (``controller.records``) when it ends:
its pod's revision label (``routing.revision_label``), the pod's model version and deployment
revision labels when it has them, its answer (``ok``, ``error``, ``timeout`` from the image
profile's ``errorRate``/``timeoutRate``, or ``interrupted`` when its pod stopped serving), its
latency and its start and end (simulated seconds). What the record needs travels in the request's
member of the pod's sorted set (``_member``), so finishing a tick's requests is one Redis round
trip and one batched insert.

While it runs, the same request has a record of status ``running`` (written with its arrivals,
replaced by the finished one): the canary analysis counts it as started, and as evidence by its age
until its answer is due (``started + latency``: the router drew its latency when it sent it, so
the record carries it, and the analysis reads it as known only once that time has passed, as it
would be for a router that sends a record when the first token arrives).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable

import orjson
import redis
from django.db.models import F

from controller.core.kserve.apps import condition
from controller.core.kserve.materialize import LABEL_ISVC
from controller.core.ports import Obj
from controller.core.spec import DEFAULT_TRAFFIC, Traffic, ValidationError, parse_traffic
from controller.models import SimObject, SimTraffic
from controller.records.store import write_records
from controller.simcluster import paths, routing, weights
from controller.simcluster.config import ClusterConfig, Span
from controller.simcluster.config import Traffic as Load

log = logging.getLogger(__name__)

# After an outage, arrivals are generated for at most this much simulated time (not a burst of
# everything that "should" have arrived while nothing ran).
MAX_BACKLOG_SECONDS = 10.0

# Labels a pod may carry that a request record names (a release writes the model version label).
LABEL_MODEL_VERSION = "serving.rolloutui.io/model-version"
LABEL_DEPLOYMENT_REVISION = "serving.rolloutui.io/deployment-revision"
SEP = "|"
# The engine's access log per pod (a capped Redis list, ``RedisTraffic.requests_of``).
LOG_KEEP = 50
LOG_TTL_SECONDS = 3600
RUNNING = "running"  # the status of a request record while its request runs


def _member(arrival: float, i: int, rand: int, request: routing.Request, pod: Obj | None, owner: str) -> str:
    """The sorted-set member of one request: unique (arrival, index, random bits), then what its
    record needs. Example: ``"1700000000.250000:3:12345|error|182.4|ms-5d8f|v7|12|demo"``."""
    labels = ((pod or {}).get("metadata") or {}).get("labels") or {}
    latency = "" if request.latency_ms is None else f"{request.latency_ms:.3f}"
    fields = (
        request.answer or "",
        latency,
        request.revision or "",
        labels.get(LABEL_MODEL_VERSION, ""),
        labels.get(LABEL_DEPLOYMENT_REVISION, ""),
        owner,
    )
    if request.hops is not None or request.ttft_ms is not None or request.output_tokens is not None:
        fields += _path_fields(request)
    return f"{arrival:.6f}:{i}:{rand}{SEP}" + SEP.join(str(f).replace(SEP, "/") for f in fields)


def _number(value: float | int | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _path_fields(request: routing.Request) -> tuple[str, ...]:
    """What a request path or token figures add to a member (``_member``): ttft, tpot, input and
    output tokens, the hops (``role:pod:revision`` joined by ``,``), mixed (1/0) and the path error."""
    hops = "" if request.hops is None else ",".join(f"{h[0]}:{h[1]}:{h[3] or ''}" for h in request.hops)
    return (
        _number(request.ttft_ms),
        _number(request.tpot_ms),
        "" if request.input_tokens is None else str(request.input_tokens),
        "" if request.output_tokens is None else str(request.output_tokens),
        hops if request.hops is not None else "-",
        "" if request.mixed is None else ("1" if request.mixed else "0"),
        request.path_error or "",
    )


PATH_FIELDS = 7
# A member that only keeps a path's earlier hop busy (until the first token): no record of its own;
# it names the last hop's pod after LAST_HOP, where the request's record-carrying member is.
RELEASE = "~"
LAST_HOP = ">"


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _record(namespace: str, member: str, end: float | None, status: str | None = None) -> dict | None:
    """The request record of a finished (or, with ``status``, interrupted, or ``running`` with
    ``end`` None) request's member; None for a member without one (written before records
    existed, or of a pod without a revision)."""
    head, sep, rest = member.partition(SEP)
    if not sep:
        return None
    parts = rest.split(SEP)
    if len(parts) not in (6, 6 + PATH_FIELDS) or not parts[2] or not parts[5]:
        return None
    answer, latency, revision, model_version, deployment_revision, owner = parts[:6]
    arrival = float(head.split(":", 1)[0])
    status = status or answer
    if status == RUNNING:
        # Its latency is the answer it will have (read as known once it is due); none for a request
        # that will time out.
        latency_ms = float(latency) if latency and answer in (routing.OK, routing.ERROR) else None
        finished = None
    else:
        latency_ms = float(latency) if latency and status in (routing.OK, routing.ERROR) else None
        finished = max(end, arrival)
    return {
        "request_id": f"sim-{head}",
        "namespace": namespace,
        "name": owner,
        "revision": revision,
        "model_version": model_version,
        "deployment_revision": deployment_revision,
        "latency_ms": latency_ms,
        "status": status,
        "feedback": None,
        "started": arrival,
        "finished": finished,
    } | (_path_record(parts[6:], status) if len(parts) > 6 else {})


def _path_record(extra: list[str], status: str) -> dict:
    """The record fields of a member's path and token figures (``_path_fields``)."""
    ttft, tpot, input_tokens, output_tokens, hops, mixed, path_error = extra
    answered = status in (RUNNING, routing.OK, routing.ERROR)
    out: dict = {
        "ttft_ms": float(ttft) if ttft and answered else None,
        "tpot_ms": float(tpot) if tpot and status in (RUNNING, routing.OK) else None,
        "input_tokens": int(input_tokens) if input_tokens else None,
        "output_tokens": int(output_tokens) if output_tokens else None,
    }
    if hops != "-":
        out["path"] = [
            dict(zip(("role", "pod", "revision"), h.split(":", 2), strict=True)) for h in hops.split(",") if h
        ]
        out["mixed"] = mixed == "1"
        if path_error:
            out["path_error"] = path_error
    return out


def _served(record: dict) -> str:
    """A finished request as the pod's access log keeps it: ``id|started|finished|status|latency``."""
    latency = "" if record["latency_ms"] is None else f"{record['latency_ms']:.1f}"
    return SEP.join(
        (record["request_id"], f"{record['started']:.3f}", f"{record['finished']:.3f}", record["status"], latency)
    )


def _save(records: list[dict]) -> None:
    if not records:
        return
    try:
        write_records(records)
    except Exception:  # records are best effort: the simulated traffic goes on without them
        log.exception("could not store %d request records", len(records))


def field(namespace: str, pod: str) -> str:
    return f"{namespace}/{pod}"


def poisson(rng: random.Random, mean: float) -> int:
    if mean <= 0:
        return 0
    if mean > 50:  # normal approximation; Knuth's method is slow and underflows for large means
        return max(0, int(round(rng.gauss(mean, math.sqrt(mean)))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


class RedisTraffic:
    """The simulated requests of the live app, kept in Redis.

    ``client``: the Redis of the controller's state; ``inflight_key``: the router's hash (the
    Kubernetes adapter's ``RedisInFlightRouter`` reads the same one); ``key_prefix``: the prefix of
    every other key written here (``<prefix>sim:requests:<namespace>/<pod>``). The app's runtime
    (``controller.runtime.backend``) builds it; this package never chooses a Redis itself.
    """

    def __init__(self, client: redis.Redis, *, inflight_key: str, key_prefix: str) -> None:
        self.client = client
        self.inflight_key = inflight_key
        self.key_prefix = key_prefix

    def requests_key(self, namespace: str, pod: str) -> str:
        return f"{self.key_prefix}sim:requests:{field(namespace, pod)}"

    def interrupt(
        self,
        namespace: str,
        pod: str,
        reason: str = "",
        *,
        ms_name: str | None = None,
        kind: str = "ModelServing",
        now: float | None = None,
    ) -> int:
        """The pod stopped serving: the requests in flight on its engine (``routing.engine_entry``)
        are interrupted, recorded as such (ending at ``now``), and counted against
        ``kind``/``ms_name``'s traffic. Returns how many (the store reports the ones cut off at a
        drain timeout: ``DatabaseCluster(on_interrupted=...)``)."""
        pod = routing.engine_entry(pod)
        client = self.client
        try:
            pipe = client.pipeline()
            pipe.zrange(self.requests_key(namespace, pod), 0, -1)
            pipe.delete(self.requests_key(namespace, pod))
            pipe.hdel(self.inflight_key, field(namespace, pod))
            members = pipe.execute()[0] or []
        except redis.RedisError as exc:
            log.warning("could not interrupt requests of %s/%s: %s", namespace, pod, exc)
            return 0
        count = len(members)
        records = []
        for m in members:
            m = m.decode() if isinstance(m, bytes) else m
            if m.startswith(RELEASE):
                # A path's earlier hop: the request stops here, so its member on the last hop goes too.
                m = self._take_last_hop(namespace, m)
                if m is None:
                    continue
            r = _record(namespace, m, now or 0.0, routing.INTERRUPTED)
            if r is not None:
                records.append(r)
        _save(records)
        if count and ms_name:
            SimTraffic.objects.filter(kind=kind, namespace=namespace, name=ms_name).update(
                interrupted=F("interrupted") + count
            )
            log.info("%d requests interrupted on %s/%s (%s)", count, namespace, pod, reason)
        return count

    # The cluster's events (``DatabaseCluster.record_event``): a capped list, kept an hour as the
    # API server keeps Events.
    EVENTS_KEPT = 2000

    def add_event(self, event: dict) -> None:
        key = f"{self.key_prefix}sim:events"
        try:
            pipe = self.client.pipeline()
            pipe.lpush(key, orjson.dumps(event))
            pipe.ltrim(key, 0, self.EVENTS_KEPT - 1)
            pipe.expire(key, LOG_TTL_SECONDS)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("could not keep the event %s: %s", event.get("reason"), exc)

    def events(self, *, limit: int = 500) -> list[dict]:
        """The newest ``limit`` events, newest first; [] when Redis does not answer."""
        try:
            raw = self.client.lrange(f"{self.key_prefix}sim:events", 0, max(0, limit - 1))
        except redis.RedisError:
            return []
        out = []
        for item in raw:
            try:
                out.append(orjson.loads(item))
            except orjson.JSONDecodeError:
                continue
        return out

    def log_key(self, namespace: str, pod: str) -> str:
        return f"{self.key_prefix}sim:log:{field(namespace, pod)}"

    def requests_of(self, namespace: str, pod: str, *, limit: int = LOG_KEEP) -> list[dict]:
        """The pod's newest requests for its log (``controller.simcluster.podlog``), oldest first:
        the finished ones the tick kept (at most ``LOG_KEEP``) and those in flight on it, each
        ``{"id", "started", "finished" (None in flight), "status", "latencyMs"}``; [] without Redis."""
        try:
            pipe = self.client.pipeline()
            pipe.lrange(self.log_key(namespace, pod), 0, limit - 1)
            pipe.zrange(self.requests_key(namespace, pod), 0, limit - 1)
            done, running = pipe.execute()
        except redis.RedisError:
            return []
        out = []
        for raw in done:
            parts = (raw.decode() if isinstance(raw, bytes) else raw).split(SEP)
            if len(parts) == 5:
                rid, started, finished, status, latency = parts
                out.append(
                    {
                        "id": rid,
                        "started": float(started),
                        "finished": float(finished),
                        "status": status,
                        "latencyMs": float(latency) if latency else None,
                    }
                )
        for member in running:
            head = (member.decode() if isinstance(member, bytes) else member).partition(SEP)[0]
            out.append({"id": f"sim-{head}", "started": float(head.split(":", 1)[0]), "finished": None})
        out.sort(key=lambda r: r["finished"] if r["finished"] is not None else r["started"])
        return out[-limit:]

    def in_flight_counts(self, namespace: str, pods: list[str]) -> dict[str, int]:
        if not pods:
            return {}
        try:
            values = self.client.hmget(self.inflight_key, [field(namespace, p) for p in pods])
        except redis.RedisError:
            return {}
        return {p: int(v) for p, v in zip(pods, values) if v is not None and int(v) > 0}

    def step(self, now: float, config: ClusterConfig) -> dict[str, int]:
        """Finish ended requests and send new ones. Returns counts for the tick's report."""
        report = {"finished": 0, "sent": 0, "rejected": 0}
        try:
            report["finished"] = self._finish(now)
            for t in SimTraffic.objects.filter(rps__gt=0):
                sent, rejected = self._arrivals(t, now, config)
                report["sent"] += sent
                report["rejected"] += rejected
        except redis.RedisError as exc:
            log.warning("simulated traffic paused: Redis unavailable (%s)", exc)
        return report

    def _finish(self, now: float) -> int:
        client, key = self.client, self.inflight_key
        fields = [f.decode() if isinstance(f, bytes) else f for f in client.hkeys(key)]
        if not fields:
            return 0
        pipe = client.pipeline()
        for f in fields:
            ns, pod = f.split("/", 1)
            pipe.zrangebyscore(self.requests_key(ns, pod), "-inf", now, withscores=True)
            pipe.zremrangebyscore(self.requests_key(ns, pod), "-inf", now)
            pipe.zcard(self.requests_key(ns, pod))
        results = pipe.execute()
        finished_by_field = {}
        records = []
        pipe = client.pipeline()
        for i, f in enumerate(fields):
            ended, removed, left = results[3 * i], int(results[3 * i + 1]), int(results[3 * i + 2])
            ns = f.split("/", 1)[0]
            served = []
            for member, end in ended:
                r = _record(ns, member.decode() if isinstance(member, bytes) else member, float(end))
                if r is not None:
                    records.append(r)
                    served.append(_served(r))
            if served:
                # The engine's access log (``requests_of``): the newest LOG_KEEP requests per pod.
                log_key = self.log_key(*f.split("/", 1))
                pipe.lpush(log_key, *served[-LOG_KEEP:])
                pipe.ltrim(log_key, 0, LOG_KEEP - 1)
                pipe.expire(log_key, LOG_TTL_SECONDS)
            # A path's earlier hop (``RELEASE``) frees its pod; the request finishes on the last hop.
            finished_by_field[f] = removed - sum(1 for member, _ in ended if _is_release(member))
            if left:
                pipe.hset(key, f, left)
            else:
                pipe.hdel(key, f)
        pipe.execute()
        _save(records)
        total = sum(finished_by_field.values())
        if total:
            # Credit each ModelServing with its finished requests (one query for the pods' owners).
            by_pod = {f.split("/", 1)[1]: n for f, n in finished_by_field.items() if n}
            owners: dict[tuple[str, str, str], int] = {}
            rows = SimObject.objects.filter(kind=SimObject.KIND_POD, name__in=list(by_pod))
            for ns, name, ms, pk in rows.values_list("namespace", "name", "ms_name", "pk"):
                if field(ns, name) not in finished_by_field:
                    continue
                kind = SimTraffic.KIND_MODELSERVING
                if not ms:  # an InferenceService's pod: KServe's label names it
                    data = SimObject.objects.filter(pk=pk).values_list("data", flat=True).first() or {}
                    ms = ((data.get("metadata") or {}).get("labels") or {}).get(LABEL_ISVC) or ""
                    kind = SimTraffic.KIND_INFERENCESERVICE
                key = (kind, ns, ms)
                owners[key] = owners.get(key, 0) + finished_by_field[field(ns, name)]
            for (kind, ns, ms), n in owners.items():
                SimTraffic.objects.filter(kind=kind, namespace=ns, name=ms).update(completed=F("completed") + n)
        return total

    def _arrivals(self, t: SimTraffic, now: float, config: ClusterConfig) -> tuple[int, int]:
        start = t.generated_until if t.generated_until is not None else now
        start = max(start, now - MAX_BACKLOG_SECONDS)
        elapsed = now - start
        if elapsed <= 0:
            # First tick once the workload serves: arrivals start from now.
            if t.generated_until is None and _serves_yet(t):
                SimTraffic.objects.filter(pk=t.pk).update(generated_until=now)
            return 0, 0
        rng = random.Random(f"{t.namespace}/{t.name}:{start:.6f}")
        n = poisson(rng, t.rps * elapsed)
        rejected = self._send_arrivals(t, n, start, elapsed, config, rng) if n else 0
        SimTraffic.objects.filter(pk=t.pk).update(
            generated_until=now, sent=F("sent") + n, rejected=F("rejected") + rejected
        )
        return n, rejected

    def _send_arrivals(
        self, t: SimTraffic, n: int, start: float, elapsed: float, config: ClusterConfig, rng: random.Random
    ) -> int:
        """``n`` (> 0) requests arriving over ``elapsed`` seconds from ``start``, sent as the
        workload routes them (an InferenceService's traffic split, a ModelServing's request path or
        its entry pods); returns how many were rejected."""
        if t.kind == SimTraffic.KIND_INFERENCESERVICE:
            return self._isvc_arrivals(t, n, start, elapsed, config, rng)
        pods = routable_entry_pods(t.namespace, t.name)
        ms = _modelserving(t.namespace, t.name)
        spec_traffic, load = _paths_and_tokens(ms, t, config)
        if spec_traffic.has_path or load.tokens:
            return self._path_arrivals(t, n, start, elapsed, config, rng, pods, ms, spec_traffic, load)
        if not pods:
            return n
        # A canary weight draws on a stream of its own: without one nothing else draws differently.
        weight = canary_weight(t.namespace, t.name)
        weight_rng = random.Random(f"{t.namespace}/{t.name}:{start:.6f}:weights")
        return self._send_to_pods(
            t,
            n,
            start,
            elapsed,
            config,
            rng,
            pods,
            lambda: weights.first_hop(pods, weight, weight_rng, routing.revision_label),
        )

    def _isvc_arrivals(
        self, t: SimTraffic, n: int, start: float, elapsed: float, config: ClusterConfig, rng: random.Random
    ) -> int:
        """``n`` requests to an InferenceService: each to a traffic target drawn by the weights KServe
        wrote in its status, then to that target's least busy routable pod (``routing``). Returns
        how many were rejected (no routable pod in the drawn target)."""
        isvc = (
            SimObject.objects.filter(kind=SimObject.KIND_INFERENCESERVICE, namespace=t.namespace, name=t.name)
            .values_list("data", flat=True)
            .first()
        )
        targets = routing.isvc_targets(isvc or {})
        pods = [
            p
            for p in SimObject.objects.filter(kind=SimObject.KIND_POD, namespace=t.namespace, ms_name="").values_list(
                "data", flat=True
            )
            if ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_ISVC) == t.name
        ]

        def target_pods() -> list[Obj]:
            target = routing.pick_target(targets, rng)
            return routing.target_pods(target, pods) if target is not None else []

        return self._send_to_pods(t, n, start, elapsed, config, rng, pods, target_pods)

    def _send_to_pods(
        self,
        t: SimTraffic,
        n: int,
        start: float,
        elapsed: float,
        config: ClusterConfig,
        rng: random.Random,
        pods: list[Obj],
        candidates: Callable[[], list[Obj]],
    ) -> int:
        """``n`` one-pod requests: each arrives at a random time of the window, lasts a random
        duration, goes to the least busy of ``candidates()`` (drawn per request, after the arrival
        and duration: the draws' order is the trace's) and is kept in flight on that pod in Redis;
        returns how many found no pod (rejected)."""
        names = sorted(p["metadata"]["name"] for p in pods)
        counts = dict.fromkeys(names, 0) | self.in_flight_counts(t.namespace, names)
        pipe = self.client.pipeline()
        rejected = 0
        running = []
        for i in range(n):
            arrival = start + rng.random() * elapsed
            duration = rng.uniform(t.duration_low, max(t.duration_high, t.duration_low))
            pod = routing.pick(candidates(), lambda p: counts[p["metadata"]["name"]])
            request = routing.send(i, arrival, duration, pod, config, rng)
            if request.pod is None:
                rejected += 1
                continue
            counts[request.pod] += 1
            member = _member(arrival, i, rng.getrandbits(32), request, pod, t.name)
            pipe.zadd(self.requests_key(t.namespace, request.pod), {member: arrival + request.busy})
            running.append(_record(t.namespace, member, None, RUNNING))
        for pod in names:
            if counts[pod]:
                pipe.hset(self.inflight_key, field(t.namespace, pod), counts[pod])
        pipe.execute()
        _save([r for r in running if r is not None])
        return rejected

    def _take_last_hop(self, namespace: str, release: str) -> str | None:
        """The member a path's request holds on its last hop (named by its earlier hop's
        ``release`` member), removed from that pod's requests and in-flight count; None when it is
        gone already."""
        head, _, last_pod = release[len(RELEASE) :].partition(LAST_HOP)
        prefix = head.rsplit(":", 1)[0] + SEP  # "<arrival>:<index>:<rand>|"
        key = self.requests_key(namespace, last_pod)
        try:
            for member, _ in self.client.zscan_iter(key, match=_glob_escape(prefix) + "*"):
                member = member.decode() if isinstance(member, bytes) else member
                if self.client.zrem(key, member):
                    if self.client.hincrby(self.inflight_key, field(namespace, last_pod), -1) <= 0:
                        self.client.hdel(self.inflight_key, field(namespace, last_pod))
                    return member
        except redis.RedisError as exc:
            log.warning("could not interrupt the last hop of %s on %s: %s", head, last_pod, exc)
        return None

    def _path_arrivals(
        self,
        t: SimTraffic,
        n: int,
        start: float,
        elapsed: float,
        config: ClusterConfig,
        rng: random.Random,
        pods: list[Obj],
        ms: Obj | None,
        spec_traffic: Traffic,
        load: Load,
    ) -> int:
        """``n`` requests down the ModelServing's path (``paths``; one entry pod when it has token
        figures only), each hop's pod busy as ``routing.send_path`` says: every hop but the last
        until the first token (a ``RELEASE`` member), the last until the end (the member carrying
        the record). A request refused for want of a consistent path (``noRoute``) is counted as
        rejected and recorded as an error with ``path_error`` noRoute under the update revision.
        Returns how many were rejected."""
        names = sorted(p["metadata"]["name"] for p in pods)
        counts = dict.fromkeys(names, 0) | self.in_flight_counts(t.namespace, names)
        weight = weights.of_modelserving(ms)
        weight_rng = random.Random(f"{t.namespace}/{t.name}:{start:.6f}:weights")
        table = None
        if spec_traffic.has_path:
            revisions = SimObject.objects.filter(
                kind=SimObject.KIND_REVISION, namespace=t.namespace, ms_name=t.name
            ).values_list("data", flat=True)
            table = paths.PathTable(spec_traffic, pods, paths.Revisions.of(list(revisions)))

        def in_flight(pod: Obj) -> int:
            return counts[pod["metadata"]["name"]]

        pipe = self.client.pipeline()
        rejected, running = 0, []
        for i in range(n):
            arrival = start + rng.random() * elapsed
            duration = None if load.tokens else rng.uniform(t.duration_low, max(t.duration_high, t.duration_low))
            if table is not None:
                choice = paths.route(table, in_flight, weight, weight_rng)
            else:
                pod = routing.pick(weights.first_hop(pods, weight, weight_rng, routing.revision_label), in_flight)
                choice = None if pod is None else paths.Choice([pod], frozenset(), routing.revision_label(pod))
            if choice is None:
                rejected += 1
                if table is not None:
                    running.append(_refused_record(t, ms, arrival, i))
                continue
            request = routing.send_path(
                i, arrival, duration, choice, load, config, rng, mixed_pair=choice.pair, with_path=table is not None
            )
            rand = rng.getrandbits(32)
            member = _member(arrival, i, rand, request, choice.pods[0], t.name)
            hops = request.hops or ((None, request.pod, request.pod_uid, None),)
            for k, (hop, busy) in enumerate(zip(hops, request.hop_busy, strict=True)):
                counts[hop[1]] += 1
                held = member if k == len(hops) - 1 else f"{RELEASE}{arrival:.6f}:{i}:{rand}:{k}{LAST_HOP}{hops[-1][1]}"
                pipe.zadd(self.requests_key(t.namespace, hop[1]), {held: arrival + busy})
            running.append(_record(t.namespace, member, None, RUNNING))
        for pod in names:
            if counts[pod]:
                pipe.hset(self.inflight_key, field(t.namespace, pod), counts[pod])
        pipe.execute()
        _save([r for r in running if r is not None])
        return rejected


def _is_release(member: bytes | str) -> bool:
    return (member.decode() if isinstance(member, bytes) else member).startswith(RELEASE)


def _refused_record(t: SimTraffic, ms: Obj | None, arrival: float, i: int) -> dict:
    status = (ms or {}).get("status") or {}
    return {
        "request_id": f"sim-{arrival:.6f}:{i}:refused",
        "namespace": t.namespace,
        "name": t.name,
        "revision": status.get("updateRevision") or status.get("currentRevision") or "",
        "latency_ms": None,
        "status": routing.ERROR,
        "feedback": None,
        "started": arrival,
        "finished": arrival,
        "path": [],
        "mixed": False,
        "path_error": paths.NO_ROUTE,
    }


# The condition that says a workload serves: a ModelServing's Available (every group up, as a
# Deployment's Available), an InferenceService's Ready.
_SERVING_CONDITION = {SimTraffic.KIND_MODELSERVING: "Available", SimTraffic.KIND_INFERENCESERVICE: "Ready"}


def _serves_yet(t: SimTraffic) -> bool:
    """Whether a workload's simulated clients may start: once its serving condition was True (as a
    scenario's traffic starts when the workload first converges). Before that, a fresh `make run`
    sent the demo's requests into groups still coming up, and the Paths panel opened on "refused
    (noRoute)" for a healthy demo. A workload not in the cluster (a test's bare pods) starts at once;
    once started, the clients keep sending through later outages, which count as refusals."""
    data = (
        SimObject.objects.filter(kind=t.kind, namespace=t.namespace, name=t.name).values_list("data", flat=True).first()
    )
    if data is None:
        return True
    serving = condition(data, _SERVING_CONDITION.get(t.kind, "Ready"))
    return serving is not None and serving.get("status") == "True"


def _modelserving(namespace: str, ms_name: str) -> Obj | None:
    return (
        SimObject.objects.filter(kind=SimObject.KIND_MODELSERVING, namespace=namespace, name=ms_name)
        .values_list("data", flat=True)
        .first()
    )


def _paths_and_tokens(ms: Obj | None, t: SimTraffic, config: ClusterConfig) -> tuple[Traffic, Load]:
    """The ModelServing's spec.traffic (read leniently: the controller refuses an invalid one) and
    the load with the cluster's token figures (``ClusterConfig.input_tokens``/``output_tokens``)."""
    spec = (ms or {}).get("spec") or {}
    roles = tuple(r.get("name") for r in ((spec.get("template") or {}).get("roles") or []) if isinstance(r, dict))
    try:
        spec_traffic = parse_traffic(spec.get("traffic"), "spec.traffic", roles)
    except ValidationError:
        spec_traffic = DEFAULT_TRAFFIC
    load = Load(
        rps=t.rps,
        duration=Span(t.duration_low, max(t.duration_high, t.duration_low)),
        input_tokens=config.input_tokens,
        output_tokens=config.output_tokens,
    )
    return spec_traffic, load


def canary_weight(namespace: str, ms_name: str) -> weights.Weight | None:
    """The canary weight in the ModelServing's status (``weights.of_modelserving``)."""
    data = (
        SimObject.objects.filter(kind=SimObject.KIND_MODELSERVING, namespace=namespace, name=ms_name)
        .values_list("data", flat=True)
        .first()
    )
    return weights.of_modelserving(data)


def routable_entry_pods(namespace: str, ms_name: str) -> list[Obj]:
    pods = SimObject.objects.filter(kind=SimObject.KIND_POD, namespace=namespace, ms_name=ms_name).values_list(
        "data", flat=True
    )
    return routing.routable_entries(pods)
