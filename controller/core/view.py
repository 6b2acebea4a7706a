"""The state view: one serializer for trace frames, the REST GET and the websocket.

``build_view`` is a pure function of cluster objects (the ModelServing with its status, its pods,
its revisions, the router's in-flight counts, the time), so every consumer sees the same thing and
a view can be rebuilt at any moment without asking the controller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import compress
from operator import is_
from typing import Any, NamedTuple

from . import gates as serving_gates
from . import naming, phases
from .evidence import pause_hold
from .observe import GroupObs, InstanceObs, Observed, PodObs, observe
from .passcache import GROUPS_LIMIT, REVISIONS_LIMIT, PassCache, bounded_put
from .revisions import History, Revision
from .spec import GROUP_ROLLING, ModelServing, ValidationError, parse_modelserving_cached

STATE_PENDING = "Pending"
STATE_CREATING = "Creating"
STATE_READY = "Ready"
STATE_UPDATING = "Updating"
STATE_DRAINING = "Draining"
STATE_DELETING = "Deleting"
STATE_FAILED = "Failed"


def instance_state(inst: InstanceObs, expected_pods: int) -> str:
    if inst.deleting:
        return STATE_DELETING
    if inst.draining:
        return STATE_DRAINING
    if inst.updating_in_place:
        return STATE_UPDATING
    if inst.lost or inst.failing:
        return STATE_FAILED
    if inst.ready(expected_pods):
        return STATE_READY
    if any(not p.scheduled for p in inst.pods.values()):
        return STATE_PENDING
    return STATE_CREATING


def expected_pods(ms: ModelServing | None, history: History, revision: str, role: str) -> int:
    """Pods per instance of ``role`` at ``revision`` (its stored data; else the spec's role)."""
    data = history.data_of(revision)
    for r in (data or {}).get("roles") or []:
        if r.get("name") == role:
            return 1 + int(r.get("workerReplicas") or 0)
    spec_role = ms.role(role) if ms is not None else None
    return spec_role.pods_per_instance if spec_role is not None else 1


def _parsed(ms: dict[str, Any], cache: dict | None = None) -> ModelServing | None:
    """The manifest through the one reader (``spec.parse_modelserving``); None when it is invalid:
    the view then shows what runs, and status says why nothing moves (SpecInvalid)."""
    try:
        return parse_modelserving_cached(ms, cache)
    except ValidationError:
        return None


def build_view(
    ms: dict[str, Any],
    pods: list[dict[str, Any]],
    revisions: list[dict[str, Any]],
    in_flight: Mapping[str, int],
    now: float,
    *,
    observed: Observed | None = None,
    routed: Mapping[str, float | None] | None = None,
    parse_cache: dict | None = None,
    cache: PassCache | None = None,
) -> dict[str, Any]:
    """``observed`` may be passed when the caller already observed these very pods. ``routed``:
    the router's targets (``ports.routed_pods``), for the Routed gate; None: inferred from the pods.
    ``parse_cache``: the caller's (``spec.parse_modelserving_cached``). ``cache``: what the caller
    keeps from view to view (``passcache``); None builds every entry. Either way, the same view."""
    meta = ms.get("metadata") or {}
    status = ms.get("status") or {}
    parsed = _parsed(ms, parse_cache)
    history = History.from_objects(revisions, cache)
    if observed is None:
        observed = observe(pods, in_flight, cache)
    side = _spec_side(parsed, meta, status, observed)
    vp = _view_pass(parsed, history, side, meta.get("namespace") or "default", status, in_flight, routed, cache)
    walk = _walk_groups(observed, vp, now, side.timeout)
    out = {
        "namespace": meta.get("namespace") or "default",
        "name": meta.get("name"),
        "generation": meta.get("generation"),
        "spec": side.summary,
        "strategyType": side.strategy_type,
        "phase": phases.PAUSED if side.summary["paused"] else status.get("phase") or phases.PENDING,
        "converged": bool(status.get("converged")),
        "currentRevision": status.get("currentRevision"),
        "updateRevision": status.get("updateRevision"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message")} for c in status.get("conditions") or []
        ],
        "counts": {k: status.get(k) for k in ("replicas", "currentReplicas", "updatedReplicas", "availableReplicas")},
        "revisions": _revisions_json(history, cache),
        "instances": walk.instances,
        "blocked": expand_waiting(status.get("waiting") or []),
        "waiting": status.get("waiting") or [],
        "groups": _groups(
            status, walk.idle, observed.groups, side.replicas, side.role_replicas, vp.update_revision, cache
        ),
        "roles": status.get("roles") or [],
        "strategy": status.get("strategy") or {},
        "drain": walk.drain,
        "canary": _canary_view(status.get("canary"), parsed, now),
        "gateFunnel": _gate_funnel(walk.counted, cache),
        # The funnel's denominator: the instances the spec asks for (replicas x each role's replicas).
        "gateFunnelTotal": side.replicas * sum(side.role_replicas.values()),
        "servingRevisions": walk.serving,
        "verification": parsed.verification.to_json() if parsed is not None and parsed.verification else None,
        "time": now,
    }
    out["degraded"] = _degraded(out["phase"], out["conditions"], observed)
    if status.get("skew") is not None:
        # Coordinated roles: the widest per-group gap in Ready progress and what the quotas allow.
        out["skew"] = status["skew"]
    return out


def _revisions_json(history: History, cache: PassCache | None) -> list[dict[str, Any]]:
    """Each revision as the page lists it; with a cache, a revision object met again (the stores
    hand out the same object until it changes: the same parse, ``History.from_objects``) gives
    the same entry."""
    if cache is None:
        return [r.to_json() for r in history.revisions]
    return [cache.by_identity(Revision.to_json, r, REVISIONS_LIMIT) for r in history.revisions]


class _SpecSide(NamedTuple):
    """What the view takes from the spec: its sizes, drain timeout, strategy and the page's summary."""

    replicas: int
    role_replicas: dict[str, int]
    timeout: float
    strategy_type: str
    summary: dict[str, Any]
    verification: bool


def _spec_side(
    parsed: ModelServing | None, meta: dict[str, Any], status: dict[str, Any], observed: Observed
) -> _SpecSide:
    """From the spec; from what runs when the manifest is invalid (``parsed`` None)."""
    return _from_spec(parsed, meta) if parsed is not None else _from_what_runs(observed, status)


def _from_spec(parsed: ModelServing, meta: dict[str, Any]) -> _SpecSide:
    summary = {"replicas": parsed.replicas, "partition": parsed.partition_as_written(), "paused": parsed.paused}
    if naming.ANNOTATION_AUTOSCALE in (meta.get("annotations") or {}):
        # Only when it is on (the page's "Autoscale off" applies then); absent otherwise, so a
        # state without autoscale is what it was before the setting existed.
        summary["autoscale"] = True
    return _SpecSide(
        parsed.replicas,
        {r.name: r.replicas for r in parsed.roles},
        parsed.drain_timeout_seconds,
        parsed.strategy.type,
        summary,
        parsed.verification is not None,
    )


def _from_what_runs(observed: Observed, status: dict[str, Any]) -> _SpecSide:
    """An invalid manifest: show what runs (the observed groups and roles), nothing the spec says.
    Example: groups 0 and 1 with prefill-0 and prefill-2 -> 2 replicas, prefill 3 instances."""
    replicas = len([g for g in observed.groups.values() if g.instances])
    role_replicas: dict[str, int] = {}
    for group in observed.groups.values():
        for role, ordinal in group.instances:
            role_replicas[role] = max(role_replicas.get(role, 0), ordinal + 1)
    strategy_type = (status.get("strategy") or {}).get("type") or GROUP_ROLLING
    return _SpecSide(
        replicas, role_replicas, 0.0, strategy_type, {"replicas": replicas, "partition": None, "paused": False}, False
    )


def _view_pass(
    parsed: ModelServing | None,
    history: History,
    side: _SpecSide,
    namespace: str,
    status: dict[str, Any],
    in_flight: Mapping[str, int],
    routed: Mapping[str, float | None] | None,
    cache: PassCache | None,
) -> _ViewPass:
    """What every instance entry reads besides its own pods, with its shape (interned in the cache)."""
    update_revision = status.get("updateRevision")
    update_record = history.get(update_revision)
    update_role_hashes = update_record.role_hashes() if update_record is not None else {}
    role_level = side.strategy_type != GROUP_ROLLING
    # Pods per instance by (revision, role): a few revisions, thousands of instances.
    expected_of: dict[tuple[str, str], int] = {}

    def expected(revision: str, role: str) -> int:
        n = expected_of.get((revision, role))
        if n is None:
            n = expected_of[(revision, role)] = expected_pods(parsed, history, revision, role)
        return n

    shape = (
        namespace,
        side.replicas,
        tuple(side.role_replicas.items()),
        update_revision,
        role_level,
        tuple(sorted(update_role_hashes.items())) if role_level else (),  # read by role-level ones only
        side.verification,
    )
    return _ViewPass(
        namespace,
        side.replicas,
        side.role_replicas,
        update_revision,
        role_level,
        update_role_hashes,
        side.verification,
        expected,
        in_flight,
        routed,
        shape if cache is None else cache.view_shapes(shape),
        cache,
    )


class _Walk(NamedTuple):
    """The view's parts gathered over every group, in ordinal order."""

    instances: list[dict[str, Any]]
    idle: dict[int, list[dict[str, Any]]]  # each group's entries with no request in flight
    drain: list[dict[str, Any]]
    counted: list[list[tuple[tuple[int, str, int], serving_gates.InstanceGates]]]  # each group's (``_counted``)
    serving: dict[str, dict[str, int]]  # per revision run: instances, serving, failed


def _walk_groups(observed: Observed, vp: _ViewPass, now: float, timeout: float) -> _Walk:
    walk = _Walk([], {}, [], [], {})
    for g in sorted(observed.groups):
        part = _group_part(observed.groups[g], vp)
        walk.idle[g] = part.idle
        walk.instances.extend(part.instances)
        walk.counted.append(part.counted)
        for runs, (instances, serving, failed) in part.serving.items():
            tally = walk.serving.setdefault(runs, {"instances": 0, "serving": 0, "failed": 0})
            tally["instances"] += instances
            tally["serving"] += serving
            tally["failed"] += failed
        walk.drain.extend(
            _drain_entry(p, g, role, ordinal, vp.in_flight, now, timeout) for p, role, ordinal in part.draining
        )
    return walk


def _drain_entry(
    p: PodObs, g: int, role: str, ordinal: int, in_flight: Mapping[str, int], now: float, timeout: float
) -> dict[str, Any]:
    """A draining pod's entry. A drain mark that cannot be read counts from now. Example: drained
    since 100, timeout 30, now 120 -> 10 s left; at 140 -> 0, never negative."""
    since = p.draining_since if p.draining_since not in (None, float("-inf")) else now
    return {
        "pod": p.name,
        "group": g,
        "role": role,
        "ordinal": ordinal,
        "inFlight": int(in_flight.get(p.name, 0)),
        "since": since,
        "secondsLeft": max(round(timeout - (now - since), 3), 0.0),
    }


def _gate_funnel(
    counted: list[list[tuple[tuple[int, str, int], serving_gates.InstanceGates]]], cache: PassCache | None
) -> list[dict[str, Any]]:
    """``gates.funnel`` of the instances each group counts; with a cache, the last pass's funnel
    when every group handed back the same list of them (the same part: only in-flight counts
    moved, or nothing)."""
    if cache is not None:
        memo = cache.view_funnel
        if memo is not None and len(memo[0]) == len(counted) and all(map(is_, counted, memo[0])):
            return memo[1]
    funnel = serving_gates.funnel([pair for group in counted for pair in group])
    if cache is not None:
        cache.view_funnel = (counted, funnel)  # replaced whole: views may be built in several threads
    return funnel


_LEAVING = (STATE_DRAINING, STATE_DELETING)


def _counted(g: int, role: str, ordinal: int, state: str, replicas: int, role_replicas: dict[str, int]) -> bool:
    """Whether the funnel counts the instance: it is in a slot the spec asks for (group below
    replicas, ordinal below the role's replicas) and not leaving. A surge group comes and goes with
    the rollout, and a draining or terminating instance is on its way out, not waiting for a gate:
    counted, either would move the funnel's total while a rollout runs, and a Ready pod being
    drained would show as waiting at Loaded since it became Ready (minutes before the deploy)."""
    return g < replicas and ordinal < role_replicas.get(role, 0) and state not in _LEAVING


DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
SHOWN_FAILURES = 5


def _degraded(phase: str, conditions: list[dict[str, Any]], observed: Observed) -> dict[str, Any] | None:
    """Why the phase is Degraded, or the rollout stalled past its deadline, for the page's banner:
    ``{title, reasons}`` (the failing instances with their reason and restarts, the deadline, the
    availability), or None when neither."""
    by_type = {c.get("type"): c for c in conditions}
    progressing = by_type.get("Progressing") or {}
    stalled = progressing.get("status") == "False" and progressing.get("reason") == DEADLINE_EXCEEDED
    if phase != phases.DEGRADED and not stalled:
        return None
    reasons = []
    failures = 0
    for g in sorted(observed.groups):
        for (role, ordinal), inst in sorted(observed.groups[g].instances.items()):
            failure = inst.failure()
            if failure:
                failures += 1
                if failures <= SHOWN_FAILURES:
                    reasons.append(f"group {g} {role}-{ordinal}: {failure}")
    if failures > SHOWN_FAILURES:
        reasons.append(f"and {failures - SHOWN_FAILURES} more failing instances")
    if stalled and progressing.get("message"):
        reasons.append(progressing["message"])
    available = by_type.get("Available") or {}
    if available.get("message"):
        reasons.append(available["message"])
    return {"title": "Rollout stalled past its deadline" if stalled else "Degraded", "reasons": reasons}


@dataclass(frozen=True, slots=True)
class _ViewPass:
    """What every instance entry of one ``build_view`` reads besides its own pods. ``shape``, made
    from the fields before ``expected``, is interned in the cache: equal shapes, equal entries."""

    namespace: str
    replicas: int
    role_replicas: dict[str, int]
    update_revision: str | None
    role_level: bool
    update_role_hashes: dict[str, str]
    verification: bool
    expected: Callable[[str, str], int]
    in_flight: Mapping[str, int]
    routed: Mapping[str, float | None] | None
    shape: tuple[Any, ...]
    cache: PassCache | None

    def runs(self, inst: InstanceObs, role: str) -> str:
        """The revision an instance runs. Under role-level strategies an instance of a role whose
        template did not change keeps its pods (and their old revision label) but runs exactly the
        update revision's template for that role: that is the revision reported."""
        if (
            self.role_level
            and self.update_revision
            and inst.role_hash
            and self.update_role_hashes.get(role) == inst.role_hash
        ):
            return self.update_revision
        return inst.revision


class _GroupPart(NamedTuple):
    """One group's share of the view: its instance entries in order and the same with no request
    in flight (``idle``: the group table's row reads those), the gates of those the funnel counts
    (``_counted``), per revision run its (instances, serving, failed) (for the serving tallies),
    and its draining pods as (pod, role, ordinal) (their drain entries depend on the time: made on
    every pass)."""

    instances: list[dict[str, Any]]
    idle: list[dict[str, Any]]
    counted: list[tuple[tuple[int, str, int], serving_gates.InstanceGates]]
    serving: dict[str, tuple[int, int, int]]
    draining: list[tuple[PodObs, str, int]]


class _InstancePart(NamedTuple):
    """One instance's share of its group's part (with no request in flight), and the key it was
    built under (``_share``; None without a cache)."""

    key: tuple[Any, ...] | None
    pods: Mapping[int, PodObs]  # the instance's own (frozen): the same object, the same pods in order
    entry: dict[str, Any]
    counted: tuple[tuple[int, str, int], serving_gates.InstanceGates] | None  # for the funnel (``_counted``)
    serving: tuple[str, bool, bool]  # (revision run, serving, failed)
    draining: list[tuple[PodObs, str, int]]


class _Layout(NamedTuple):
    """How a GroupObs is laid out, fixed for it (nothing changes one after observe)."""

    ordered: list[tuple[str, int, InstanceObs, list[PodObs]]]  # ``_ordered``
    pairs: list[tuple[str, str]]  # the distinct (revision, role) of its instances
    entry_names: list[str | None]  # each instance's entry pod (``InstanceObs.entry``), by name
    names: list[str]  # every pod of it, instance by instance, each in index order
    owner: list[int]  # for each of ``names``, the place of its instance in ``ordered``


class _GroupRecord(NamedTuple):
    """What ``_group_part`` keeps of a group ordinal's last pass in the cache (``view_entries``),
    replaced whole (a web process may build views in several threads)."""

    group: GroupObs  # the observed group it was made from
    key: tuple[Any, ...]  # (shape, pods expected per instance of ``pairs``, routed entry pods)
    layout: _Layout
    base: _GroupPart  # with no request in flight
    shares: list[_InstancePart]  # each instance's share of ``base``, in ``layout.ordered``'s order
    counts: tuple[Any, ...]  # the in-flight counts of ``layout.names``; () when none is in flight
    part: _GroupPart  # ``base`` with those counts


def _ordered(group: GroupObs) -> list[tuple[str, int, InstanceObs, list[PodObs]]]:
    """A group's instances as (role, ordinal, instance, its pods in index order), in order."""
    return [
        (role, ordinal, inst, [inst.pods[i] for i in sorted(inst.pods)])
        # By (role, ordinal) alone: the keys are distinct, so no two instances are ever compared.
        for (role, ordinal), inst in sorted(group.instances.items())
    ]


def _layout(group: GroupObs) -> _Layout:
    ordered = _ordered(group)
    pairs = list(dict.fromkeys([(inst.revision, role) for role, _, inst, _ in ordered]))
    entry_names = [entry.name if (entry := inst.entry) is not None else None for _, _, inst, _ in ordered]
    names = [p.name for _, _, _, pods in ordered for p in pods]
    owner = [place for place, (_, _, _, pods) in enumerate(ordered) for _ in pods]
    return _Layout(ordered, pairs, entry_names, names, owner)


def _relayout(group: GroupObs, last: _GroupRecord) -> tuple[_Layout, bool]:
    """``_layout(group)``, taken from the layout of the group last met at its ordinal where it
    holds: the same instances (role, ordinal) keep their order, and an instance with the same pods
    (PodObs compare by identity) keeps its pods in index order and, with a pod 0, its entry pod. A
    rollout changes a few instances of a group a pass: the seed example's group of 160 sorts the
    pods of those few, and keeps the pod names when those are the same too. With whether it kept
    the last layout's order (the same instances)."""
    instances = group.instances
    old = last.layout
    if instances.keys() != last.group.instances.keys():
        return _layout(group), False
    ordered = []
    entry_names = []
    same_names = True
    for (role, ordinal, before, pods_sorted), entry_name in zip(old.ordered, old.entry_names, strict=True):
        inst = instances[(role, ordinal)]
        if inst is not before:  # observe keeps an unchanged instance as the same object
            pods = inst.pods
            if pods != before.pods:
                now = [pods[i] for i in sorted(pods)]
                same_names = same_names and [p.name for p in now] == [p.name for p in pods_sorted]
                pods_sorted = now
                entry_name = None
            if entry_name is None or 0 not in pods:
                entry = inst.entry  # pod 0, else the first in the instance's order
                entry_name = entry.name if entry is not None else None
        ordered.append((role, ordinal, inst, pods_sorted))
        entry_names.append(entry_name)
    pairs = list(dict.fromkeys([(inst.revision, role) for role, _, inst, _ in ordered]))
    if same_names:
        return _Layout(ordered, pairs, entry_names, old.names, old.owner), True
    names = [p.name for _, _, _, pods in ordered for p in pods]
    owner = [place for place, (_, _, _, pods) in enumerate(ordered) for _ in pods]
    return _Layout(ordered, pairs, entry_names, names, owner), True


def _group_part(group: GroupObs, vp: _ViewPass) -> _GroupPart:
    """The group's entries, memoised on the GroupObs (reused from one pass to the next while its
    pods are the same parses) under the pass's shape, the pods per instance of its instances and
    the router's table of its entry pods. 1,000 unchanged groups of a rollout then cost a key
    each, and the publisher's delta finds their entries unchanged by identity (``make_delta``).
    The in-flight counts, which move with every request while traffic runs, are a second key: when
    only they changed, the memoised entries are copied with the new counts (``_with_counts``)
    instead of walking the gates of every instance again. When the group changed (a new GroupObs:
    some pod of it changed), each instance whose pods are the same parses is taken from the group's
    last build (``_build_group_part``): one pod changed in a group of 160 instances builds one
    entry."""
    if vp.cache is None:
        ordered = _ordered(group)
        base = _build_group_part(group.ordinal, ordered, vp)[0]
        return _with_in_flight(base, ordered, vp.in_flight) if _any_in_flight(ordered, vp.in_flight) else base
    last: _GroupRecord | None = vp.cache.view_entries.get(group.ordinal)
    same_group = last is not None and last.group is group
    aligned = same_group
    if same_group:
        layout = last.layout
    elif last is None:
        layout = _layout(group)
    else:
        layout, aligned = _relayout(group, last)
    key = (
        vp.shape,
        tuple([vp.expected(revision, role) for revision, role in layout.pairs]),
        None if vp.routed is None else tuple([vp.routed.get(n, _ABSENT) for n in layout.entry_names]),
    )
    counts = tuple(map(vp.in_flight.get, layout.names)) if vp.in_flight else ()
    if not any(counts):
        counts = ()
    if same_group and last.key == key:
        if last.counts == counts:
            return last.part
        base, shares = last.base, last.shares
    else:
        candidates = _candidates(layout, last, aligned, vp.shape)
        unchanged = _unchanged_reads(layout, key, last) if aligned and candidates is not None else None
        base, shares = _build_group_part(group.ordinal, layout.ordered, vp, layout.entry_names, candidates, unchanged)
    part = _with_counts(base, layout.owner, counts, last) if counts else base
    record = _GroupRecord(group, key, layout, base, shares, counts, part)
    bounded_put(vp.cache.view_entries, GROUPS_LIMIT, group.ordinal, record)
    return part


def _candidates(
    layout: _Layout, last: _GroupRecord | None, aligned: bool, shape: tuple[Any, ...]
) -> list[_InstancePart | None] | None:
    """The shares of the ordinal's last build under the same shape, in ``layout``'s order (None
    where an instance is new): kept as they are when the layout kept the last one's order."""
    if last is None or last.key[0] != shape:
        return None
    if aligned:
        return last.shares  # type: ignore[return-value]
    by_slot = dict(zip([(role, ordinal) for role, ordinal, _, _ in last.layout.ordered], last.shares, strict=True))
    return [by_slot.get((role, ordinal)) for role, ordinal, _, _ in layout.ordered]


class _Unchanged(NamedTuple):
    """What tells, place by place, that a share built from the same pods still holds: the router's
    table of each place's entry pod now and then (None: the router tells nothing, now and then),
    and the (revision, role) pairs whose pods per instance changed."""

    routed_now: tuple[Any, ...] | None
    routed_then: tuple[Any, ...] | None
    changed_pairs: frozenset[tuple[str, str]]


def _unchanged_reads(layout: _Layout, key: tuple[Any, ...], last: _GroupRecord) -> _Unchanged | None:
    """``_Unchanged`` for a layout that kept ``last``'s order under the same shape; None when the
    router told then and not now, or the reverse (every share is checked on its full key).
    Example: pairs (r1, a), (r2, a) expected 1 and 2 then, (r2, a), (r1, a) expected 3 and 1
    now -> {(r2, a)} changed."""
    routed_now, routed_then = key[2], last.key[2]
    if (routed_now is None) != (routed_then is None):
        return None
    then = dict(zip(last.layout.pairs, last.key[1], strict=True))
    changed = frozenset(pair for pair, n in zip(layout.pairs, key[1], strict=True) if then.get(pair) != n)
    return _Unchanged(routed_now, routed_then, changed)


def _any_in_flight(ordered: list[tuple[str, int, InstanceObs, list[PodObs]]], in_flight: Mapping[str, int]) -> bool:
    """Some pod of the group has a request in flight (a count that is not 0)."""
    return bool(in_flight) and any(in_flight.get(p.name) for _, _, _, pods in ordered for p in pods)


def _with_in_flight(
    base: _GroupPart, ordered: list[tuple[str, int, InstanceObs, list[PodObs]]], in_flight: Mapping[str, int]
) -> _GroupPart:
    """``base`` (built with no request in flight) with each instance's in-flight count: its entries
    copied where the count is not 0, the rest shared."""
    instances = []
    for entry, (_, _, _, pods_sorted) in zip(base.instances, ordered, strict=True):
        n = sum(int(in_flight.get(p.name, 0)) for p in pods_sorted)
        instances.append({**entry, "inFlight": n} if n else entry)
    return base._replace(instances=instances)


def _with_counts(base: _GroupPart, owner: list[int], counts: tuple[Any, ...], last: _GroupRecord | None) -> _GroupPart:
    """``_with_in_flight`` from the counts of the group's pods (``_Layout.names``), walking only
    the pods with a request in flight. ``last``: the group ordinal's last pass, whose copy of the
    same entry with the same count is handed back (the same object: the publisher's delta and the
    trace skip it by identity). Example: counts (None, 2, 0, 1) of pods owned by instances
    (0, 0, 1, 2) -> instance 0 copied with 2, instance 2 with 1, instance 1 shared."""
    busy: dict[int, int] = {}
    for place in compress(range(len(counts)), counts):
        busy[owner[place]] = busy.get(owner[place], 0) + int(counts[place])
    copies: dict[int, dict[str, Any]] = {}
    if last is not None and last.counts:
        # Both lists are alive while this runs: an id met in both is one object.
        copies = {id(b): c for b, c in zip(last.base.instances, last.part.instances, strict=True) if b is not c}
    instances = list(base.instances)
    for place, n in busy.items():
        if n:
            copy = copies.get(id(instances[place]))
            instances[place] = (
                copy if copy is not None and copy["inFlight"] == n else {**instances[place], "inFlight": n}
            )
    return base._replace(instances=instances)


_ABSENT = object()  # the entry pod is not in the router's table


def _build_group_part(
    g: int,
    ordered: list[tuple[str, int, InstanceObs, list[PodObs]]],
    vp: _ViewPass,
    entry_names: list[str | None] | None = None,
    candidates: list[_InstancePart | None] | None = None,
    unchanged: _Unchanged | None = None,
) -> tuple[_GroupPart, list[_InstancePart]]:
    """The group's entries with no request in flight (``_group_part`` adds the counts) and, with a
    cache, each instance's share in order: the candidate at its place (``_candidates``) when it
    was built under the instance's key now (``_share``), or, with ``unchanged``, when it was built
    from the same pods (the same frozen mapping) and neither its entry pod's routing nor its pods
    expected changed (the rest of the key)."""
    shares: list[_InstancePart] = []
    routed_now, routed_then, changed_pairs = unchanged if unchanged is not None else (None, None, frozenset())
    for place, (role, ordinal, inst, pods_sorted) in enumerate(ordered):
        if vp.cache is None or entry_names is None:
            share = _instance_part(g, role, ordinal, inst, pods_sorted, vp.expected(inst.revision, role), vp, None)
        else:
            share = candidates[place] if candidates is not None else None
            if not (
                share is not None
                and unchanged is not None
                and share.pods is inst.pods
                and (routed_now is None or routed_now[place] == routed_then[place])  # type: ignore[index]
                and (not changed_pairs or (inst.revision, role) not in changed_pairs)
            ):
                pods = tuple(inst.pods.values())
                share = _share(g, role, ordinal, inst, pods_sorted, pods, vp, entry_names[place], share)
        shares.append(share)
    instances = [share.entry for share in shares]
    serving: dict[str, tuple[int, int, int]] = {}
    # Counted by (revision run, serving, failed) first (a few kinds among 160 instances), in the
    # order each revision first appears.
    for (runs, is_serving, failed), n in Counter([share.serving for share in shares]).items():
        before = serving.get(runs, (0, 0, 0))
        serving[runs] = (before[0] + n, before[1] + n * is_serving, before[2] + n * failed)
    part = _GroupPart(
        instances,
        instances,
        [share.counted for share in shares if share.counted is not None],
        serving,
        [pod for share in shares if share.draining for pod in share.draining],
    )
    return part, shares


def _share(
    g: int,
    role: str,
    ordinal: int,
    inst: InstanceObs,
    pods_sorted: list[PodObs],
    pods: tuple[PodObs, ...],
    vp: _ViewPass,
    entry_name: str | None,
    candidate: _InstancePart | None,
) -> _InstancePart:
    """The instance's share: ``candidate`` when it was built under the key the instance has now,
    else built now. The key is what a share reads besides the shape and its place: the instance's
    pods in its order (the instance is a function of them; an unchanged pod is the same parse from
    pass to pass, and PodObs compare by identity), the pods expected of it and what the router has
    for its entry pod (``gates.instance_gates`` reads that one)."""
    expected = vp.expected(inst.revision, role)
    table = None if vp.routed is None else (vp.routed.get(entry_name, _ABSENT),)  # type: ignore[arg-type]
    key = (pods, expected, table)
    if candidate is not None and candidate.key == key:
        return candidate
    return _instance_part(g, role, ordinal, inst, pods_sorted, expected, vp, key)


def _instance_part(
    g: int,
    role: str,
    ordinal: int,
    inst: InstanceObs,
    pods_sorted: list[PodObs],
    expected: int,
    vp: _ViewPass,
    key: tuple[Any, ...] | None,
) -> _InstancePart:
    runs = vp.runs(inst, role)
    gates = serving_gates.instance_gates(
        inst, expected, verification_required=vp.verification, pods=pods_sorted, routed=vp.routed, cache=vp.cache
    )
    state = instance_state(inst, expected)
    draining = [(p, role, ordinal) for p in pods_sorted if p.draining]
    entry = {
        "group": g,
        "role": role,
        "ordinal": ordinal,
        "revision": runs,
        "state": state,
        "pods": len(pods_sorted),
        "readyPods": sum(1 for p in pods_sorted if p.ready),
        "surge": g >= vp.replicas or ordinal >= vp.role_replicas.get(role, 0),
        "podUids": [p.uid for p in pods_sorted],
        "draining": len(draining),
        "inFlight": 0,
        "gate": gates.highest,
        "gateFailed": gates.failed,
        "gateTimes": gates.reached,
        "gateWaiting": gates.waiting_json(),
        "address": _entry_address(inst, vp.namespace),
        "digest": _entry_digest(inst),
    }
    counted = ((g, role, ordinal), gates) if _counted(g, role, ordinal, state, vp.replicas, vp.role_replicas) else None
    return _InstancePart(key, inst.pods, entry, counted, (runs, gates.serving, gates.failed is not None), draining)


def _entry_digest(inst: InstanceObs) -> str | None:
    """The digest the entry pod's first container runs (``status.containerStatuses[].imageID``
    after ``@``: ``sha256:...``); None before it was pulled."""
    entry = inst.pods.get(0)
    return entry.digest if entry is not None else None


def _entry_address(inst: InstanceObs, namespace: str) -> str | None:
    """The DNS name of the instance's entry pod (``network``): ``chat-1-prefill-0-0.chat-pods.llm.svc``;
    None without an entry pod, or for a pod created without hostname and subdomain."""
    entry = inst.pods.get(0)
    if entry is None:
        return None
    spec = entry.raw.get("spec") or {}
    hostname, subdomain = spec.get("hostname"), spec.get("subdomain")
    if not hostname or not subdomain:
        return None
    return f"{hostname}.{subdomain}.{namespace}.svc"


def _canary_view(canary: dict[str, Any] | None, ms: ModelServing | None, now: float) -> dict[str, Any] | None:
    """The canary as the page shows it: the steps with the current one, the time left in a timed
    pause and, once it is up, what the pause still waits for (``evidence.pause_hold``: "waiting
    for 1 passing window since this step began (0 so far)"), the phase, the recent analysis
    windows, the counts of the evidence rules and the pause the analysis set (``analysisPause``:
    ``{reason, message}``, the shortfall in words)."""
    if not canary or ms is None or ms.canary is None:
        return None
    steps = [step.to_json() for step in ms.canary.steps]
    index = int(canary.get("stepIndex") or 0)
    analysis = ms.canary.analysis
    left = None
    waiting_for = None
    if index < len(ms.canary.steps) and canary.get("phase") == "Paused":
        seconds = ms.canary.steps[index].pause_seconds
        if seconds is not None:
            started_at = canary.get("stepStartedAt", now)
            left = max(round(started_at + seconds - now, 3), 0.0)
            if left == 0 and analysis is not None and not canary.get("analysisPause"):
                waiting_for = pause_hold(now, started_at, seconds, canary, analysis.min_pass_windows)
    return {
        "revision": canary.get("revision"),
        "stable": canary.get("stable"),
        "stepIndex": index,
        "stepStartedAt": canary.get("stepStartedAt"),
        "steps": steps,
        "phase": canary.get("phase"),
        "pauseSecondsLeft": left,
        "failures": canary.get("failures", 0),
        "message": canary.get("message"),
        "windows": canary.get("windows") or [],
        "analysis": analysis is not None,
        "waitingFor": waiting_for,
        "inconclusive": canary.get("inconclusive", 0),
        "passed": canary.get("passed", 0),
        "analysisPause": canary.get("analysisPause"),
        # setWeight steps (absent without any): the weight, why it sends nothing yet, and the share
        # of new requests the update revision actually got in the windows of this step.
        **_weight_view(canary),
        "limits": None
        if analysis is None
        else {
            "failureLimit": analysis.failure_limit,
            "inconclusiveLimit": analysis.inconclusive_limit,
            "minPassWindows": analysis.min_pass_windows,
            "minRequests": analysis.min_requests,
        },
    }


def _weight_view(canary: dict[str, Any]) -> dict[str, Any]:
    """``weight``, ``weightMessage`` and ``observedWeight`` for a canary with setWeight steps (empty
    otherwise): the observed split counts the requests that started in the analysis windows run
    wholly at the weight in force (from ``weightSince``), from the request records:
    ``{percent, canary, total, windows}``, None before such a window has requests."""
    if canary.get("weight") is None:
        return {}
    return {
        "weight": canary["weight"],
        "weightMessage": canary.get("weightMessage"),
        "observedWeight": observed_weight(canary.get("windows") or [], canary.get("weightSince")),
    }


def observed_weight(windows: list[dict[str, Any]], since: float | None) -> dict[str, Any] | None:
    """The share of requests the canary revision got in ``windows`` that started at or after ``since``.

    Example: windows whose figures started 9 canary / 91 stable and 11 / 89 -> 10.0 (20 of 200)."""
    chosen = [w for w in windows if since is None or float(w.get("start") or 0) >= since]
    canary = total = 0
    for w in chosen:
        figures = w.get("figures") or {}
        c = _started(figures.get("canary"))
        canary += c
        total += c + _started(figures.get("stable"))
    if total == 0:
        return None
    return {"percent": round(100.0 * canary / total, 1), "canary": canary, "total": total, "windows": len(chosen)}


def _started(figures: dict[str, Any] | None) -> int:
    figures = figures or {}
    value = figures.get("started", figures.get("requests"))
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _groups(
    status: dict[str, Any],
    idle: dict[int, list[dict[str, Any]]],
    observed_groups: Mapping[int, GroupObs],
    replicas: int,
    role_replicas: dict[str, int],
    update_revision: str | None,
    cache: PassCache | None = None,
) -> list[dict[str, Any]]:
    """Per-group, per-role counts for the dashboard, from the instances (``idle``: each group's
    entries with no request in flight; a row reads no count), as status keeps only a compact
    summary per group so that 1,000 groups fit in one object. A group's row is memoised on its
    GroupObs with the entries and the status record it was made from: the same entries
    (``_group_part`` handed back its memo, under the same shape, whatever the counts) and an equal
    record give the same row."""
    recorded = {g.get("ordinal"): g for g in status.get("groups") or []}
    out = []
    for o in sorted(set(range(replicas)) | set(idle)):
        members = idle.get(o, [])
        rec = recorded.get(o) or {}
        group = observed_groups.get(o)
        holder = cache.memo_of(group) if cache is not None and group is not None else None
        memo = holder.view_row if holder is not None else None
        if memo is not None and memo[0] is members and memo[1] == rec:
            out.append(memo[2])
            continue
        row = _group_row(o, members, rec, replicas, role_replicas, update_revision)
        if holder is not None:
            holder.view_row = (members, rec, row)
        out.append(row)
    return out


def _group_row(
    o: int,
    members: list[dict[str, Any]],
    rec: dict[str, Any],
    replicas: int,
    role_replicas: dict[str, int],
    update_revision: str | None,
) -> dict[str, Any]:
    in_spec = o < replicas
    # One walk over the group's instances: per role, the counts of all its instances and of those
    # within the desired range.
    tallies = {role: [0, 0, 0, 0, {}] for role in role_replicas}  # ready, updated, surge, draining, revisions
    for i in members:
        tally = tallies.get(i["role"])
        if tally is None:
            continue
        if in_spec and i["ordinal"] < role_replicas[i["role"]]:
            tally[0] += i["state"] == STATE_READY
            tally[1] += i["revision"] == update_revision
        tally[2] += bool(i["surge"])
        tally[3] += bool(i["draining"])
        tally[4][i["revision"]] = tally[4].get(i["revision"], 0) + 1
    roles = [
        {
            "name": role,
            "desired": desired if in_spec else 0,
            "ready": ready,
            "updated": updated,
            "unavailable": (desired - ready) if in_spec else 0,
            "surge": surge,
            "draining": draining,
            "revisions": revisions,
        }
        for (role, desired), (ready, updated, surge, draining, revisions) in zip(
            role_replicas.items(), tallies.values()
        )
    ]
    return {
        "ordinal": o,
        "revision": rec.get("revision") or (members[0]["revision"] if members else None),
        "targetRevision": rec.get("targetRevision") or rec.get("revision"),
        "phase": rec.get("phase") or ("Missing" if not members else "Unknown"),
        "ready": bool(rec.get("ready")),
        "updated": bool(rec.get("updated")),
        "surge": o >= replicas,
        "roles": roles,
    }


def expand_waiting(waiting: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Status keeps blocked reasons grouped; consumers get one entry per group and role."""
    out = []
    for w in waiting:
        for group in w.get("groups") or [None]:
            out.append({"group": group, "role": w.get("role"), "reason": w.get("reason"), "kind": w.get("kind")})
    out.sort(key=lambda b: (b["group"] is None, b["group"] if b["group"] is not None else -1, b["role"] or ""))
    return out
