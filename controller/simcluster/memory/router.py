"""The in-memory driver's request router and traffic: the ``RouterPort`` of ``simulate``.

The routing rules are ``controller.simcluster.routing``'s (the live app's traffic uses the same):
routable entry pods, least busy first, latency and errors per image, a stopping pod interrupting its
engine's requests. What is particular to this driver: requests arrive as a Poisson process at
``rps`` (exponential gaps drawn from the seeded RNG), starting when the runner says the workload
first converged; every request is kept as a record (id, revision label of the pod, pod, start,
latency, end, result) and ends on a timer of the event loop. ``in_flight(ns, pod)`` is what the
controller's drain waits on.
"""

from __future__ import annotations

import random

from controller.core.ports import Obj

from .. import routing
from ..config import ClusterConfig, Traffic
from ..routing import Request
from .clock import EventLoop, Timer
from .store import Change, InMemoryStore


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

    # -- MetricsPort --------------------------------------------------------------------------------

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict:
        at = self.loop.now() if at is None else at
        if namespace != self.namespace or name != self.ms_name:
            return routing.window_figures([], revision, start, end, at)
        return routing.window_figures(self.requests, revision, start, end, at)

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
        pod = routing.pick(self._routable_pods(), lambda p: len(self._in_flight.get(p["metadata"]["uid"], ())))
        req = routing.send(len(self.requests) + 1, self.loop.now(), duration, pod, self.config, self.rng)
        self.requests.append(req)
        if req.result is None:
            timer = self.loop.call_later(req.busy, lambda: self._finish(req))
            self._in_flight.setdefault(req.pod_uid, {})[req.id] = (req, timer)
            self._uid_by_name[req.pod] = req.pod_uid
        return req

    def _finish(self, req: Request) -> None:
        bucket = self._in_flight.get(req.pod_uid)
        if bucket is None or req.id not in bucket:
            return
        del bucket[req.id]
        req.result, req.end = req.answer, self.loop.now()

    def interrupt(self, namespace: str, pod_name: str, uid: str, reason: str = "") -> int:
        """The pod stopped serving: every request in flight on its engine is interrupted
        (``routing.engine_entry``). Returns how many."""
        if namespace != self.namespace:
            return 0
        entry = routing.engine_entry(pod_name)
        if entry != pod_name:
            uid = self._uid_by_name.get(entry) or uid
        bucket = self._in_flight.pop(uid, None) or {}
        now = self.loop.now()
        for req, timer in bucket.values():
            timer.cancel()
            req.result, req.end = routing.INTERRUPTED, now
        return len(bucket)

    # -- routable set -----------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind == "Pod" and change.namespace == self.namespace and change.ms_name == self.ms_name:
            self._routable = None
            if change.type == "ADDED":
                self._uid_by_name[change.name] = change.obj["metadata"]["uid"]

    def _routable_pods(self) -> list[Obj]:
        if self._routable is None:
            self._routable = routing.routable_entries(self.store.list_pods(self.namespace, self.ms_name))
        return self._routable

    # -- summary ----------------------------------------------------------------------------------

    def summary(self) -> dict:
        """The trace's ``requests`` object (``routing.summary``)."""
        return routing.summary(self.requests)
