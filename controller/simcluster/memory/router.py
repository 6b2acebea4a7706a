"""The in-memory driver's request router and traffic: the ``RouterPort`` of ``simulate``.

The routing rules are ``controller.simcluster.routing``'s (the live app's traffic uses the same):
routable entry pods, least busy first, latency and errors per image, a stopping pod interrupting its
engine's requests. What every simulated router does (arrivals as a Poisson process from the seeded
RNG once the workload first converged, a record per request, a timer ending it, ``in_flight(ns,
pod)`` for the controller's drain) is ``requests.RequestRouter``'s; what is particular to this one:
the canary weight, request paths (``paths``) and token figures, and the Routed gate's table.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from itertools import repeat
from operator import itemgetter

from controller.core.ports import ClusterError, Obj
from controller.core.spec import DEFAULT_TRAFFIC, ValidationError, parse_traffic

from .. import paths, routing, weights
from ..routing import Request
from .clock import Timer
from .requests import RequestRouter
from .store import Change

_METADATA = itemgetter("metadata")
_UID = itemgetter("uid")


class InFlightCounts:
    """A pod's requests in flight (called with the pod), read from the router's requests by pod
    uid; ``each`` reads many pods without a Python call per pod. The path router's least-busy
    pick reads the candidates of every hop: the seed example with paths routes 16,000 requests x
    3 hops x up to ~100 candidates."""

    __slots__ = ("_by_uid",)

    def __init__(self, by_uid: dict[str, dict]) -> None:
        self._by_uid = by_uid  # the router's own dict, changed in place as requests come and go

    def __call__(self, pod: Obj) -> int:
        return len(self._by_uid.get(pod["metadata"]["uid"], ()))

    def each(self, pods: Iterable[Obj]) -> Iterator[int]:
        """The counts of ``pods`` in order, read as the iterator is read (``paths`` stops at the
        first idle pod)."""
        uids = map(_UID, map(_METADATA, pods))
        return map(len, map(self._by_uid.get, uids, repeat(())))


class SimRouter(RequestRouter):
    """Routes simulated traffic to one ModelServing's entry pods; implements ``RouterPort``."""

    def _set_up(self) -> None:
        self.ms_name = self.name
        self._in_flight_counts = InFlightCounts(self._in_flight)
        self._routable: list[Obj] | None = None  # cache, dropped when the routable set changes
        # The routable entry pods by name (``routing.routable_entries``), kept from the store's
        # changes: each changed pod is asked once, when it changes, instead of every pod at every
        # pass (a 1,000-group preview: ~27,000 pod changes against 94 passes x 3,000 pods). Kept
        # from the first list on (``_routable_synced``: the store's ``restores`` then; objects
        # copied in by ``restore`` are announced to nobody, so a restore makes it list again).
        # Under ``copy_reads`` the list is made from ``list_pods`` at every change, as the pods
        # handed out are copies.
        self._routable_by_name: dict[str, Obj] = {}
        self._routable_synced: int | None = None
        self._routable_names: dict[str, None] | None = None  # ``routable_pods``' answer, kept with the list
        # Request paths (``paths``): the ModelServing's spec.traffic under the scenario's override,
        # the revisions' role hashes and the table of the routable set (dropped on any change).
        self._spec_traffic = DEFAULT_TRAFFIC
        self._spec_traffic_raw: object = None
        self._revisions: paths.Revisions | None = None
        self._table: paths.PathTable | None = None
        # A path request's pods and the timer releasing each (its first pod's is in ``_in_flight``).
        self._hops: dict[int, list[tuple[str, Timer]]] = {}
        # Canary weight (``weights``): from the ModelServing's status, drawn on a stream of its own.
        self._weight: weights.Weight | None = None
        self._weight_rng = random.Random(f"{self.config.seed}:weights")
        self.store.add_listener(self._on_change)

    # -- MetricsPort --------------------------------------------------------------------------------

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict:
        at = self.loop.now() if at is None else at
        tokens = self._spec_traffic.has_path or (self.traffic is not None and self.traffic.tokens)
        if namespace != self.namespace or name != self.ms_name:
            return routing.window_figures([], revision, start, end, at, tokens=tokens)
        return routing.window_figures(self.requests, revision, start, end, at, tokens=tokens)

    # -- traffic ----------------------------------------------------------------------------------

    def _draw_duration(self) -> float | None:
        # With token figures a request lasts ttft + output x tpot: no duration is drawn for it.
        return None if self.traffic.tokens else self.traffic.duration.draw(self.rng)

    def route(self, duration: float | None) -> Request:
        if self._spec_traffic.has_path or (self.traffic is not None and self.traffic.tokens):
            return self._route_path(duration)
        first = weights.first_hop(self._routable_pods(), self._weight, self._weight_rng, routing.revision_label)
        pod = routing.pick(first, lambda p: len(self._in_flight.get(p["metadata"]["uid"], ())))
        return self._send(duration, pod)

    # -- request paths ------------------------------------------------------------------------------

    def _route_path(self, duration: float | None) -> Request:
        """One request down the path (``paths``), or to one entry pod with token figures only."""
        traffic = self._spec_traffic
        in_flight = self._in_flight_counts
        request_id = len(self.requests) + 1
        if traffic.has_path:
            choice = paths.route(self._path_table(), in_flight, self._weight, self._weight_rng)
        else:
            first = weights.first_hop(self._routable_pods(), self._weight, self._weight_rng, routing.revision_label)
            pod = routing.pick(first, in_flight)
            choice = None if pod is None else paths.Choice([pod], frozenset(), routing.revision_label(pod))
        if choice is None:
            req = routing.refused(request_id, self.loop.now(), path=traffic.has_path)
        else:
            req = routing.send_path(
                request_id,
                self.loop.now(),
                duration,
                choice,
                self.traffic,
                self.config,
                self.rng,
                mixed_pair=choice.pair,
                with_path=traffic.has_path,
            )
        self.requests.append(req)
        if req.result is None:
            self._hold_hops(req)
        return req

    def _hold_hops(self, req: Request) -> None:
        """Each hop's pod holds ``req`` for its ``hop_busy`` seconds: one timer for a run of hops
        that end together (every hop but the last ends at the first token). Timers set one after
        the other for one time run one after the other, so one timer ending the run does what one
        per hop did. Example: hops a, b, c busy (0.1, 0.1, 1.1) -> a timer at +0.1 releasing a and
        b, one at +1.1 finishing the request on c."""
        hops = req.hops or ((None, req.pod, req.pod_uid, None),)
        busy_of = req.hop_busy
        last = len(hops) - 1
        timers = []
        start = 0
        for i, (_, name, uid, _) in enumerate(hops):
            self._uid_by_name[name] = uid
            if i < last and busy_of[i + 1] == busy_of[i]:
                continue  # ends with the next hop: one timer for both
            uids = tuple(hop[2] for hop in hops[start : i + 1])
            if i == last:
                timer = self.loop.call_later(busy_of[i], lambda uids=uids: self._finish_hops(req, uids))
            else:
                timer = self.loop.call_later(busy_of[i], lambda uids=uids: self._release(req, uids))
            for held in uids:
                self._in_flight.setdefault(held, {})[req.id] = (req, timer)
                timers.append((held, timer))
            start = i + 1
        self._hops[req.id] = timers

    def _release(self, req: Request, uids: tuple[str, ...]) -> None:
        """Hops before the last are done with the request (its first token was made)."""
        for uid in uids:
            bucket = self._in_flight.get(uid)
            if bucket is not None:
                bucket.pop(req.id, None)

    def _finish_hops(self, req: Request, uids: tuple[str, ...]) -> None:
        """The last hop's timer: the hops ending with it are released, then the request ends."""
        self._release(req, uids[:-1])
        self._finish_path(req, uids[-1])

    def _finish_path(self, req: Request, uid: str) -> None:
        bucket = self._in_flight.get(uid)
        if bucket is None or req.id not in bucket:
            return
        del bucket[req.id]
        self._hops.pop(req.id, None)
        req.result, req.end = req.answer, self.loop.now()

    def _path_table(self) -> paths.PathTable:
        if self._table is None:
            if self._revisions is None:
                self._revisions = paths.Revisions.of(self.store.list_revisions(self.namespace, self.ms_name))
            self._table = paths.PathTable(self._spec_traffic, self._routable_pods(), self._revisions)
        return self._table

    def _read_spec_traffic(self, ms: Obj | None) -> None:
        """spec.traffic of the ModelServing under the scenario's override, read leniently (the
        controller refuses an invalid manifest; the router keeps routing as before)."""
        spec = (ms or {}).get("spec") or {}
        raw = spec.get("traffic")
        route = dict(self.traffic.route) if self.traffic is not None else {}
        if raw == self._spec_traffic_raw and raw is not None:
            return
        self._spec_traffic_raw = raw
        roles = tuple(r.get("name") for r in ((spec.get("template") or {}).get("roles") or []) if isinstance(r, dict))
        try:
            base = parse_traffic(raw, "spec.traffic", roles)
            traffic = parse_traffic(route, "traffic", roles, None, base) if route else base
        except ValidationError:
            traffic = DEFAULT_TRAFFIC
        if traffic != self._spec_traffic:
            self._spec_traffic = traffic
            self._table = None

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
            # A path request leaves its other hops too.
            for other_uid, other in self._hops.pop(req.id, ()):
                if other_uid != uid:
                    other.cancel()
                    (self._in_flight.get(other_uid) or {}).pop(req.id, None)
        return len(bucket)

    # -- routable set -----------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind == "ModelServing" and change.namespace == self.namespace and change.name == self.ms_name:
            self._weight = weights.of_modelserving(change.obj)
            self._read_spec_traffic(change.obj)
        if change.kind == "ControllerRevision" and change.namespace == self.namespace:
            self._revisions = self._table = None
        if change.kind == "Pod" and change.namespace == self.namespace and change.ms_name == self.ms_name:
            if self._note_pod_change(change):
                self._table = None
            if change.type == "ADDED":
                self._uid_by_name[change.name] = change.obj["metadata"]["uid"]

    def _note_pod_change(self, change: Change) -> bool:
        """Keep the routable set: the changed pod joins, leaves or is replaced by its new version;
        a change of a pod that is neither routable before nor after leaves the list as it is.
        Returns whether the list may now hold other pods (so the path table is built again): not
        for most changes (the seed example with paths: 1,760 of 2,240), made to pods that are not
        routable. Unknown, so yes, while the set is not kept or a restore made it stale."""
        if self._routable_synced is None:
            self._routable = None
            return True
        name, by_name = change.name, self._routable_by_name
        pod = change.obj if change.type != "DELETED" else None
        changed = self._routable_synced != self.store.restores
        if pod is not None and routing.is_entry(pod) and routing.is_routable(pod):
            if name not in by_name:
                self._routable_names = None
            by_name[name] = pod
            self._routable = None
            return True
        if by_name.pop(name, None) is not None:
            self._routable = self._routable_names = None
            return True
        return changed

    def _routable_pods(self) -> list[Obj]:
        """The routable entry pods in ``list_pods`` order (by name)."""
        if self._routable_synced != self.store.restores or self.store.copy_reads:
            self._sync_routable()
        if self._routable is None:
            if self._routable_names is None:
                self._routable_names = dict.fromkeys(sorted(self._routable_by_name))
            self._routable = list(map(self._routable_by_name.__getitem__, self._routable_names))
        return self._routable

    def _sync_routable(self) -> None:
        """The routable set from a walk of all the ModelServing's pods (``list_pods``)."""
        pods = self.store.list_pods(self.namespace, self.ms_name)
        self._routable = routing.routable_entries(pods)
        self._routable_by_name = {p["metadata"]["name"]: p for p in self._routable}
        self._routable_names = dict.fromkeys(self._routable_by_name)
        self._routable_synced = None if self.store.copy_reads else self.store.restores

    def routable_pods(self, namespace: str, ms_name: str, pods: list[Obj] | None = None) -> dict[str, float | None]:
        """The router's table (``ports.routed_pods``, the Routed gate): the entry pods a new request
        may go to now. It takes a pod the moment the pod is routable, so no time of its own (None:
        the pod's Ready time). Another ModelServing's pods are not this router's to tell about."""
        if namespace != self.namespace or ms_name != self.ms_name:
            raise ClusterError(f"the simulated router routes {self.namespace}/{self.ms_name} only")
        self._routable_pods()
        return dict(self._routable_names)

    # -- summary ----------------------------------------------------------------------------------

    def summary(self) -> dict:
        """The trace's ``requests`` object (``routing.summary``)."""
        return routing.summary(self.requests)
