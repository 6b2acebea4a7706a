"""The in-memory driver's request router for one InferenceService: ``simulate``'s traffic.

The rules are ``controller.simcluster.routing``'s: each request goes to a traffic target drawn by
the weights KServe wrote in the InferenceService's status (``routing.isvc_targets``,
``routing.pick_target``), then to the least busy routable pod of that target; a target with no
routable pod rejects it. Arrivals are a Poisson process at ``rps`` from the seeded RNG, starting when
the run says the InferenceService first converged, as for every simulated router
(``memory.requests.RequestRouter``). Every request is kept as a record; a pod that stops serving
interrupts its requests.

It also keeps the **splits**: every time the traffic split changes, a new window starts, so the
trace can say how the requests of each window went per revision (``requests.bySplit``): with a 10%
canary, about 10% of that window's requests went to the new revision.
"""

from __future__ import annotations

from typing import Any

from controller.core.ports import NotFound, Obj

from .. import routing
from ..memory.requests import RequestRouter
from ..memory.store import Change
from ..objects import INFERENCESERVICE
from ..routing import Request, Target


class InferenceServiceRouter(RequestRouter):
    def _set_up(self) -> None:
        self._targets: list[Target] | None = None
        self._pods: list[Obj] | None = None
        # (start time, split) windows, a new one whenever the split changes once traffic runs.
        self.splits: list[tuple[float, tuple[tuple[str | None, int], ...]]] = []
        self._window: list[int] = []  # per request: the index of its split window
        self.store.add_listener(self._on_change)

    # -- RouterPort ---------------------------------------------------------------------------------

    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        """None: this router carries an InferenceService's traffic, never a ModelServing's."""
        return None

    # -- traffic ------------------------------------------------------------------------------------

    def _on_start(self) -> None:
        self._note_split()

    def route(self, duration: float) -> Request:
        target = routing.pick_target(self._current_targets(), self.rng)
        pods = routing.target_pods(target, self._all_pods()) if target is not None else []
        pod = routing.pick(pods, lambda p: len(self._in_flight.get(p["metadata"]["uid"], ())))
        req = self._send(duration, pod)
        self._window.append(len(self.splits) - 1)
        return req

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
