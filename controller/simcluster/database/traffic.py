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
are counted in the ``SimTraffic`` row (an error answer counts as completed: the live app keeps no
per-request records yet).
"""

from __future__ import annotations

import logging
import math
import random

import redis
from django.db.models import F

from controller.core.kserve.materialize import LABEL_ISVC
from controller.core.ports import Obj
from controller.models import SimObject, SimTraffic
from controller.simcluster import routing
from controller.simcluster.config import ClusterConfig

log = logging.getLogger(__name__)

# After an outage, arrivals are generated for at most this much simulated time (not a burst of
# everything that "should" have arrived while nothing ran).
MAX_BACKLOG_SECONDS = 10.0


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
        self, namespace: str, pod: str, reason: str = "", *, ms_name: str | None = None, kind: str = "ModelServing"
    ) -> int:
        """The pod stopped serving: the requests in flight on its engine (``routing.engine_entry``)
        are interrupted, and counted against ``kind``/``ms_name``'s traffic. Returns how many (the store
        reports the ones cut off at a drain timeout: ``DatabaseCluster(on_interrupted=...)``)."""
        pod = routing.engine_entry(pod)
        client = self.client
        try:
            pipe = client.pipeline()
            pipe.zcard(self.requests_key(namespace, pod))
            pipe.delete(self.requests_key(namespace, pod))
            pipe.hdel(self.inflight_key, field(namespace, pod))
            count = int(pipe.execute()[0] or 0)
        except redis.RedisError as exc:
            log.warning("could not interrupt requests of %s/%s: %s", namespace, pod, exc)
            return 0
        if count and ms_name:
            SimTraffic.objects.filter(kind=kind, namespace=namespace, name=ms_name).update(
                interrupted=F("interrupted") + count
            )
            log.info("%d requests interrupted on %s/%s (%s)", count, namespace, pod, reason)
        return count

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
            pipe.zremrangebyscore(self.requests_key(ns, pod), "-inf", now)
            pipe.zcard(self.requests_key(ns, pod))
        results = pipe.execute()
        finished_by_field = {}
        pipe = client.pipeline()
        for i, f in enumerate(fields):
            removed, left = int(results[2 * i]), int(results[2 * i + 1])
            finished_by_field[f] = removed
            if left:
                pipe.hset(key, f, left)
            else:
                pipe.hdel(key, f)
        pipe.execute()
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
            if t.generated_until is None:  # first tick: arrivals start from now
                SimTraffic.objects.filter(pk=t.pk).update(generated_until=now)
            return 0, 0
        rng = random.Random(f"{t.namespace}/{t.name}:{start:.6f}")
        n = poisson(rng, t.rps * elapsed)
        if t.kind == SimTraffic.KIND_INFERENCESERVICE:
            rejected = self._isvc_arrivals(t, n, start, elapsed, config, rng) if n else 0
            SimTraffic.objects.filter(pk=t.pk).update(
                generated_until=now, sent=F("sent") + n, rejected=F("rejected") + rejected
            )
            return n, rejected
        pods = routable_entry_pods(t.namespace, t.name) if n else []
        rejected = 0
        if n and not pods:
            rejected = n
        elif n:
            names = sorted(p["metadata"]["name"] for p in pods)
            counts = dict.fromkeys(names, 0) | self.in_flight_counts(t.namespace, names)
            pipe = self.client.pipeline()
            for i in range(n):
                arrival = start + rng.random() * elapsed
                duration = rng.uniform(t.duration_low, max(t.duration_high, t.duration_low))
                pod = routing.pick(pods, lambda p: counts[p["metadata"]["name"]])
                request = routing.send(i, arrival, duration, pod, config, rng)
                counts[request.pod] += 1
                member = f"{arrival:.6f}:{i}:{rng.getrandbits(32)}"
                pipe.zadd(self.requests_key(t.namespace, request.pod), {member: arrival + request.busy})
            for pod in names:
                if counts[pod]:
                    pipe.hset(self.inflight_key, field(t.namespace, pod), counts[pod])
            pipe.execute()
        SimTraffic.objects.filter(pk=t.pk).update(
            generated_until=now, sent=F("sent") + n, rejected=F("rejected") + rejected
        )
        return n, rejected

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
        names = sorted(p["metadata"]["name"] for p in pods)
        counts = dict.fromkeys(names, 0) | self.in_flight_counts(t.namespace, names)
        pipe = self.client.pipeline()
        rejected = 0
        for i in range(n):
            arrival = start + rng.random() * elapsed
            duration = rng.uniform(t.duration_low, max(t.duration_high, t.duration_low))
            target = routing.pick_target(targets, rng)
            candidates = routing.target_pods(target, pods) if target is not None else []
            pod = routing.pick(candidates, lambda p: counts[p["metadata"]["name"]])
            request = routing.send(i, arrival, duration, pod, config, rng)
            if request.pod is None:
                rejected += 1
                continue
            counts[request.pod] += 1
            member = f"{arrival:.6f}:{i}:{rng.getrandbits(32)}"
            pipe.zadd(self.requests_key(t.namespace, request.pod), {member: arrival + request.busy})
        for pod in names:
            if counts[pod]:
                pipe.hset(self.inflight_key, field(t.namespace, pod), counts[pod])
        pipe.execute()
        return rejected


def routable_entry_pods(namespace: str, ms_name: str) -> list[Obj]:
    pods = SimObject.objects.filter(kind=SimObject.KIND_POD, namespace=namespace, ms_name=ms_name).values_list(
        "data", flat=True
    )
    return routing.routable_entries(pods)
