"""What every simulated request router does with its requests, whatever it routes them by.

Two routers carry ``simulate``'s traffic: ``memory.router.SimRouter`` (a ModelServing's entry pods,
request paths, canary weights) and ``kserve.router.InferenceServiceRouter`` (an InferenceService's
traffic targets). They choose the pod differently; the rest is this base class: requests arrive as a
Poisson process at ``rps`` (exponential gaps drawn from the seeded RNG), starting when the run says
the workload first converged; every request is kept as a record; a request sent to one pod is in
flight on it until a timer of the event loop ends it; ``in_flight(ns, pod)`` is what a drain waits
on. Each router keeps its own way of interrupting a stopping pod's requests (a ModelServing's worker
interrupts its entry's requests and a path request leaves every hop).
"""

from __future__ import annotations

import random

from .. import routing
from ..config import ClusterConfig, Traffic
from ..routing import Request
from .clock import EventLoop, Timer
from .store import InMemoryStore


class RequestRouter:
    def __init__(
        self,
        store: InMemoryStore,
        loop: EventLoop,
        config: ClusterConfig,
        namespace: str,
        name: str,
        traffic: Traffic | None,
        rng: random.Random,
    ) -> None:
        """``name``: the workload whose traffic it carries (in ``namespace``)."""
        self.store = store
        self.loop = loop
        self.config = config
        self.namespace = namespace
        self.name = name
        self.traffic = traffic
        self.rng = rng
        self.requests: list[Request] = []
        self._in_flight: dict[str, dict[int, tuple[Request, Timer]]] = {}  # pod uid -> requests
        self._uid_by_name: dict[str, str] = {}
        self._running = False
        self._set_up()

    def _set_up(self) -> None:
        """The router's own state and store listener, once the shared part above is set."""

    # -- RouterPort ---------------------------------------------------------------------------------

    def in_flight(self, namespace: str, pod_name: str) -> int:
        if namespace != self.namespace:
            return 0
        uid = self._uid_by_name.get(pod_name)
        return len(self._in_flight.get(uid, ())) if uid else 0

    def in_flight_many(self, namespace: str, pod_names: list[str]) -> dict[str, int] | None:
        """None: the simulator's passes ask pod by pod, and only about the pods leaving routing (the
        count of every pod would cost a lookup per pod on every pass)."""
        return None

    def in_flight_by_pod(self) -> dict[str, int]:
        return {
            name: len(self._in_flight.get(uid, ()))
            for name, uid in self._uid_by_name.items()
            if self._in_flight.get(uid)
        }

    # -- traffic ------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the arrivals (the run does so once the workload first converged)."""
        if self.traffic is None or self.traffic.rps <= 0 or self._running:
            return
        self._running = True
        self._on_start()
        self.loop.call_later(self.rng.expovariate(self.traffic.rps), self._arrive)

    def _on_start(self) -> None:
        """What a router notes when its traffic starts (nothing, unless it says otherwise)."""

    def _arrive(self) -> None:
        self.route(self._draw_duration())
        self.loop.call_later(self.rng.expovariate(self.traffic.rps), self._arrive)

    def _draw_duration(self) -> float | None:
        return self.traffic.duration.draw(self.rng)

    def route(self, duration: float | None) -> Request:
        raise NotImplementedError

    def _send(self, duration: float | None, pod) -> Request:
        """A request to one pod (None: rejected), kept, and in flight on the pod until it ends."""
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
