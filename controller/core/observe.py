"""Observation: pods -> role instances -> ServingGroups.

Everything here is derived from the pods' labels, annotations and status, never from memory, so a
restarted controller sees exactly what the previous one saw. A pod belongs to instance
(group ordinal, role, instance ordinal) by its labels; an instance is Ready only when all its
``1 + workerReplicas`` pods exist, are Ready and none is being drained or deleted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import compress, groupby
from operator import is_not, itemgetter
from typing import Any

from . import digests, naming
from .ports import Obj, SharedObjects

# Container waiting reasons that mean "this will not become Ready by itself".
FAILING_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "CreateContainerConfigError",
        "InvalidImageName",
        "RunContainerError",
    }
)


CRASH_LOOP = "CrashLoopBackOff"


# eq=False: two PodObs are the same only if they are one object (one parse of one pod version);
# observe compares a group's pods with the previous pass's by identity (``_group_of``).
@dataclass(slots=True, eq=False)
class PodObs:
    name: str
    uid: str
    group: int
    role: str
    ordinal: int
    index: int
    revision: str
    role_hash: str
    phase: str
    ready: bool
    scheduled: bool
    unschedulable: str | None  # the scheduler's message when it cannot place the pod
    deleting: bool
    draining_since: float | None
    node: str | None
    restarts: int
    failing_reason: str | None  # CrashLoopBackOff & co
    gate: bool | None  # InPlaceUpdateReady condition (None: no gate or no condition yet)
    gate_since: float | None  # when that condition last changed (clock seconds)
    has_gate: bool
    inplace_state: dict[str, Any] | None
    inplace_state_error: str | None
    verification: dict[str, Any] | None  # the last verification result (entry pods, spec.verification)
    resource_version: str  # with the uid, identifies this version of the pod (derived data is cached by it)
    digest: str | None  # the digest the first container runs (status imageID), ``digests``
    image_digests: tuple[tuple[str, str], ...]  # (spec image, digest) of the containers that run it
    # Leaving routing: marked draining, or an InPlaceUpdateReady condition is "False" (the in-place
    # readiness gate took it out). The pass asks the router about these pods only.
    leaving_routing: bool
    raw: Obj = field(repr=False)
    # The revisions its compatibility labels name (``planner.labels``), read once per pod version:
    # a pass with a path compares every pod's labels with the history.
    compat: frozenset[str] | None = field(default=None, repr=False)

    @property
    def failed(self) -> bool:
        return self.phase == "Failed"

    @property
    def draining(self) -> bool:
        """Marked draining and not yet terminating (a terminating pod's drain is over)."""
        return self.draining_since is not None and not self.deleting


@dataclass(slots=True)
class InstanceObs:
    """One role instance. Aggregates are computed once by ``finalize`` (planning reads them often)."""

    group: int
    role: str
    ordinal: int
    pods: dict[int, PodObs] = field(default_factory=dict)  # by pod index
    revision: str = ""
    role_hash: str = ""
    all_ready: bool = False  # every present pod Ready, none draining or deleting
    deleting: bool = False  # some pod terminating
    draining: bool = False  # some pod marked draining (and not yet terminating)
    being_removed: bool = False  # some pod draining or terminating
    lost: bool = False  # a pod failed for good (phase Failed): recovery must act
    failing: str | None = None  # CrashLoopBackOff & co
    unschedulable: str | None = None
    updating_in_place: bool = False
    contiguous: int = 0  # pod indexes 0, 1, ... present without a gap (an instance of n pods: n)

    def failure(self) -> str | None:
        """Why it will not become Ready by itself, with its pods' restarts ("CrashLoopBackOff, 4
        restarts"), or None when it is not failing."""
        if self.failing is None and not self.lost:
            return None
        what = self.failing or "a pod Failed"
        restarts = max((p.restarts for p in self.pods.values()), default=0)
        return f"{what}, {restarts} restart{'' if restarts == 1 else 's'}" if restarts else what

    def finalize(self, revision_counts: dict[str, int] | None = None) -> None:
        """``revision_counts``: the group's pods per revision, this instance's pods added to it (the
        group's tally is taken in this same walk over the pods)."""
        pods = self.pods
        contiguous = 0
        while contiguous in pods:
            contiguous += 1
        self.contiguous = contiguous
        entry = pods.get(0) or next(iter(pods.values()))
        self.revision = entry.revision
        self.role_hash = entry.role_hash
        all_ready = True
        for pod in pods.values():
            if revision_counts is not None:
                revision_counts[pod.revision] = revision_counts.get(pod.revision, 0) + 1
            if pod.deleting:
                self.deleting = True
                self.being_removed = True
                all_ready = False
                continue
            if pod.draining_since is not None:
                self.draining = True
                self.being_removed = True
                all_ready = False
            if not pod.ready:
                all_ready = False
            if pod.phase == "Failed":
                self.lost = True
            if pod.failing_reason and self.failing is None:
                self.failing = pod.failing_reason
            if pod.unschedulable and self.unschedulable is None:
                self.unschedulable = pod.unschedulable
            if pod.gate is False or (pod.has_gate and pod.gate is None and pod.inplace_state is not None):
                self.updating_in_place = True
        self.all_ready = all_ready

    @property
    def entry(self) -> PodObs | None:
        return self.pods.get(0) or (next(iter(self.pods.values())) if self.pods else None)

    def complete(self, expected_pods: int) -> bool:
        """Pods 0 .. expected_pods - 1 all exist."""
        return self.contiguous >= expected_pods

    def ready(self, expected_pods: int) -> bool:
        return self.all_ready and self.complete(expected_pods)


@dataclass(slots=True)
class GroupObs:
    ordinal: int
    instances: dict[tuple[str, int], InstanceObs] = field(default_factory=dict)
    revision_counts: dict[str, int] = field(default_factory=dict)  # pods per revision
    revision: str = ""  # the revision most of its pods run (they agree outside recovery)
    deleting: bool = False
    being_removed: bool = False
    unschedulable: bool = False  # some instance has a pod the scheduler cannot place
    pod_count: int = 0
    # The planner's availability figures for this group, memoised with the shape they were computed
    # for (``planner.context``): derived data, kept with the group because a GroupObs is reused
    # while its pods are the same parses.
    availability: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)
    intact: tuple[Any, bool] | None = field(default=None, repr=False, compare=False)  # the same, for recovery
    status_entry: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)  # and for status
    # The state view's entries of this group (``view``), memoised the same way: its instances, and
    # its row of the page's group table.
    view_instances: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)
    view_row: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)
    # What its pods run (``digests.running``), for the record of digests on the revisions: taken
    # on every pass, computed once per GroupObs.
    _running: digests.Running | None = field(default=None, repr=False, compare=False)

    def finalize(self) -> None:
        counts: dict[str, int] = {}
        for inst in self.instances.values():
            inst.finalize(counts)
            self.pod_count += len(inst.pods)
            self.deleting = self.deleting or inst.deleting
            self.being_removed = self.being_removed or inst.being_removed
            self.unschedulable = self.unschedulable or inst.unschedulable is not None
        self.revision_counts = counts
        if len(counts) == 1:
            self.revision = next(iter(counts))
        elif counts:
            self.revision = max(sorted(counts), key=lambda r: counts[r])

    def running(self) -> digests.Running:
        if self._running is None:
            self._running = digests.running(p for inst in self.instances.values() for p in inst.pods.values())
        return self._running

    def role_instances(self, role: str) -> list[InstanceObs]:
        return [inst for (r, _), inst in self.instances.items() if r == role]

    def revisions(self) -> dict[str, int]:
        return self.revision_counts


@dataclass(slots=True)
class Observed:
    groups: dict[int, GroupObs]
    in_flight: Mapping[str, int]
    foreign: list[str]  # pods with our name label but unparseable identity labels
    leaving_routing: list[PodObs] = field(default_factory=list)  # ``PodObs.leaving_routing``, in list order
    # The router's targets (entry pod name -> since when, or None), when the router tells
    # (``ports.routed_pods``); None: Routed is inferred from the pod (``gates``).
    routed: Mapping[str, float | None] | None = None

    def group(self, ordinal: int) -> GroupObs | None:
        return self.groups.get(ordinal)

    def all_pods(self) -> list[PodObs]:
        return [p for g in self.groups.values() for inst in g.instances.values() for p in inst.pods.values()]


def _seconds(value: Any) -> float | None:
    """A condition time as clock seconds: the core writes numbers, an API server RFC 3339."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        from datetime import datetime

        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _restarts_above_baseline(state: dict[str, Any], status: dict[str, Any]) -> str | None:
    """Restart counts judged against the in-place update's recorded baseline.

    The update itself restarts each changed container once, so that one restart is expected; a
    container that is not Ready and restarted more than that since (baseline + 1) is crashing.
    Example: baseline restartCount 2 -> 3 after the update is fine; 4 and not Ready is a crash.
    """
    baseline = state.get("containers") or {}
    for cs in status.get("containerStatuses") or ():
        base = baseline.get(cs.get("name"))
        if not isinstance(base, dict) or cs.get("ready"):
            continue
        try:
            allowed = int(base.get("restartCount") or 0) + 1
        except (TypeError, ValueError):
            continue
        if int(cs.get("restartCount") or 0) > allowed:
            return "RestartsAboveInPlaceBaseline"
    return None


_L_GROUP = naming.LABEL_GROUP_ORDINAL
_L_ORDINAL = naming.LABEL_ROLE_ORDINAL
_L_INDEX = naming.LABEL_POD_INDEX
_L_ROLE = naming.LABEL_ROLE
_L_REVISION = naming.LABEL_REVISION
_L_ROLE_HASH = naming.LABEL_ROLE_TEMPLATE_HASH
_A_DRAINING = naming.ANNOTATION_DRAINING
_A_INPLACE = naming.ANNOTATION_INPLACE_STATE
_A_VERIFICATION = naming.ANNOTATION_VERIFICATION
_C_GATE = naming.CONDITION_INPLACE_READY
_EMPTY: dict[str, Any] = {}


def parse_pod(pod: Obj) -> PodObs | None:
    # This runs for every pod on every pass (32,000 pods in the benchmark): keep it lean.
    meta = pod.get("metadata") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    try:
        group = int(labels[_L_GROUP])
        ordinal = int(labels[_L_ORDINAL])
        index = int(labels[_L_INDEX])
        role = labels[_L_ROLE]
    except (KeyError, ValueError, TypeError):
        return None
    if group < 0 or ordinal < 0 or index < 0 or not role:
        return None
    annotations = meta.get("annotations") or _EMPTY
    status = pod.get("status") or _EMPTY
    spec = pod.get("spec") or _EMPTY
    ready = False
    node = spec.get("nodeName")
    scheduled = bool(node)
    unschedulable = None
    gate = None
    gate_since = None
    leaving = False
    for cond in status.get("conditions") or ():
        ctype = cond.get("type")
        if ctype == "Ready":
            ready = cond.get("status") == "True"
        elif ctype == "PodScheduled":
            if cond.get("status") == "True":
                scheduled = True
            elif cond.get("reason") == "Unschedulable":
                unschedulable = cond.get("message") or "no node fits the pod"
        elif ctype == _C_GATE:
            gate = cond.get("status") == "True"
            gate_since = _seconds(cond.get("lastTransitionTime"))
            if cond.get("status") == "False":
                leaving = True
    phase = status.get("phase") or "Pending"
    restarts = 0
    failing = None
    crashed_since_ready = False
    for cs in status.get("containerStatuses") or ():
        count = int(cs.get("restartCount") or 0)
        restarts += count
        state = cs.get("state")
        if state:
            waiting = state.get("waiting")
            if waiting and waiting.get("reason") in FAILING_REASONS:
                failing = waiting["reason"]
        if count and not cs.get("ready"):
            last = (cs.get("lastState") or _EMPTY).get("terminated")
            if last and last.get("exitCode") not in (0, None):
                crashed_since_ready = True
    draining_since: float | None = None
    state = None
    state_error = None
    verification = None
    if annotations:
        draining = annotations.get(_A_DRAINING)
        if draining is not None:
            leaving = True
            try:
                draining_since = float(draining)
            except ValueError:
                # A mark we cannot read still means "do not route"; treat it as started long
                # ago so the drain timeout ends it rather than leaving the pod unroutable.
                draining_since = float("-inf")
        state_raw = annotations.get(_A_INPLACE)
        if state_raw:
            try:
                state = json.loads(state_raw)
                if not isinstance(state, dict) or "targetRevision" not in state:
                    state, state_error = None, "in-place update annotation lacks targetRevision"
            except ValueError:
                state_error = "in-place update annotation is not JSON"
        verification_raw = annotations.get(_A_VERIFICATION)
        if verification_raw:
            try:
                verification = json.loads(verification_raw)
            except ValueError:
                verification = None  # unreadable: as if never verified (it is verified again)
            if not isinstance(verification, dict):
                verification = None
    if state is not None and state.get("completed") and failing is None:
        failing = _restarts_above_baseline(state, status)
    elif failing is None and crashed_since_ready and state is None and state_error is None:
        # Between two back-offs the kubelet runs the container again and its waiting reason is
        # gone until it exits anew; one that last exited with an error and has not been Ready
        # since is still crash-looping. Read so, the instance stays Failed (and the phase
        # Degraded) through its restarts. An in-place update restarts containers on purpose: its
        # own baseline judges those.
        failing = CRASH_LOOP
    gates = spec.get("readinessGates")
    has_gate = bool(gates) and any(g.get("conditionType") == _C_GATE for g in gates)
    digest, image_digests = digests.pod_digests(pod)
    return PodObs(
        meta.get("name") or "",
        meta.get("uid") or "",
        group,
        role,
        ordinal,
        index,
        labels.get(_L_REVISION) or "",
        labels.get(_L_ROLE_HASH) or "",
        phase,
        ready and phase == "Running",
        scheduled,
        unschedulable,
        bool(meta.get("deletionTimestamp")),
        draining_since,
        node,
        restarts,
        failing,
        gate,
        gate_since,
        has_gate,
        state,
        state_error,
        verification,
        str(meta.get("resourceVersion") or ""),
        digest,
        image_digests,
        leaving,
        pod,
    )


# Parsed pods by uid, with the resourceVersion they were parsed at. A pod object with the same
# (uid, resourceVersion) is the same object, so its parse can be reused from one pass to the next:
# with 32,000 pods of which a few change per pass, this turns observation from ~180 ms into a few
# ms. Keyed by uid alone (the version checked on a hit): one string lookup per pod, no key tuple
# built, and a pod's older versions are dropped as it changes. It is a cache of derived data, not
# controller state: dropping it changes nothing but speed. An entry also carries the pod's group
# and whether it leaves routing, so that observe groups the pods without reading 32,000 PodObs.
CacheEntry = tuple[str, PodObs | None, int | None, bool]  # (resourceVersion, parse, group, leaving)
_PARSE_CACHE: dict[str, CacheEntry] = {}
_PARSE_CACHE_LIMIT = 200_000


def _cache_entry(raw: Obj) -> CacheEntry | None:
    """The parse-cache entry of ``raw`` at its resourceVersion, parsed now if it has none; None
    for a pod without uid or resourceVersion (never cached)."""
    meta = raw.get("metadata") or _EMPTY
    uid = meta.get("uid")
    rv = meta.get("resourceVersion")
    if not uid or not rv:
        return None
    hit = _PARSE_CACHE.get(uid)
    if hit is not None and hit[0] == rv:
        return hit
    if len(_PARSE_CACHE) >= _PARSE_CACHE_LIMIT:
        _PARSE_CACHE.clear()
    pod = parse_pod(raw)
    entry = (rv, pod, None, False) if pod is None else (rv, pod, pod.group, pod.leaving_routing)
    _PARSE_CACHE[uid] = entry
    return entry


def _parse_cached(raw: Obj) -> PodObs | None:
    entry = _cache_entry(raw)
    return parse_pod(raw) if entry is None else entry[1]


# Observed groups of the previous passes, by (group ordinal, uid of the group's first pod): the pods
# they were built from and the finalised GroupObs. A group is a function of its pods in list order,
# so when every pod of the group is the same parse as last time (the parse cache hands back the very
# same PodObs for an unchanged uid and resourceVersion), the GroupObs built then is this pass's too.
# Mid-rollout at 1,000 groups x 32 pods a few groups change per pass: the others skip building and
# finalising their instances (python -m bench planner: observe 77 -> ~25 ms warm). Nothing mutates a
# GroupObs after ``finalize``. Like the parse cache it is derived data, not controller state.
_GROUP_CACHE: dict[tuple[int, str], tuple[list[PodObs], GroupObs]] = {}
_GROUP_CACHE_LIMIT = 50_000


def _group_of(ordinal: int, pods: list[PodObs]) -> GroupObs:
    key = (ordinal, pods[0].uid)
    hit = _GROUP_CACHE.get(key)
    # list == compares element by element, and PodObs compare by identity (eq=False).
    if hit is not None and hit[0] == pods:
        return hit[1]
    group = GroupObs(ordinal)
    instances = group.instances
    inst: InstanceObs | None = None
    for pod in pods:
        if inst is None or inst.ordinal != pod.ordinal or inst.role != pod.role:
            ikey = (pod.role, pod.ordinal)
            inst = instances.get(ikey)
            if inst is None:
                inst = instances[ikey] = InstanceObs(ordinal, pod.role, pod.ordinal)
        inst.pods[pod.index] = pod
    group.finalize()
    if pods[0].uid:  # pods without a uid are parsed anew every pass: nothing to reuse
        if len(_GROUP_CACHE) >= _GROUP_CACHE_LIMIT:
            _GROUP_CACHE.clear()
        _GROUP_CACHE[key] = (pods, group)
    return group


_CACHED_PARSE = itemgetter(1)
_CACHED_GROUP = itemgetter(2)
_CACHED_LEAVING = itemgetter(3)


# The previous list of each ModelServing's pods, with the cache entry of each pod and what observe
# made of them, by the uid of the list's first pod (pods are listed by name: it is the same pod
# from one pass to the next unless group 0's entry pod was replaced).
#
# - From a port that shares unchanged objects (``ports.SharedObjects``), a pod object met again at
#   the same place is the same version, so its entry is taken without reading the pod: comparing
#   32,000 references is ~4 ms where reading 32,000 pods' metadata, uid and resourceVersion is
#   ~20-35 ms of cache misses (``python -m bench planner``).
# - Either way, a place whose entry is the one it had then (the same parse of the same pod version)
#   changed nothing, and a group none of whose places changed is the group observed then: only the
#   groups of the changed places are grouped again (a 1,000-group rollout changes ~100 a pass).
@dataclass(slots=True)
class _LastList:
    pods: list[Obj] | None  # the objects, from a port that shares them (None: a plain list)
    entries: list[CacheEntry]
    groups: dict[int, GroupObs]  # in the order observe made them (first appearance in the list)
    spans: dict[int, list[tuple[int, int]]]  # each group's runs of places in the list, [start, end)


_LAST_LISTS: dict[str, _LastList] = {}
_LAST_LISTS_LIMIT = 1_000
# Past this share of places changed (a pod created or deleted before most of the list shifts every
# later pod by one place), reading every pod's version, and grouping every pod, is cheaper than a
# step per changed place.
_MOVED_SHARE_LIMIT = 8


def _first_uid(pods: list[Obj]) -> str | None:
    return (pods[0].get("metadata") or _EMPTY).get("uid") if pods else None


def _entries_by_identity(pods: SharedObjects, last: _LastList) -> list[CacheEntry] | None:
    """The cache entries of ``pods`` from ``last``, the previous list of the same shared objects
    (the pods that are new objects parsed now); None (another length, too many pods changed, or
    one without a cacheable version)."""
    previous = last.pods
    if previous is None or len(previous) != len(pods):
        return None
    moved = list(compress(range(len(pods)), map(is_not, pods, previous)))
    if len(moved) * _MOVED_SHARE_LIMIT > len(pods):
        return None
    entries = list(last.entries)
    for i in moved:
        entry = _cache_entry(pods[i])
        if entry is None:
            return None
        entries[i] = entry
    return entries


def _entries_by_version(pods: list[Obj]) -> list[CacheEntry] | None:
    """The cache entries of ``pods`` by each pod's uid and resourceVersion (parsed now where the
    version moved), or None for a pod without metadata, uid or a cacheable resourceVersion.

    One interpreted sweep reads each pod once: reading 32,000 pods is bound by memory latency
    (a few cache misses per pod), and separate C-level sweeps for the metadata, the uids, the
    cache and the versions each missed again (33 ms against 21 ms at 32,000 pods, 2026-12-02)."""
    cache = _PARSE_CACHE
    entries: list[CacheEntry] = []
    append = entries.append
    try:
        for pod in pods:
            meta = pod["metadata"]
            hit = cache.get(meta["uid"])
            # A cached version is never empty, so equal versions mean one that keys the cache.
            if hit is None or hit[0] != meta["resourceVersion"]:
                hit = _cache_entry(pod)  # parsed now
                if hit is None:
                    return None
            append(hit)
    except (KeyError, TypeError):  # a pod without metadata, uid or resourceVersion
        return None
    return entries


def _group_all(hits: list[CacheEntry]) -> tuple[dict[int, GroupObs], dict[int, list[tuple[int, int]]]] | None:
    """Every group of the pods, with each group's runs of places; None when a pod is foreign."""
    # Pods come listed by name, so a group's pods are one run (``ms-3-...`` sorts apart from
    # ``ms-30-...``: the ordinal is followed by "-"); a group split over runs is joined.
    by_group: dict[int, list[PodObs]] = {}
    spans: dict[int, list[tuple[int, int]]] = {}
    start = 0
    for ordinal, run in groupby(hits, _CACHED_GROUP):
        parses = list(map(_CACHED_PARSE, run))
        end = start + len(parses)
        current = by_group.get(ordinal)
        if current is None:
            by_group[ordinal] = parses
            spans[ordinal] = [(start, end)]
        else:
            current.extend(parses)
            spans[ordinal].append((start, end))
        start = end
    if None in by_group:  # a foreign pod (our name label, unreadable identity)
        return None
    return {o: _group_of(o, group_pods) for o, group_pods in by_group.items()}, spans


def _regroup(last: _LastList, hits: list[CacheEntry]) -> dict[int, GroupObs] | None:
    """The groups of ``hits`` from those of ``last``, the previous list of the same pods: a place
    whose entry is the one it had then changed nothing; the groups of the other places are grouped
    again. None (every group is) when the lengths differ, too many places changed, or a changed
    place holds a pod of another group than the one it held (or of none)."""
    previous = last.entries
    if len(previous) != len(hits):
        return None
    moved = list(compress(range(len(hits)), map(is_not, hits, previous)))
    if len(moved) * _MOVED_SHARE_LIMIT > len(hits):
        return None
    touched = set()
    for i in moved:
        ordinal = hits[i][2]
        if ordinal is None or ordinal != previous[i][2]:
            return None
        touched.add(ordinal)
    groups = dict(last.groups)  # the same order: values replaced in place
    for ordinal in touched:
        groups[ordinal] = _group_of(
            ordinal, [hits[i][1] for start, end in last.spans[ordinal] for i in range(start, end)]
        )
    return groups


def observe(pods: list[Obj], in_flight: Mapping[str, int] | None = None) -> Observed:
    # Few lists of 32,000 at a time, and short-lived: a young-generation collection that runs
    # meanwhile walks every element of each (one took ~4 ms with six such lists alive).
    first = _first_uid(pods)
    last = _LAST_LISTS.get(first) if first else None
    shared = isinstance(pods, SharedObjects)
    hits = _entries_by_identity(pods, last) if shared and last is not None else None
    if hits is None:
        hits = _entries_by_version(pods)
        if hits is None:  # one by one
            return _observe_pods(pods, in_flight)
    groups = _regroup(last, hits) if last is not None else None
    spans = last.spans if groups is not None else None
    if groups is None:
        grouped = _group_all(hits)
        if grouped is None:  # a foreign pod: named one by one
            return _observe_pods(pods, in_flight)
        groups, spans = grouped
    if first:
        if len(_LAST_LISTS) >= _LAST_LISTS_LIMIT:
            _LAST_LISTS.clear()
        _LAST_LISTS[first] = _LastList(list(pods) if shared else None, hits, groups, spans)
    # The observation's own dict: the one kept for the next list must not change with it.
    return Observed(dict(groups), in_flight or {}, [], list(map(_CACHED_PARSE, filter(_CACHED_LEAVING, hits))))


def _observe_pods(pods: list[Obj], in_flight: Mapping[str, int] | None) -> Observed:
    """``observe`` one pod at a time: the same result, for lists the getters cannot read."""
    foreign: list[str] = []
    cache = _PARSE_CACHE
    by_group: dict[int, list[PodObs]] = {}
    ordinal: int | None = None
    current: list[PodObs] = []
    leaving: list[PodObs] = []
    for raw in pods:
        meta = raw.get("metadata") or _EMPTY
        hit = cache.get(meta.get("uid"))
        # A stored version is never empty, so equal versions mean this pod has a version.
        pod = hit[1] if hit is not None and hit[0] == meta.get("resourceVersion") else _parse_cached(raw)
        if pod is None:
            foreign.append(meta.get("name") or "?")
            continue
        if pod.leaving_routing:
            leaving.append(pod)
        if pod.group != ordinal:
            ordinal = pod.group
            current = by_group.get(ordinal)  # type: ignore[assignment]
            if current is None:
                current = by_group[ordinal] = []
        current.append(pod)
    groups = {o: _group_of(o, group_pods) for o, group_pods in by_group.items()}
    return Observed(groups, in_flight or {}, foreign, leaving)
