"""The simulated request router and its traffic: the ``RouterPort`` of the simulation.

Requests arrive as a Poisson process at ``rps`` (exponential gaps drawn from the seeded RNG). Each
goes to a routable ENTRY pod (pod index 0) of the ModelServing: Ready, not terminating
(``deletionTimestamp``), not marked draining (annotation ``serving.rolloutui.io/draining``), picking
the one with the fewest requests in flight (ties: pod name), like Kthena's least-request router.

A request keeps its pod busy for ``durationSeconds`` (drawn per request; streaming responses), and
has a latency (time to first token, ms) drawn from the image's ``latencyMs`` (default 80-300 ms).
Its result is one of:
- ``ok``;
- ``error`` with the image's ``errorRate`` (the error answer frees the pod after its latency);
- ``interrupted``: the pod stopped serving while the request was in flight (deleted, a container
  restarted, node failed);
- ``rejected``: no routable pod at arrival.

Every request is recorded (id, revision label of the pod, pod, start, latency, duration, result).
``in_flight(ns, pod)`` is what the controller's drain waits on.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from controller.core import naming
from controller.core.ports import Obj

from ..config import DEFAULT_LATENCY_MS, ClusterConfig, Traffic
from .clock import EventLoop, Timer
from .store import Change, InMemoryStore


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

    def record(self) -> dict:
        return {
            "id": self.id,
            "revision": self.revision,
            "pod": self.pod,
            "start": round(self.start, 3),
            "latencyMs": None if self.latency_ms is None else round(self.latency_ms, 1),
            "end": None if self.end is None else round(self.end, 3),
            "result": self.result,
        }


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


class SimRouter:
    """Routes simulated traffic to one ModelServing's entry pods; implements ``RouterPort``."""

    def __init__(
        self,
        store: InMemoryStore,
        loop: EventLoop,
        config: ClusterConfig,
        namespace: str,
        ms_name: str,
        traffic: Traffic | None,
        rng: random.Random,
    ) -> None:
        self.store = store
        self.loop = loop
        self.config = config
        self.namespace = namespace
        self.ms_name = ms_name
        self.traffic = traffic
        self.rng = rng
        self.requests: list[Request] = []
        self._in_flight: dict[str, dict[int, tuple[Request, Timer]]] = {}  # pod uid -> requests
        self._uid_by_name: dict[str, str] = {}
        self._routable: list[Obj] | None = None  # cache, dropped on any pod change
        self._running = False
        store.add_listener(self._on_change)

    # -- RouterPort -------------------------------------------------------------------------------

    def in_flight(self, namespace: str, pod_name: str) -> int:
        if namespace != self.namespace:
            return 0
        uid = self._uid_by_name.get(pod_name)
        return len(self._in_flight.get(uid, ())) if uid else 0

    def in_flight_by_pod(self) -> dict[str, int]:
        return {
            name: len(self._in_flight.get(uid, ()))
            for name, uid in self._uid_by_name.items()
            if self._in_flight.get(uid)
        }

    # -- traffic ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the arrivals (the runner does so once the workload first converged)."""
        if self.traffic is None or self.traffic.rps <= 0 or self._running:
            return
        self._running = True
        self.loop.call_later(self.rng.expovariate(self.traffic.rps), self._arrive)

    def _arrive(self) -> None:
        self.route(self.traffic.duration.draw(self.rng))
        self.loop.call_later(self.rng.expovariate(self.traffic.rps), self._arrive)

    def route(self, duration: float) -> Request:
        now = self.loop.now()
        pods = self._routable_pods()
        req = Request(len(self.requests) + 1, now, None, None, None, None, duration)
        self.requests.append(req)
        if not pods:
            req.result, req.end = "rejected", now
            return req
        pod = min(pods, key=lambda p: (len(self._in_flight.get(p["metadata"]["uid"], ())), p["metadata"]["name"]))
        meta = pod["metadata"]
        req.pod, req.pod_uid = meta["name"], meta["uid"]
        req.revision = (meta.get("labels") or {}).get(naming.LABEL_REVISION)
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        behaviour = self.config.image(containers[0].get("image", ""))
        req.latency_ms = (behaviour.latency_ms or DEFAULT_LATENCY_MS).draw(self.rng)
        error = behaviour.error_rate > 0 and self.rng.random() < behaviour.error_rate
        # An error answer ends after its latency; a good one streams for the whole duration.
        busy = req.latency_ms / 1000.0 if error else max(duration, req.latency_ms / 1000.0)
        result = "error" if error else "ok"
        timer = self.loop.call_later(busy, lambda: self._finish(req, result))
        self._in_flight.setdefault(req.pod_uid, {})[req.id] = (req, timer)
        self._uid_by_name[req.pod] = req.pod_uid
        return req

    def _finish(self, req: Request, result: str) -> None:
        bucket = self._in_flight.get(req.pod_uid)
        if bucket is None or req.id not in bucket:
            return
        del bucket[req.id]
        req.result, req.end = result, self.loop.now()

    def interrupt(self, namespace: str, pod_name: str, uid: str, reason: str = "") -> int:
        """The pod stopped serving: every request in flight on it is interrupted. Returns how many."""
        if namespace != self.namespace:
            return 0
        base, _, index = pod_name.rpartition("-")
        if index.isdigit() and index != "0" and base:
            # A worker is part of its instance's engine: requests the entry is serving run on it
            # too, so they are interrupted with it (pod names end in -<podIndex>, 0 = entry).
            entry_uid = self._uid_by_name.get(f"{base}-0")
            uid = entry_uid or uid
        bucket = self._in_flight.pop(uid, None) or {}
        now = self.loop.now()
        for req, timer in bucket.values():
            timer.cancel()
            req.result, req.end = "interrupted", now
        return len(bucket)

    # -- routable set -----------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind == "Pod" and change.namespace == self.namespace and change.ms_name == self.ms_name:
            self._routable = None
            if change.type == "ADDED":
                self._uid_by_name[change.name] = change.obj["metadata"]["uid"]

    def _routable_pods(self) -> list[Obj]:
        if self._routable is None:
            self._routable = [
                p for p in self.store.list_pods(self.namespace, self.ms_name) if is_entry(p) and is_routable(p)
            ]
        return self._routable

    # -- summary ----------------------------------------------------------------------------------

    def summary(self) -> dict:
        """The trace's ``requests`` object.

        ``failed`` = every finished request that did not succeed (error + interrupted + rejected);
        ``interrupted`` and ``rejected`` break it down; ``unfinished`` were still in flight at the end.
        Per revision: p50/p99 of the latency (ms) of answered (ok or error) requests, nearest rank:
        for 200 answers p99 is the 198th smallest (ceil(0.99 * 200) = 198).
        """
        done = [r for r in self.requests if r.result is not None]
        counts = {k: 0 for k in ("ok", "error", "interrupted", "rejected")}
        for r in done:
            counts[r.result] += 1
        by_rev: dict[str, list[Request]] = {}
        for r in done:
            if r.revision is not None:
                by_rev.setdefault(r.revision, []).append(r)
        out = {
            "total": len(done),
            "succeeded": counts["ok"],
            "failed": len(done) - counts["ok"],
            "interrupted": counts["interrupted"],
            "rejected": counts["rejected"],
            "errors": counts["error"],
            "unfinished": len(self.requests) - len(done),
            "byRevision": {},
        }
        for rev in sorted(by_rev):
            reqs = by_rev[rev]
            lat = sorted(r.latency_ms for r in reqs if r.result in ("ok", "error"))
            out["byRevision"][rev] = {
                "total": len(reqs),
                "failed": sum(r.result != "ok" for r in reqs),
                "interrupted": sum(r.result == "interrupted" for r in reqs),
                "p50": _pct(lat, 0.50),
                "p99": _pct(lat, 0.99),
            }
        return out


def _pct(sorted_values: list[float], q: float) -> int | None:
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return int(round(sorted_values[rank - 1]))
