"""The status a pass writes: Kthena's fields plus per-group and per-role detail.

It describes the cluster as observed at the start of the pass (not what the pass's actions will
do), so it is always true. It also persists what recovery needs after a restart: the revision every
group and every off-update instance runs (``groups[].revision``, ``targetRevision``,
``instanceRevisions``) and the set of revisions GC must keep (``referencedRevisions``).

Compact on purpose (1,000 groups must fit in one object): per group only the roles that are not
simply done and the instances that run something else than the group; blocked reasons grouped.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .. import naming, phases
from ..observe import GroupObs
from ..plan import BECAUSE_UPDATE, KIND_PARTITION, KIND_REVISION, STUCK_KINDS, Blocked
from .builder import PlanBuilder
from .canary import ACTIVE as CANARY_ACTIVE
from .canary import PAUSED as CANARY_PAUSED
from .context import PassContext, is_group_level

_ROLE_COUNTS = ("desired", "ready", "updated", "unavailable", "surge", "draining")


@dataclass(slots=True)
class _Totals:
    """What the per-group walk adds up for the whole ModelServing."""

    roles: dict[str, dict[str, Any]]
    referenced: set[str]
    group_level: bool
    group_partition: int  # the group-level partition (0 under role-level strategies)
    role_partitions: dict[str, int]
    converged: bool = True
    updated_groups: int = 0
    available_groups: int = 0
    non_updated_revisions: dict[str, int] = field(default_factory=dict)
    # The group whose coordinated roles are furthest apart: (skew, limit, group), or None.
    worst_skew: tuple[Fraction, Fraction, int] | None = None


def build_status(ctx: PassContext, out: PlanBuilder) -> dict[str, Any]:
    ms = ctx.ms
    replicas = ms.replicas
    totals = _Totals(
        roles={
            r.name: {"name": r.name, "updatedReady": 0, "eligible": 0} | dict.fromkeys(_ROLE_COUNTS, 0)
            for r in ms.roles
        },
        referenced={ctx.update_hash, ctx.current_hash},
        group_level=is_group_level(ctx),
        group_partition=ctx.strategy.group.partition.count if is_group_level(ctx) else 0,
        role_partitions={name: b.partition.count for name, b in ctx.strategy.roles.items()},
    )
    groups_out = _group_entries(ctx, out, totals)
    if ctx.observed.foreign:
        totals.converged = False
    current = _current_revision(ctx, totals)
    totals.referenced.add(current)
    progress = _progress(ctx, totals)
    first_role = ms.roles[0].name if ms.roles else ""
    status = {
        "observedGeneration": ms.generation,
        "replicas": sum(1 for g in ctx.observed.groups.values() if g.instances),
        "currentReplicas": replicas - totals.updated_groups,
        "updatedReplicas": totals.updated_groups,
        "availableReplicas": totals.available_groups,
        "currentRevision": current,
        "updateRevision": ctx.update_hash,
        "collisionCount": ctx.update.collision_count,
        "labelSelector": (
            f"{naming.LABEL_NAME}={ms.name},{naming.LABEL_ENTRY}=true,"
            f"{naming.LABEL_ROLE}={first_role},{naming.LABEL_ROLE_ORDINAL}=0"
        ),
        "conditions": _conditions(ctx, out, totals, groups_out, progress),
        "phase": _phase(ctx, out, totals, groups_out, progress),
        "converged": totals.converged,
        "paused": ms.paused,
        "strategy": ctx.strategy.to_json(),
        "groups": groups_out,
        "roles": _roles_summary(totals),
        # Role replicas at the time of writing: recovery tells "lost" from "not yet scaled up".
        "roleReplicas": {r.name: r.replicas for r in ms.roles},
        "waiting": _grouped_waiting(out.blocked),
        "progress": progress.to_json(),
        "referencedRevisions": sorted(r for r in totals.referenced if r),
    } | _skew_entry(ctx, totals, rolling=current != ctx.update_hash)
    if out.canary is not None and out.canary.status is not None:
        status["canary"] = out.canary.status
    return status


# What one group's entry adds to the totals, as a value (below): per role the counts in _COUNTED
# order, the revisions it references, and its part of converged / updated / available / the
# non-updated revisions. Interned, so the many groups that add the same (every group Ready on the
# update revision, say) are counted per distinct effect and added up once at the end.
_COUNTED = ("updatedReady", "eligible", *_ROLE_COUNTS)


def _group_entries(ctx: PassContext, out: PlanBuilder, totals: _Totals) -> list[dict[str, Any]]:
    """Every group's status entry, in ordinal order, with its counts added to ``totals``.

    A group's entry and effect depend on its pods (its GroupObs, reused while they are the same
    parses), on the pass's shape (spec, revisions, budgets: ``pass_key``) and on its revision and
    place (surge, within the partition); not, for a group without removals or recorded
    off-group instances, on anything else. Such a group whose GroupObs and key are unchanged since
    the last pass takes that pass's entry and effect (1,000 groups x 4 roles: ~5 of ~8 ms)."""
    ms = ctx.ms
    pass_key = _status_key(ctx, totals)
    # Groups whose entry reads this pass's removals or the recorded instance revisions: computed.
    busy = {key[0] for key in out.instance_removals} | {key[0] for key in ctx.recorded.instance_revision}
    busy.update(out.group_removals)
    effects: dict[tuple[Any, ...], int] = {}
    entries = []
    groups = ctx.observed.groups
    for o in sorted(set(groups) | set(range(ms.replicas))):
        group = groups.get(o)
        key = None
        memo = None
        if pass_key is not None and group is not None and group.instances and o not in busy:
            key = (pass_key, ctx.group_revisions.get(o), o >= ms.replicas, o >= totals.group_partition)
            memo = ctx.memos[o]  # a pass key needs a cache: every observed group has its memo
            hit = memo.status_entry
            if hit is not None and hit[0] == key:
                _, entry, effect, skew = hit
                effects[effect] = effects.get(effect, 0) + 1
                if skew is not None:  # coordinated roles only
                    _add_skew(totals, skew, o)
                entries.append(dict(entry))  # the entry's own dict: status is written and kept
                continue
        scratch = _Totals(
            roles={name: dict.fromkeys(_COUNTED, 0) for name in totals.roles},
            referenced=set(),
            group_level=totals.group_level,
            group_partition=totals.group_partition,
            role_partitions=totals.role_partitions,
        )
        entry = _group_entry(ctx, out, o, scratch)
        effect = (
            tuple((name, tuple(c[f] for f in _COUNTED)) for name, c in scratch.roles.items()),
            frozenset(scratch.referenced),
            scratch.converged,
            scratch.updated_groups,
            scratch.available_groups,
            tuple(scratch.non_updated_revisions.items()),
        )
        effect = effect if ctx.cache is None else ctx.cache.effects(effect)
        skew = scratch.worst_skew[:2] if scratch.worst_skew is not None else None
        effects[effect] = effects.get(effect, 0) + 1
        _add_skew(totals, skew, o)
        if memo is not None:
            memo.status_entry = (key, entry, effect, skew)
            entries.append(dict(entry))
        else:
            entries.append(entry)
    for effect, times in effects.items():
        role_counts, referenced, converged, updated, available, non_updated = effect
        for name, counts in role_counts:
            tot = totals.roles[name]
            for f, n in zip(_COUNTED, counts, strict=True):
                tot[f] += n * times
        totals.referenced.update(referenced)
        totals.converged = totals.converged and converged
        totals.updated_groups += updated * times
        totals.available_groups += available * times
        for rev, n in non_updated:
            totals.non_updated_revisions[rev] = totals.non_updated_revisions.get(rev, 0) + n * times
    return entries


def _add_skew(totals: _Totals, skew: tuple[Fraction, Fraction] | None, o: int) -> None:
    # The first group (in ordinal order) with the widest skew, as the walk found it.
    if skew is not None and (totals.worst_skew is None or skew[0] > totals.worst_skew[0]):
        totals.worst_skew = (skew[0], skew[1], o)


def _status_key(ctx: PassContext, totals: _Totals) -> tuple[Any, ...] | None:
    """What a group's entry reads of the pass besides the group itself, its revision and place:
    the availability shape (None under verification: nothing memoised), the spec's roles and
    replicas, the strategy's level and partitions, the update revision with its role hashes and
    equivalents, and the coordination. Interned in the cache, so a memo's key compares its first
    element by identity; None without a cache (nothing memoised)."""
    if ctx.shape is None or ctx.cache is None:
        return None
    coordination = ctx.ms.strategy.coordination
    key = (
        ctx.shape,
        tuple((r.name, r.replicas) for r in ctx.ms.roles),
        ctx.ms.replicas,
        totals.group_level,
        totals.group_partition,
        tuple(totals.role_partitions.items()),
        ctx.update_hash,
        tuple(sorted(ctx.update_role_hashes.items())),
        tuple(sorted(ctx.equivalent)),
        None if coordination is None else (coordination.max_skew_percent, tuple(sorted(coordination.roles))),
    )
    return ctx.cache.status_keys(key)


def _skew_entry(ctx: PassContext, totals: _Totals, *, rolling: bool) -> dict[str, Any]:
    """``skew``, only under coordination: the widest gap in Ready progress between the coordinated
    roles of one group, with the group, maxSkew and the lead the start quotas allow at that
    baseline (percentages). The charts draw it against maxSkew; see ``_coordinated_skew``. While no
    rollout runs (current = update revision: the first bring-up, or converged) no quota applies
    (creating missing instances is not a replacement) and the figure is 0."""
    coordination = ctx.ms.strategy.coordination
    if coordination is None or totals.group_level:
        return {}
    worst = totals.worst_skew if rolling else None
    skew, limit, group = worst or (Fraction(0), Fraction(coordination.max_skew_percent, 100), None)
    return {
        "skew": {
            "percent": round(float(skew) * 100, 2),
            "group": group,
            "maxSkewPercent": coordination.max_skew_percent,
            "limitPercent": round(float(limit) * 100, 2),
        }
    }


def _coordinated_skew(ready: dict[str, tuple[int, int]], max_skew: Fraction) -> tuple[Fraction, Fraction]:
    """The skew of one group as the planner counts it, and the lead its start quotas allow.

    ``ready``: per coordinated role, (instances on the update template and Ready at or above the
    role's partition, eligible instances = replicas - partition); roles with nothing eligible are
    left out. Skew = highest Ready progress - lowest, among the roles still rolling (not all Ready
    on the update template): a role that is done, or whose template did not change, is held back
    by no quota and leads nobody. The planner lets a role start
    ``ceil(min(1, baseline + maxSkew) * T)`` replacements (``budgets.skew_quota``; baseline = the
    lowest Ready progress of the roles not done), so a role may lead the baseline by that quota's
    share, which rounding up can put above maxSkew: limit = max over roles of quota / T - baseline.

    Example: prefill 1 of 4 Ready, decode 0 of 3, maxSkew 10%: skew 25%; baseline 0, quotas
    ceil(0.1 * 4) = 1 of 4 (25%) and ceil(0.1 * 3) = 1 of 3 (33.33%): limit 33.33%, so the 25% gap
    is within what the planner allows although it is above maxSkew (one instance is the least step).
    """
    fractions = [Fraction(r, t) for r, t in ready.values() if t > 0 and r < t]
    if not fractions:
        return Fraction(0), max_skew
    baseline = min(fractions)
    limit = max(
        Fraction(min(t, math.ceil(min(Fraction(1), baseline + max_skew) * t)), t) - baseline
        for _, t in ready.values()
        if t > 0
    )
    return max(fractions) - min(fractions), limit


def recorded_group_revision(ctx: PassContext, out: PlanBuilder, ordinal: int) -> str:
    """What status records for a group: a group being replaced is recorded on the update revision,
    so a restart mid-replacement (or a pause) rebuilds it as the update intended."""
    removal = out.group_removals.get(ordinal)
    if removal is not None and removal.reason == BECAUSE_UPDATE:
        return ctx.update_hash
    return ctx.group_revisions.get(ordinal, ctx.update_hash)


def _group_entry(ctx: PassContext, out: PlanBuilder, o: int, totals: _Totals) -> dict[str, Any]:
    """Group ``o``'s status entry, its counts added to ``totals``, in named steps: the revision it
    runs and is rebuilt on, the walk over its roles' instances, the group's part of the totals
    (updated, available, converged, skew) and the entry itself."""
    group = ctx.observed.groups.get(o)
    present = group is not None and bool(group.instances)
    rev, target_rev = _entry_revisions(ctx, out, o, totals, group if present else None)
    available = ctx.group_is_available(group) and not (group is not None and group.being_removed)
    walk = _walk_roles(ctx, _GroupScope.of(ctx, out, o, group, rev, totals), totals)
    group_updated = _add_group_outcome(ctx, o, group, rev, walk, totals, available=available)
    return _entry_of(o, ctx.ms.replicas, rev, target_rev, group, available, group_updated, walk)


def _entry_revisions(
    ctx: PassContext, out: PlanBuilder, o: int, totals: _Totals, group: GroupObs | None
) -> tuple[str, str | None]:
    """(the revision the group runs, the one it is rebuilt on under a group-level strategy), both
    added to the referenced revisions with every revision its pods run. ``group``: None when absent.

    Group-level, the group runs its recorded revision (the update's when none is recorded);
    role-level, the revision its instances agree on (the update's when the group is missing)."""
    target_rev = None
    if totals.group_level:
        rev = ctx.group_revisions.get(o) or ctx.update_hash
        target_rev = recorded_group_revision(ctx, out, o)
        totals.referenced.add(target_rev)
    else:
        rev = group.revision if group is not None else ctx.update_hash
    if group is not None:
        totals.referenced.update(group.revisions())
    return rev, target_rev


@dataclass(slots=True)
class _GroupScope:
    """What the walk over one group's instances reads, looked up once per group: the walk is a hot
    path (1,000 groups x 4 roles of instances on a pass whose groups are not memoised)."""

    o: int
    rev: str
    instances: dict[tuple[str, int], Any]
    surge: bool  # a surge group: no role desires instances in it
    group_level: bool
    group_partition: int
    rev_updated: bool  # the group's revision is (equivalent to) the update revision
    available_of: dict[tuple[int, str, int], bool]
    equivalent: frozenset[str] | set[str]
    target_hashes: dict[str, str]
    removals: dict[tuple[int, str, int], Any]
    recorded_instances: dict[tuple[int, str, int], str]
    referenced: set[str]  # totals.referenced: a missing instance's recorded revision is kept

    @staticmethod
    def of(ctx: PassContext, out: PlanBuilder, o: int, group: GroupObs | None, rev: str, t: _Totals) -> _GroupScope:
        return _GroupScope(
            o,
            rev,
            group.instances if group is not None else {},
            o >= ctx.ms.replicas,
            t.group_level,
            t.group_partition,
            rev in ctx.equivalent,
            ctx.instance_available,
            ctx.equivalent,
            ctx.update_role_hashes,
            out.instance_removals,
            ctx.recorded.instance_revision,
            t.referenced,
        )


@dataclass(slots=True)
class _GroupWalk:
    """What the walk over a group's roles found, besides the counts it added to the totals."""

    updated: bool = True  # every instance at or above its role's partition on the update
    converged: bool = True  # this group's part of totals.converged
    notable: list[dict[str, Any]] = field(default_factory=list)  # the roles' counts the entry lists
    instance_revisions: dict[str, str] = field(default_factory=dict)  # "role/k" -> revision
    coordinated_ready: dict[str, tuple[int, int]] = field(default_factory=dict)
    coordination: Any = None  # the strategy's coordination, when it applies to this group


def _walk_roles(ctx: PassContext, scope: _GroupScope, totals: _Totals) -> _GroupWalk:
    """Every spec role's instances in the group counted into ``totals.roles``; the rest in the walk.

    Example: role decode (2 replicas) with instance 0 Ready on the update and instance 1 missing:
    desired 2, ready 1, updated 1, unavailable 1: listed in the entry (not simply done), and the
    group is neither converged nor (if 1 is at or above the partition) updated."""
    coordination = ctx.ms.strategy.coordination if not scope.group_level and not scope.surge else None
    walk = _GroupWalk(True, True, [], {}, {}, coordination)
    extras = _extra_instances(scope, ctx.role_sizes)
    converged = updated = True  # in locals while the roles are walked (4 a group, 1,000 groups)
    for role in ctx.ms.roles:
        name = role.name
        role_partition = 0 if scope.group_level else totals.role_partitions[name]
        counts, revisions, instance_revisions, role_converged, role_updated = _count_role(scope, role, role_partition)
        desired, ready_n, updated_n, unavailable_n, draining_n, updated_ready_n, eligible_n = counts
        extra = extras.get(name, 0)
        converged = converged and role_converged and not extra
        updated = updated and role_updated
        # The entry lists only the roles that are not simply done: the others' counts go to the
        # totals alone, without a dict per role (4,000 a pass at 1,000 groups x 4 roles).
        if unavailable_n or extra or draining_n or len(revisions) > 1:
            walk.notable.append(_role_counts(name, counts, extra, revisions))
        if instance_revisions:
            for k, r in instance_revisions.items():
                walk.instance_revisions[f"{name}/{k}"] = r
        if coordination is not None and name in coordination.roles:
            walk.coordinated_ready[name] = _coordinated_ready(ctx, scope, role, role_partition)
        tot = totals.roles[name]
        tot["updatedReady"] += updated_ready_n
        tot["eligible"] += eligible_n
        tot["desired"] += desired
        tot["ready"] += ready_n
        tot["updated"] += updated_n
        tot["unavailable"] += unavailable_n
        tot["surge"] += extra
        tot["draining"] += draining_n
    walk.converged, walk.updated = converged, updated
    return walk


def _extra_instances(scope: _GroupScope, role_sizes: dict[str, int]) -> dict[str, int]:
    """Per role, the group's instances beyond the spec's replicas (all of them in a surge group)."""
    extras: dict[str, int] = {}
    surge = scope.surge
    for r, k in scope.instances:
        if k >= (0 if surge else role_sizes.get(r, 0)):  # ctx.role_replicas, inlined
            extras[r] = extras.get(r, 0) + 1
    return extras


def _count_role(
    scope: _GroupScope, role: Any, role_partition: int
) -> tuple[tuple[int, ...], dict[str, int], dict[str, str], bool, bool]:
    """One role's desired instances in the group: (desired, ready, updated, unavailable, draining,
    updated and Ready, eligible), the revisions they run, the instances to list (k -> revision),
    converged, updated. Counted in locals (4,000 instances per pass at 1,000 groups)."""
    name, o, rev, instances, group_level = role.name, scope.o, scope.rev, scope.instances, scope.group_level
    equivalent, available_of, target_hash = scope.equivalent, scope.available_of, scope.target_hashes.get(name)
    desired = 0 if scope.surge else role.replicas
    ready_n = updated_n = unavailable_n = draining_n = updated_ready_n = eligible_n = 0
    instance_revisions: dict[str, str] = {}
    revisions: dict[str, int] = {}
    converged = role_updated = True
    for k in range(desired):
        inst = instances.get((name, k))
        if inst is None:
            unavailable_n += 1
            converged = False
            kept = scope.recorded_instances.get((o, name, k))
            if kept and kept not in equivalent and kept != rev:
                instance_revisions[str(k)] = kept  # still needed to rebuild it
                scope.referenced.add(kept)
            role_updated = role_updated and (group_level or k < role_partition)
            continue
        ready = available_of[(o, name, k)]
        # ctx.instance_updated, inlined
        updated = scope.rev_updated if group_level else (inst.role_hash == target_hash or inst.revision in equivalent)
        revisions[inst.revision] = revisions.get(inst.revision, 0) + 1
        if ready:
            ready_n += 1
        else:
            unavailable_n += 1
        if updated:
            updated_n += 1
            if ready:
                updated_ready_n += 1
        else:
            role_updated = False
            if inst.revision != rev and _listed_apart(scope, name, k):
                instance_revisions[str(k)] = inst.revision
        if inst.draining:
            draining_n += 1
        if (o >= scope.group_partition) if group_level else (k >= role_partition):  # eligible
            eligible_n += 1
            converged = converged and updated
        if not ready or inst.deleting or inst.draining:
            converged = False
    counts = (desired, ready_n, updated_n, unavailable_n, draining_n, updated_ready_n, eligible_n)
    return counts, revisions, instance_revisions, converged, role_updated


def _listed_apart(scope: _GroupScope, name: str, k: int) -> bool:
    """Whether an instance on another revision than its group's is listed in the entry: not while
    this pass removes it for the update (it is rebuilt on the group's revision)."""
    removal = scope.removals.get((scope.o, name, k))
    return removal is None or removal.reason != BECAUSE_UPDATE


def _role_counts(name: str, counts: tuple[int, ...], extra: int, revisions: dict[str, int]) -> dict[str, Any]:
    """The entry's line for a role that is not simply done; the revisions when more than one runs."""
    desired, ready_n, updated_n, unavailable_n, draining_n, _, _ = counts
    line: dict[str, Any] = {
        "name": name,
        "desired": desired,
        "ready": ready_n,
        "updated": updated_n,
        "unavailable": unavailable_n,
        "surge": extra,
        "draining": draining_n,
    }
    if len(revisions) > 1:
        line["revisions"] = revisions
    return line


def _coordinated_ready(ctx: PassContext, scope: _GroupScope, role: Any, role_partition: int) -> tuple[int, int]:
    """(instances Ready on the update at or above the partition, eligible instances) of a
    coordinated role, as ``_coordinated_skew`` reads them."""
    eligible_ks = range(min(role_partition, role.replicas), role.replicas)
    name, o, instances, available_of = role.name, scope.o, scope.instances, scope.available_of
    target, equivalent = scope.target_hashes.get(name), scope.equivalent
    ready_eligible = 0
    for k in eligible_ks:
        inst = instances.get((name, k))
        # ctx.available and ctx.instance_updated, inlined: 100 instances of a role in the seed example.
        if (
            inst is not None
            and available_of[(o, name, k)]
            and (inst.role_hash == target or inst.revision in equivalent)
        ):
            ready_eligible += 1
    return ready_eligible, len(eligible_ks)


def _add_group_outcome(
    ctx: PassContext, o: int, group: GroupObs | None, rev: str, walk: _GroupWalk, totals: _Totals, *, available: bool
) -> bool:
    """The group's part of the totals (converged, widest skew, updated or not, available); returns
    whether the group counts as updated.

    A Ready surge group counts as available, as a surge pod counts in a Deployment's
    availableReplicas and a running surge group in Kthena's (it has no surge identity, only the
    Running state): it serves traffic, and the planner keeps its floor with it. Example: 4 groups,
    maxSurge 1, surge group 4 Ready while group 3 is replaced -> 4 available, not 3."""
    group_updated = walk.updated
    if not walk.converged:
        totals.converged = False
    if walk.coordination is not None:
        max_skew = Fraction(walk.coordination.max_skew_percent, 100)
        skew, limit = _coordinated_skew(walk.coordinated_ready, max_skew)
        if totals.worst_skew is None or skew > totals.worst_skew[0]:
            totals.worst_skew = (skew, limit, o)
    if group is not None and group.instances and any(r not in ctx.role_sizes for r, _ in group.instances):
        totals.converged = False  # instances of a role that left the spec
        group_updated = False
    if totals.group_level:
        group_updated = rev in ctx.equivalent
        totals.referenced.add(rev)
    if o >= ctx.ms.replicas:  # a surge group
        totals.converged = False
    elif group_updated and group is not None:
        totals.updated_groups += 1
    elif group is not None:
        totals.non_updated_revisions[rev] = totals.non_updated_revisions.get(rev, 0) + 1
    if available:
        totals.available_groups += 1
    return group_updated


def _entry_of(
    o: int,
    replicas: int,
    rev: str,
    target_rev: str | None,
    group: GroupObs | None,
    available: bool,
    group_updated: bool,
    walk: _GroupWalk,
) -> dict[str, Any]:
    """What the group runs (or is rebuilt on when missing), what it is rebuilt on if all its pods go
    when that differs (the update revision once its replacement started), the roles that are not
    simply done, and the revision of every instance that runs something else than the group."""
    entry: dict[str, Any] = {
        "ordinal": o,
        "revision": rev,
        "phase": _group_phase(group, available),
        "ready": available,
        "updated": group_updated,
    }
    if target_rev and target_rev != rev:
        entry["targetRevision"] = target_rev
    if o >= replicas:
        entry["surge"] = True
    if walk.notable:
        entry["roles"] = walk.notable
    if walk.instance_revisions:  # only instances whose revision differs from the group's
        entry["instanceRevisions"] = walk.instance_revisions
    return entry


@dataclass(frozen=True, slots=True)
class Progress:
    """When the rollout last moved, and whether it has been still for longer than
    ``spec.progressDeadlineSeconds`` (as a Deployment's ``ProgressDeadlineExceeded``)."""

    signature: str  # what counts as progress: the counts below, hashed
    last_progress_time: float
    deadline_seconds: int
    exceeded: bool
    seconds_left: float | None  # until the deadline passes; None when no deadline runs

    def to_json(self) -> dict[str, Any]:
        return {"signature": self.signature, "lastProgressTime": self.last_progress_time}


def _progress(ctx: PassContext, totals: _Totals) -> Progress:
    """Progress is any change in what has moved to the update revision or become Ready: the update
    revision, updated and available groups, and per role the instances updated, Ready, and both.
    A paused or complete rollout runs no deadline; resuming starts the clock afresh.

    Example: deadline 600 s, the last instance became Ready at t=1000 and nothing changed since:
    at t=1599 the rollout is still Progressing (1 s left), at t=1600 the deadline is exceeded.
    """
    counts = ",".join(f"{n}={r['updated']}/{r['ready']}/{r['updatedReady']}" for n, r in totals.roles.items())
    text = f"{ctx.update_hash}|{totals.updated_groups}|{totals.available_groups}|{counts}"
    signature = hashlib.sha256(text.encode()).hexdigest()[:16]
    prev = ctx.prev_status.get("progress") or {}
    last = prev.get("lastProgressTime")
    resumed = bool(ctx.prev_status.get("paused")) and not ctx.ms.paused
    if prev.get("signature") != signature or not isinstance(last, (int, float)) or resumed or ctx.ms.paused:
        last = ctx.now
    deadline = ctx.ms.progress_deadline_seconds
    running = not ctx.ms.paused and not totals.converged
    left = float(last) + deadline - ctx.now if running else None
    return Progress(signature, float(last), deadline, left is not None and left <= 0, left)


def _group_phase(group: GroupObs | None, available: bool) -> str:
    if group is None or not group.instances:
        return "Missing"
    if group.being_removed:
        return "Deleting" if group.deleting else "Draining"
    if available:
        return "Ready"
    instances = group.instances.values()
    if any(inst.lost or inst.failing for inst in instances):
        return "Failed"
    if any(inst.updating_in_place for inst in instances):
        return "Updating"
    if any(inst.unschedulable for inst in instances):
        return "Pending"
    return "Creating"


def _current_revision(ctx: PassContext, totals: _Totals) -> str:
    """currentRevision follows StatefulSets: it becomes the update revision once every group runs
    it; until then it keeps its value while a non-updated group still uses it (else the revision
    most non-updated groups run)."""
    replicas = ctx.ms.replicas
    existing_groups = sum(1 for o, g in ctx.observed.groups.items() if o < replicas and g.instances)
    if totals.updated_groups == replicas and existing_groups == replicas:
        return ctx.update_hash
    others = totals.non_updated_revisions
    if ctx.current_hash in others or not others:
        return ctx.current_hash
    return max(sorted(others), key=lambda r: others[r])


def _condition(
    prev: dict[str, dict[str, Any]], ctype: str, status: bool, reason: str, message: str, now: float
) -> dict:
    value = "True" if status else "False"
    old = prev.get(ctype)
    since = old.get("lastTransitionTime") if old and old.get("status") == value else now
    return {"type": ctype, "status": value, "reason": reason, "message": message, "lastTransitionTime": since}


def _conditions(
    ctx: PassContext, out: PlanBuilder, totals: _Totals, groups_out: list[dict[str, Any]], progress: Progress
) -> list[dict]:
    """The ModelServing's conditions, in this order: Available, Progressing, UpdateInProgress, then
    the analysis's and an unreadable revision's when they apply."""
    prev = {c.get("type"): c for c in ctx.prev_status.get("conditions") or [] if isinstance(c, dict)}
    now = ctx.now
    conditions = [
        _condition(prev, "Available", *_available(ctx, totals, groups_out), now),
        _condition(prev, "Progressing", *_progressing(ctx, totals, progress), now),
        _condition(prev, "UpdateInProgress", *_update_in_progress(ctx, out, totals, groups_out), now),
    ]
    for ctype, message in _raised(out):
        conditions.append(_condition(prev, ctype, True, ctype, message, now))
    return conditions


def _available(ctx: PassContext, totals: _Totals, groups_out: list[dict[str, Any]]) -> tuple[bool, str, str]:
    """Available as for Deployments: the minimum the budget promises is met (a rollout within
    maxUnavailable keeps it True; losing more than the budget allows makes it False).

    Ready surge groups count towards the floor (see _group_entry); "all groups ready" still means
    every ordinal of the spec. Example: 4 groups, maxUnavailable 1, surge group 4 Ready, group 3
    replaced: 4 of 4 available (floor 4 - 1 = 3), 1 of them surge: MinimumGroupsAvailable, not
    AllGroupsReady."""
    replicas = ctx.ms.replicas
    available_groups = totals.available_groups
    floor = replicas - (ctx.strategy.group.max_unavailable.count if is_group_level(ctx) else 0)
    surge_ready = sum(1 for g in groups_out if g.get("surge") and g["ready"])
    if available_groups >= floor:
        all_ready = available_groups - surge_ready >= replicas
        reason = "AllGroupsReady" if all_ready else "MinimumGroupsAvailable"
    else:
        reason = "GroupsUnavailable"
    surge_words = f", {surge_ready} of them surge" if surge_ready else ""
    message = f"{available_groups} of {replicas} ServingGroups available{surge_words} (at least {floor} required)"
    return available_groups >= floor, reason, message


def _progressing(ctx: PassContext, totals: _Totals, progress: Progress) -> tuple[bool, str, str]:
    """Progressing as for Deployments: False when paused, complete, or past progressDeadlineSeconds."""
    if ctx.ms.paused:
        return False, "Paused", "rollout paused by spec.paused"
    if totals.converged:
        return False, "RolloutComplete", f"revision {ctx.update_hash} rolled out"
    if progress.exceeded:
        return (
            False,
            "ProgressDeadlineExceeded",
            f"revision {ctx.update_hash} made no progress within progressDeadlineSeconds "
            f"({progress.deadline_seconds} s)",
        )
    return True, "RollingUpdate", f"rolling out revision {ctx.update_hash}"


def _update_in_progress(
    ctx: PassContext, out: PlanBuilder, totals: _Totals, groups_out: list[dict[str, Any]]
) -> tuple[bool, str, str]:
    """In progress until the last new group is Ready, not only until the last old one is gone; the
    groups a partition keeps on the old revision do not hold it open."""
    replicas = ctx.ms.replicas
    partition = ctx.strategy.group.partition.count if is_group_level(ctx) else 0
    updating = any(b.kind != KIND_PARTITION for b in out.blocked) or not totals.converged
    new_not_ready = any(g["phase"] != "Ready" and not g.get("surge") and g["updated"] for g in groups_out)
    outdated_groups = replicas - totals.updated_groups
    in_progress = updating and not totals.converged and (outdated_groups > partition or new_not_ready)
    message = f"{totals.updated_groups} of {replicas} ServingGroups on revision {ctx.update_hash}"
    return in_progress, "GroupsUpdating" if in_progress else "NoUpdate", message


def _raised(out: PlanBuilder) -> list[tuple[str, str]]:
    """Conditions raised only while they hold, each with its reason as its type: a failed analysis;
    the pause an inconclusive analysis set for want of evidence, with the shortfall, until an
    operator resumes or promotes; a revision the controller cannot read."""
    raised = []
    if out.canary is not None and out.canary.failure:
        raised.append(("AnalysisFailed", out.canary.failure))
    if out.canary is not None and out.canary.inconclusive:
        raised.append(("AnalysisInconclusive", out.canary.inconclusive))
    unreadable = [b for b in out.blocked if b.kind == KIND_REVISION]
    if unreadable:
        raised.append(("RevisionUnreadable", unreadable[0].reason))
    return raised


def _phase(
    ctx: PassContext, out: PlanBuilder, totals: _Totals, groups_out: list[dict[str, Any]], progress: Progress
) -> str:
    if ctx.ms.paused:
        return phases.PAUSED
    if progress.exceeded:
        return phases.DEGRADED
    if any(b.kind in STUCK_KINDS for b in out.blocked):
        return phases.BLOCKED
    if not totals.converged and any(g["phase"] == "Failed" for g in groups_out):
        # Something failed and nothing in this pass is stuck on it: capacity is short.
        return phases.DEGRADED
    if not totals.converged:
        # Replacing, creating, draining or scaling: moving towards the spec (the last group of a
        # rollout being recreated is still progress, not degradation).
        return phases.PROGRESSING
    if totals.available_groups < ctx.ms.replicas:
        return phases.DEGRADED
    canary = out.canary.status if out.canary is not None else None
    if canary and canary.get("phase") in CANARY_ACTIVE and canary.get("revision") == ctx.update_hash:
        # At rest between canary steps is not the end of the rollout (Argo Rollouts: Paused at a
        # pause step, Progressing until the last step): Healthy only once every step is done.
        return phases.PAUSED if canary["phase"] == CANARY_PAUSED else phases.PROGRESSING
    return phases.HEALTHY


def _roles_summary(totals: _Totals) -> list[dict[str, Any]]:
    summary = []
    for tot in totals.roles.values():
        eligible_target = tot.pop("eligible")
        updated_ready = tot.pop("updatedReady")
        tot["progress"] = 1.0 if tot["desired"] == 0 else round(updated_ready / max(tot["desired"], 1), 4)
        tot["eligible"] = eligible_target
        summary.append(tot)
    return summary


def _grouped_waiting(blocked: list[Blocked]) -> list[dict[str, Any]]:
    """Grouped by (reason, kind, role): during a 1,000-group rollout most groups wait for the same
    reason, and status must stay small. The view expands it back to one entry per group."""
    waiting: dict[tuple[str, str, str | None], list[int | None]] = {}
    for b in blocked:
        waiting.setdefault((b.reason, b.kind, b.role), []).append(b.group)
    return [
        {"reason": reason, "kind": kind, "role": role, "groups": groups}
        for (reason, kind, role), groups in waiting.items()
    ]
