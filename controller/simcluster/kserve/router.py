"""The in-memory driver's request router for one InferenceService: ``simulate``'s traffic.

The rules are ``controller.simcluster.routing``'s: each request goes to a traffic target drawn by
the weights KServe wrote in the InferenceService's status (``routing.isvc_targets``,
``routing.pick_target``), then to the least busy routable pod of that target; a target with no
routable pod rejects it. Arrivals are a Poisson process at ``rps`` from the seeded RNG, starting when
the runner says the InferenceService first converged, like ``router.SimRouter``'s. Every request
is kept as a record; a pod that stops serving interrupts its requests.

It also keeps the **splits**: every time the traffic split changes, a new window starts, so the
trace can say how the requests of each window went per revision (``requests.bySplit``): with a 10%
canary, about 10% of that window's requests went to the new revision.
"""

from __future__ import annotations

import random
from typing import Any

from controller.core.ports import NotFound, Obj

from .. import routing
from ..config import ClusterConfig, Traffic
from ..memory.clock import EventLoop, Timer
from ..memory.store import Change, InMemoryStore
from ..objects import INFERENCESERVICE
from ..routing import Request, Target


class InferenceServiceRouter:
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
        self._targets: list[Target] | None = None
        self._pods: list[Obj] | None = None
        self._running = False
        # (start time, split) windows, a new one whenever the split changes once traffic runs.
        self.splits: list[tuple[float, tuple[tuple[str | None, int], ...]]] = []
        self._window: list[int] = []  # per request: the index of its split window
        store.add_listener(self._on_change)

    # -- RouterPort ---------------------------------------------------------------------------------

    def in_flight(self, namespace: str, pod_name: str) -> int:
        if namespace != self.namespace:
            return 0
        uid = self._uid_by_name.get(pod_name)
        return len(self._in_flight.get(uid, ())) if uid else 0

    def in_flight_many(self, namespace: str, pod_names: list[str]) -> dict[str, int] | None:
        """None: asked pod by pod, as the ModelServing simulator's router is."""
        return None

    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        """None: this router carries an InferenceService's traffic, never a ModelServing's."""
        return None

    def in_flight_by_pod(self) -> dict[str, int]:
        return {
            name: len(self._in_flight.get(uid, ()))
            for name, uid in self._uid_by_name.items()
            if self._in_flight.get(uid)
        }

    # -- traffic ------------------------------------------------------------------------------------

    def start(self) -> None:
        if self.traffic is None or self.traffic.rps <= 0 or self._running:
            return
        self._running = True
        self._note_split()
        self.loop.call_later(self.rng.expovariate(self.traffic.rps), self._arrive)

    def _arrive(self) -> None:
        self.route(self.traffic.duration.draw(self.rng))
        self.loop.call_later(self.rng.expovariate(self.traffic.rps), self._arrive)

    def route(self, duration: float) -> Request:
        target = routing.pick_target(self._current_targets(), self.rng)
        pods = routing.target_pods(target, self._all_pods()) if target is not None else []
        pod = routing.pick(pods, lambda p: len(self._in_flight.get(p["metadata"]["uid"], ())))
        req = routing.send(len(self.requests) + 1, self.loop.now(), duration, pod, self.config, self.rng)
        self.requests.append(req)
        self._window.append(len(self.splits) - 1)
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
        """The pod stopped serving: its requests in flight are interrupted. Returns how many."""
        if namespace != self.namespace:
            return 0
        bucket = self._in_flight.pop(uid, None) or {}
        now = self.loop.now()
        for req, timer in bucket.values():
            timer.cancel()
            req.result, req.end = routing.INTERRUPTED, now
        return len(bucket)

    # -- what the router knows ------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.namespace != self.namespace:
            return
        if change.kind == "Pod":
            self._pods = None
        elif change.kind == INFERENCESERVICE and change.name == self.name:
            self._targets = None
            if self._running:
                self._note_split()

    def _current_targets(self) -> list[Target]:
        if self._targets is None:
            try:
                isvc = self.store.get_object(INFERENCESERVICE, self.namespace, self.name)
            except NotFound:  # not created yet, or deleted
                return []
            self._targets = routing.isvc_targets(isvc)
        return self._targets

    def _all_pods(self) -> list[Obj]:
        if self._pods is None:
            self._pods = [p for p in self.store.all_pods() if p["metadata"]["namespace"] == self.namespace]
        return self._pods

    def split(self) -> tuple[tuple[str | None, int], ...]:
        return tuple((t.revision, t.percent) for t in self._current_targets())

    def _note_split(self) -> None:
        split = self.split()
        if not self.splits or self.splits[-1][1] != split:
            self.splits.append((self.loop.now(), split))

    # -- summary --------------------------------------------------------------------------------------

    def summary(self, end: float | None = None) -> dict[str, Any]:
        """``routing.summary`` plus ``bySplit``: per window of one traffic split, the requests that
        arrived in it and where they went (revision -> count; ``rejected`` apart). The last window
        ends at ``end``: now, unless said."""
        end = self.loop.now() if end is None else end
        out = routing.summary(self.requests)
        windows = []
        for i, (start, split) in enumerate(self.splits):
            stop = self.splits[i + 1][0] if i + 1 < len(self.splits) else end
            counts: dict[str, int] = {}
            rejected = 0
            for req, window in zip(self.requests, self._window, strict=True):
                if window != i:
                    continue
                if req.revision is None:
                    rejected += 1
                else:
                    counts[req.revision] = counts.get(req.revision, 0) + 1
            windows.append(
                {
                    "start": round(start, 3),
                    "end": round(stop, 3),
                    "split": [{"revision": r, "percent": p} for r, p in split],
                    "requests": sum(counts.values()) + rejected,
                    "byRevision": dict(sorted(counts.items())),
                    "rejected": rejected,
                }
            )
        out["bySplit"] = windows
        return out
