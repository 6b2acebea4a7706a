"""The three ways ``observe`` reads a list of pods, which must agree (``tests/core/test_observe_paths.py``):

- **plain** (``observe_plain``): every pod parsed, every group built. The reference; what
  ``observe(pods)`` does without a cache, and the fallback of the others for a list they cannot
  read (a pod without uid or resourceVersion, a foreign pod);
- **by version** (``_entries_by_version``): each pod's parse taken from the caller's cache by its
  uid and resourceVersion (parsed now where the version moved), and a group whose pods are all the
  same parses as last time is the group built then;
- **by identity** (``_entries_by_identity``): from a port that shares unchanged objects
  (``ports.SharedObjects``) a pod object met again at the same place in the list (or anywhere in
  it, when pods were added or removed) is the same version, so its parse is taken without reading
  the pod;

and, for the last two, **incremental** grouping (``_regroup``): only the groups of the places that
changed since the previous list are grouped again.

Everything a path remembers is in the caller's ``passcache.PassCache``: it is derived data, not
controller state, and dropping it changes nothing but speed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import compress, groupby, repeat
from operator import is_not, itemgetter

from ..passcache import GROUPS_LIMIT, LISTS_LIMIT, PODS_LIMIT, PassCache, bounded_put
from ..ports import Obj, SharedObjects
from .model import GroupObs, Observed, PodObs, group_of_pods
from .parse import parse_pod

_EMPTY: dict = {}

# A pod's parse, kept by uid with the resourceVersion it was parsed at: a pod object with the same
# (uid, resourceVersion) is the same object, so its parse is reused from one pass to the next (with
# 32,000 pods of which a few change per pass, observation goes from ~180 ms to a few ms). Keyed by
# uid alone (the version checked on a hit): one string lookup per pod, no key tuple built, and a
# pod's older versions are dropped as it changes. An entry also carries the pod's group and whether
# it leaves routing, so that observe groups the pods without reading 32,000 PodObs.
CacheEntry = tuple[str, PodObs | None, int | None, bool]  # (resourceVersion, parse, group, leaving)
_PARSE = itemgetter(1)
_GROUP = itemgetter(2)
_LEAVING = itemgetter(3)
# Past this share of places changed (a pod created or deleted before most of the list shifts every
# later pod by one place), reading every pod's version, and grouping every pod, is cheaper than a
# step per changed place.
_MOVED_SHARE_LIMIT = 8


def observe(pods: list[Obj], in_flight: Mapping[str, int] | None = None, cache: PassCache | None = None) -> Observed:
    """The pods as instances and groups. ``cache``: what earlier lists left (None: the plain path,
    everything parsed and built now, nothing remembered)."""
    if cache is None:
        return observe_plain(pods, in_flight)
    # Few lists of 32,000 at a time, and short-lived: a young-generation collection that runs
    # meanwhile walks every element of each (one took ~4 ms with six such lists alive).
    first = _first_uid(pods)
    last = cache.lists.get(first) if first else None
    shared = isinstance(pods, SharedObjects)
    hits = _entries_by_identity(cache, pods, last) if shared and last is not None else None
    if hits is None:
        hits = _entries_by_version(cache, pods)
        if hits is None:  # one by one
            return _observe_one_by_one(cache, pods, in_flight)
    groups = _regroup(cache, last, hits) if last is not None else None
    spans = last.spans if groups is not None else None
    if groups is None:
        grouped = _group_all(cache, hits)
        if grouped is None:  # a foreign pod: named one by one
            return _observe_one_by_one(cache, pods, in_flight)
        groups, spans = grouped
    if first:
        bounded_put(cache.lists, LISTS_LIMIT, first, _LastList(list(pods) if shared else None, hits, groups, spans))
    # The observation's own dict: the one kept for the next list must not change with it.
    return Observed(dict(groups), in_flight or {}, [], list(map(_PARSE, filter(_LEAVING, hits))))


def observe_plain(pods: list[Obj], in_flight: Mapping[str, int] | None = None) -> Observed:
    """The reference path: every pod parsed and every group built now."""
    return _observe_one_by_one(None, pods, in_flight)


def _observe_one_by_one(cache: PassCache | None, pods: list[Obj], in_flight: Mapping[str, int] | None) -> Observed:
    """``observe`` one pod at a time (parses through ``cache`` when there is one): the same result,
    for lists the getters of the faster paths cannot read."""
    foreign: list[str] = []
    by_group: dict[int, list[PodObs]] = {}
    ordinal: int | None = None
    current: list[PodObs] = []
    leaving: list[PodObs] = []
    for raw in pods:
        pod = parse_pod(raw) if cache is None else _parse_cached(cache, raw)
        if pod is None:
            foreign.append((raw.get("metadata") or _EMPTY).get("name") or "?")
            continue
        if pod.leaving_routing:
            leaving.append(pod)
        if pod.group != ordinal:
            ordinal = pod.group
            current = by_group.get(ordinal)  # type: ignore[assignment]
            if current is None:
                current = by_group[ordinal] = []
        current.append(pod)
    groups = {o: group_of(cache, o, group_pods) for o, group_pods in by_group.items()}
    return Observed(groups, in_flight or {}, foreign, leaving)


def _cache_entry(cache: PassCache, raw: Obj) -> CacheEntry | None:
    """The cache entry of ``raw`` at its resourceVersion, parsed now if it has none; None for a pod
    without uid or resourceVersion (never cached)."""
    meta = raw.get("metadata") or _EMPTY
    uid = meta.get("uid")
    rv = meta.get("resourceVersion")
    if not uid or not rv:
        return None
    hit = cache.pods.get(uid)
    if hit is not None and hit[0] == rv:
        return hit  # type: ignore[return-value]
    pod = parse_pod(raw)
    entry = (rv, pod, None, False) if pod is None else (rv, pod, pod.group, pod.leaving_routing)
    return bounded_put(cache.pods, PODS_LIMIT, uid, entry)  # type: ignore[return-value]


def _parse_cached(cache: PassCache, raw: Obj) -> PodObs | None:
    entry = _cache_entry(cache, raw)
    return parse_pod(raw) if entry is None else entry[1]


def group_of(cache: PassCache | None, ordinal: int, pods: list[PodObs]) -> GroupObs:
    """The group of these pods. A group is a function of its pods in list order, so when every pod
    is the same parse as when the cache last built this group (the parse cache hands back the very
    same PodObs for an unchanged uid and resourceVersion), the GroupObs built then is this one:
    mid-rollout at 1,000 groups x 32 pods a few groups change per pass, the others skip building
    their instances (``bench planner``: observe 77 -> ~25 ms warm). Kept by (ordinal, uid of the
    group's first pod)."""
    if cache is None:
        return group_of_pods(ordinal, pods)
    key = (ordinal, pods[0].uid)
    hit = cache.groups.get(key)
    # list == compares element by element, and PodObs compare by identity (eq=False).
    if hit is not None and hit[0] == pods:
        return hit[1]
    # The instances whose pods are the same parses are taken from the group built then.
    group = group_of_pods(ordinal, pods, hit[1] if hit is not None else None)
    if pods[0].uid:  # pods without a uid are parsed anew every pass: nothing to reuse
        bounded_put(cache.groups, GROUPS_LIMIT, key, (pods, group))
    return group


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


def _first_uid(pods: list[Obj]) -> str | None:
    return (pods[0].get("metadata") or _EMPTY).get("uid") if pods else None


def _entries_by_identity(cache: PassCache, pods: SharedObjects, last: _LastList) -> list[CacheEntry] | None:
    """The cache entries of ``pods`` from ``last``, the previous list of the same shared objects
    (the pods that are new objects parsed now); None (too many pods changed, or one without a
    cacheable version). An object met again at its place, or (pods were added or removed, so
    places shifted) anywhere in the previous list, is the same version."""
    previous = last.pods
    if previous is None:
        return None
    moved: list[int] = []
    if len(previous) == len(pods):
        moved = list(compress(range(len(pods)), map(is_not, pods, previous)))
        entries = list(last.entries)
    if len(previous) != len(pods) or len(moved) * _MOVED_SHARE_LIMIT > len(pods):
        moved, entries = _entries_by_place(pods, previous, last.entries)
        if len(moved) * _MOVED_SHARE_LIMIT > len(pods):
            return None
    for i in moved:
        entry = _cache_entry(cache, pods[i])
        if entry is None:
            return None
        entries[i] = entry
    return entries


def _entries_by_place(
    pods: SharedObjects, previous: list[Obj], entries: list[CacheEntry]
) -> tuple[list[int], list[CacheEntry | None]]:
    """Pods were added or removed since ``previous`` (so places shifted): each object met again
    anywhere in ``previous`` takes the entry it had there; returns the places of the others (new
    objects: their entries are None here) and the entries. The previous objects are alive (held
    by the last list), so an ``id`` names one of them alone. Every step runs in C: at 30,000 pods
    a Python walk over the list reads every pod's metadata (cache misses), this reads none.

    Example: previous [a, b, c] with entries [ea, eb, ec], now [a, x, c] plus y at the end:
    places [1, 3], entries [ea, None, ec, None]."""
    count = len(previous)
    place = dict(zip(map(id, previous), range(count)))
    places = list(map(place.get, map(id, pods), repeat(count)))  # ``count``: not met before
    moved = list(compress(range(len(pods)), map(count.__eq__, places)))
    return moved, list(map([*entries, None].__getitem__, places))


def _entries_by_version(cache: PassCache, pods: list[Obj]) -> list[CacheEntry] | None:
    """The cache entries of ``pods`` by each pod's uid and resourceVersion (parsed now where the
    version moved), or None for a pod without metadata, uid or a cacheable resourceVersion.

    One interpreted sweep reads each pod once: reading 32,000 pods is bound by memory latency
    (a few cache misses per pod), and separate C-level sweeps for the metadata, the uids, the
    cache and the versions each missed again (33 ms against 21 ms at 32,000 pods, 2026-12-02)."""
    table = cache.pods
    entries: list[CacheEntry] = []
    append = entries.append
    try:
        for pod in pods:
            meta = pod["metadata"]
            hit = table.get(meta["uid"])
            # A cached version is never empty, so equal versions mean one that keys the cache.
            if hit is None or hit[0] != meta["resourceVersion"]:
                hit = _cache_entry(cache, pod)  # parsed now
                if hit is None:
                    return None
            append(hit)  # type: ignore[arg-type]
    except (KeyError, TypeError):  # a pod without metadata, uid or resourceVersion
        return None
    return entries


def _group_all(
    cache: PassCache, hits: list[CacheEntry]
) -> tuple[dict[int, GroupObs], dict[int, list[tuple[int, int]]]] | None:
    """Every group of the pods, with each group's runs of places; None when a pod is foreign."""
    # Pods come listed by name, so a group's pods are one run (``ms-3-...`` sorts apart from
    # ``ms-30-...``: the ordinal is followed by "-"); a group split over runs is joined.
    by_group: dict[int, list[PodObs]] = {}
    spans: dict[int, list[tuple[int, int]]] = {}
    start = 0
    for ordinal, run in groupby(hits, _GROUP):
        parses = list(map(_PARSE, run))
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
    return {o: group_of(cache, o, group_pods) for o, group_pods in by_group.items()}, spans


def _regroup(cache: PassCache, last: _LastList, hits: list[CacheEntry]) -> dict[int, GroupObs] | None:
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
        groups[ordinal] = group_of(
            cache, ordinal, [hits[i][1] for start, end in last.spans[ordinal] for i in range(start, end)]
        )
    return groups
