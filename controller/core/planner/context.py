"""The frozen context of one planning pass, built once before any decision is taken.

Everything here is derived from the pass's inputs (spec, revision history, observed pods, the status
written by the previous pass, the time): which revision the spec selects, which stored revisions are
the same template, what every group runs or is rebuilt on, which instances and groups are available.
The decision modules read it and never change it; what they decide goes to the ``PlanBuilder``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..gates import verification_passed
from ..intorpercent import IntOrPercent
from ..observe import GroupObs, InstanceObs, Observed
from ..passcache import GroupMemo, PassCache, by_identity
from ..revisions import History, UpdateRevision, canonicalized, record_update_revision, role_data, role_hashes
from ..spec import GROUP_ROLLING, RECREATE_ROLE, ModelServing
from ..strategy import ClusterSettings, EffectiveStrategy, EffectiveValue, resolve

InstanceKey = tuple[int, str, int]  # (group, role, ordinal)


@dataclass(frozen=True, slots=True)
class Recorded:
    """The revision references persisted in status by earlier passes (they survive restarts).

    ``group_revision``: what each group runs (or, once its replacement started, is rebuilt on);
    ``instance_revision``: instances on another revision than their group's; ``desired``: the role
    sizes when status was written, so recovery tells "lost" from "not yet scaled up".
    """

    group_revision: dict[int, str]
    instance_revision: dict[InstanceKey, str]
    desired: dict[int, dict[str, int]]


def recorded_revisions(status: dict[str, Any], cache: PassCache | None = None) -> Recorded:
    """Read the references back: ``groups[].revision`` / ``targetRevision`` per group,
    ``groups[].instanceRevisions`` as ``{"role/ordinal": hash}``; every other instance of a group
    runs the group's revision. ``roleReplicas`` is the role size then (surge groups have none).
    With a cache, a pass that finds the very status object the previous pass read (it wrote nothing
    new: an idle pass, a resync) takes its references without reading 1,000 group entries again
    (~2 ms)."""
    return by_identity(cache, _read_recorded, status)


def _read_recorded(status: dict[str, Any]) -> Recorded:
    groups: dict[int, str] = {}
    instances: dict[InstanceKey, str] = {}
    desired: dict[int, dict[str, int]] = {}
    role_replicas = {k: v for k, v in (status.get("roleReplicas") or {}).items() if isinstance(v, int)}
    for g in status.get("groups") or []:
        try:
            o = int(g.get("ordinal"))
        except (TypeError, ValueError):
            continue
        rev = g.get("targetRevision") or g.get("revision")
        if rev:
            groups[o] = rev
        if role_replicas and not g.get("surge"):
            desired[o] = dict(role_replicas)
        for key, irev in (g.get("instanceRevisions") or {}).items():
            role, _, k = str(key).rpartition("/")
            if role and k.isdigit() and irev:
                instances[(o, role, int(k))] = irev
    return Recorded(groups, instances, desired)


@dataclass(frozen=True, slots=True)
class PassContext:
    ms: ModelServing
    history: History
    observed: Observed
    now: float
    prev_status: dict[str, Any]
    strategy: EffectiveStrategy
    recorded: Recorded
    update: UpdateRevision
    update_role_hashes: dict[str, str]
    # Revisions whose data equals the update revision's after re-canonicalisation (a serialisation
    # change, not a template change): pods on them are up to date.
    equivalent: frozenset[str]
    # The update revision is stored under its hash but its data cannot be read.
    update_unreadable: bool
    current_hash: str
    # What each group runs, or is rebuilt on when all its pods are gone (see ``group_revision``).
    group_revisions: dict[int, str]
    instance_available: dict[InstanceKey, bool]
    group_available: dict[int, bool]
    # Instances per group of every role of the spec (a role absent here has left the spec).
    role_sizes: dict[str, int]
    # Pods per instance by (revision, role) for every readable revision (``_expected_table``).
    expected_table: Mapping[tuple[str, str], int] = field(default_factory=dict, repr=False)
    # What availability and recovery read besides a group's pods (``_availability_shape``), interned
    # in the cache; None when verification runs (availability then reads more) or a revision's
    # roles cannot be read.
    shape: tuple[Any, ...] | None = None
    # An operator aborted the rollout and the spec selects the stable revision it went back to
    # (``returning_after_abort``): the groups return to it although spec.paused is set.
    returning_to_stable: bool = False
    # What the caller remembers between passes (``passcache``): None, nothing.
    cache: PassCache | None = field(default=None, repr=False, compare=False)
    # Each observed group's memo in the cache, by ordinal (``passcache.GroupMemo``), looked up once
    # per pass: availability, recovery and status each read it (1,000 groups: 3,000 lookups).
    memos: Mapping[int, GroupMemo] = field(default_factory=dict, repr=False, compare=False)

    @property
    def update_hash(self) -> str:
        return self.update.hash

    @property
    def paused(self) -> bool:
        """Whether the rollout's decisions hold still. spec.paused, except while an abort takes
        the groups back to stable: the abort leaves the rollout paused for what comes after (a
        retry is a resume), not half on the revision it aborted."""
        return self.ms.paused and not self.returning_to_stable

    # -- revision data -------------------------------------------------------------------------

    def data_of(self, rev: str) -> dict[str, Any] | None:
        """A revision's stored data; None when it is missing or unreadable (never guessed)."""
        if rev in self.equivalent:
            # Stored but unreadable under the update hash: the spec hashes the same, yet a
            # template is only ever taken from a readable revision, never assumed.
            return None if self.update_unreadable else self.update.data
        return self.history.data_of(rev)

    def role_data_of(self, rev: str, role: str) -> dict[str, Any] | None:
        data = self.data_of(rev)
        return role_data(data, role) if data is not None else None

    def expected_pods(self, rev: str, role: str) -> int:
        """Pods per instance of ``role`` at ``rev``: 1 + workerReplicas of that revision (of the
        spec when the revision cannot be read or lacks the role)."""
        value = self.expected_table.get((rev, role))
        if value is None:
            value = _expected_of(self.role_data_of(rev, role), self.ms, role)
        return value

    def role_replicas(self, role: str) -> int:
        return self.role_sizes.get(role, 0)

    def in_spec(self, role: str) -> bool:
        return role in self.role_sizes

    # -- instances and groups --------------------------------------------------------------------

    def available(self, inst: InstanceObs) -> bool:
        return self.instance_available[(inst.group, inst.role, inst.ordinal)]

    def group_is_available(self, group: GroupObs | None) -> bool:
        if group is None or not group.instances:
            return False
        return self.group_available[group.ordinal]

    def instance_updated(self, inst: InstanceObs) -> bool:
        """Runs the update revision's template for its role (the same role hash, or an
        equivalent revision)."""
        return inst.role_hash == self.update_role_hashes.get(inst.role) or inst.revision in self.equivalent


def build_context(
    ms: ModelServing,
    history: History,
    observed: Observed,
    now: float,
    status: dict[str, Any],
    settings: ClusterSettings | None,
    cache: PassCache | None = None,
) -> PassContext:
    """The pass's context, every field worked out before it is handed out: the revisions first
    (``_revisions_context``: a context without the groups' figures, private to this function),
    then what each group runs and which instances and groups are available, read from it."""
    base = _revisions_context(ms, history, observed, now, status, settings, cache)
    shape = None if ms.verification is not None else _availability_shape(base)
    instance_available, group_available, memos = _availability(base, shape)
    return dataclasses.replace(
        base,
        group_revisions=_group_revisions(base, base.strategy.group.partition.count),
        instance_available=instance_available,
        group_available=group_available,
        shape=shape,
        memos=memos,
    )


def _revisions_context(
    ms: ModelServing,
    history: History,
    observed: Observed,
    now: float,
    status: dict[str, Any],
    settings: ClusterSettings | None,
    cache: PassCache | None,
) -> PassContext:
    """The context's revision reading: the update revision, its equivalents, the current one and
    the pods per instance of each readable revision. No group's figures yet."""
    spec = ms.manifest.get("spec") or {}
    update = record_update_revision(ms.name, spec, history, int(status.get("collisionCount") or 0), cache)
    update_hash = update.hash
    equivalent = {update_hash}
    for rev in history.revisions:
        if rev.hash != update_hash and rev.data is not None and canonicalized(rev.data, cache) == update.data:
            equivalent.add(rev.hash)
    record = history.get(update_hash)
    current = status.get("currentRevision")
    unreadable = record is not None and not record.readable
    return PassContext(
        ms=ms,
        history=history,
        observed=observed,
        now=now,
        prev_status=status,
        strategy=_resolved(ms, settings, cache),
        recorded=recorded_revisions(status, cache),
        update=update,
        update_role_hashes=by_identity(cache, role_hashes, update.data),
        equivalent=frozenset(equivalent),
        update_unreadable=unreadable,
        current_hash=current if current and (current in history.by_hash or current == update_hash) else update_hash,
        group_revisions={},
        instance_available={},
        group_available={},
        role_sizes={r.name: r.replicas for r in ms.roles},
        expected_table=_expected_table(ms, history, equivalent, update.data, unreadable),
        cache=cache,
    )


def _resolved(ms: ModelServing, settings: ClusterSettings | None, cache: PassCache | None) -> EffectiveStrategy:
    """``strategy.resolve``, through the cache: it reads the spec's strategy, replicas and roles
    and the cluster settings, which stay the same objects while the spec does (``spec`` hands out
    the last parse for a status write), so the last pass's budgets are taken when all four are
    equal (compared by identity first). The result is shared: read only."""
    if cache is None:
        return resolve(ms, settings)
    key = (ms.strategy, ms.roles, ms.replicas, settings)
    last = cache.resolved
    if last is not None and last[0] == key:
        return last[1]
    value = resolve(ms, settings)
    cache.resolved = (key, value)
    return value


def _expected_of(role_data_: dict[str, Any] | None, ms: ModelServing, role: str) -> int:
    """Pods per instance from a revision's role data; the spec's when the revision has none."""
    if role_data_ is not None:
        return 1 + int(role_data_.get("workerReplicas") or 0)
    spec_role = ms.role(role)
    return spec_role.pods_per_instance if spec_role else 1


def _expected_table(
    ms: ModelServing, history: History, equivalent: set[str], update_data: dict[str, Any], unreadable: bool
) -> dict[tuple[str, str], int]:
    """Pods per instance of every role of every readable revision (stored, or equivalent to the
    update one), as ``PassContext.data_of`` reads them: a few revisions, thousands of instances.
    A role whose figure cannot be read is left out (``expected_pods`` then reads it, and fails,
    only if a pass asks)."""
    table: dict[tuple[str, str], int] = {}
    for rev in {*history.by_hash, *equivalent}:
        if rev in equivalent:
            data = None if unreadable else update_data
        else:
            data = history.data_of(rev)
        for r in (data or {}).get("roles") or []:
            name = r.get("name") if isinstance(r, dict) else None
            if name is None or (rev, name) in table:
                continue  # the first role of a name is the one ``role_data`` finds
            try:
                table[(rev, name)] = 1 + int(r.get("workerReplicas") or 0)
            except (TypeError, ValueError):
                continue
    return table


def _group_revisions(ctx: PassContext, partition: int) -> dict[int, str]:
    """What every group runs, or is rebuilt on (``group_revision``). A group with pods runs their
    revision (its first rule, taken for every group at once: 1,000 calls a pass otherwise)."""
    observed = ctx.observed
    revisions = {o: g.revision for o, g in observed.groups.items() if g.instances}
    for o in range(ctx.ms.replicas):
        if o not in revisions:
            revisions[o] = group_revision(ctx, o, None, partition)
    for o, group in observed.groups.items():
        if o not in revisions:
            revisions[o] = group_revision(ctx, o, group, partition)
    return revisions


Availability = tuple[dict[InstanceKey, bool], dict[int, bool], dict[int, GroupMemo]]


@dataclass(frozen=True, slots=True)
class AvailabilityRecord:
    """What ``_availability`` found on a pass, kept in the cache (``PassCache.availability``) for
    the next: the groups it read (ordinal -> GroupObs), the shape, and its three tables."""

    groups: dict[int, GroupObs]
    shape: tuple[Any, ...]
    tables: Availability


def _availability(ctx: PassContext, shape: tuple[Any, ...] | None) -> Availability:
    """Which instances and which groups are available, and each group's memo in the cache. With a
    cache and a shape, from the last pass's tables when that pass had the same shape: only the
    groups that are not the very GroupObs they were then are read (``_availability_since``), so a
    pass costs what changed (1,000 groups, none changed: a dict lookup per group instead of each
    group's memo and its figures copied)."""
    cache = ctx.cache
    if cache is None or shape is None:
        return _availability_of_all(ctx, shape)
    last = cache.availability
    if isinstance(last, AvailabilityRecord) and last.shape is shape:
        tables = _availability_since(ctx, shape, last)
    else:
        tables = _availability_of_all(ctx, shape)
    cache.availability = AvailabilityRecord(dict(ctx.observed.groups), shape, tables)
    return tables


def _availability_since(ctx: PassContext, shape: tuple[Any, ...], last: AvailabilityRecord) -> Availability:
    """``_availability_of_all``'s tables, taken from ``last`` (a pass under the same shape) with
    the groups that changed since read again, and those gone dropped. The tables are copies: the
    last pass's context keeps its own. Example: 1,000 groups of which group 7 was rebuilt (a pod
    became Ready): group 7's instances are dropped from the copy and its figures read anew."""
    available, group_available, memos = (dict(table) for table in last.tables)
    before = last.groups
    groups = ctx.observed.groups
    cache = ctx.cache
    for ordinal, group in groups.items():
        old = before.get(ordinal)
        if old is group:
            continue
        memo = memos[ordinal] = cache.memo_of(group)  # type: ignore[union-attr]
        hit = memo.availability
        if old is not None and (hit is None or hit[0] is not shape):
            group_available[ordinal] = _changed_instances_figures(ctx, group, old, available)
            continue
        if old is not None:
            for role, k in old.instances:
                del available[(ordinal, role, k)]
        group_available[ordinal] = _group_figures(ctx, group, shape, memo, available)
    for ordinal in before.keys() - groups.keys():
        for role, k in before[ordinal].instances:
            del available[(ordinal, role, k)]
        del group_available[ordinal]
        del memos[ordinal]
    return available, group_available, memos


def _changed_instances_figures(ctx: PassContext, group: GroupObs, old: GroupObs, available: dict) -> bool:
    """``group``'s figures in ``available``, which holds ``old``'s (the group last met at its
    ordinal, under the same shape): an instance that is the very InstanceObs it was then (observe
    keeps those whose pods are the same parses) keeps its figure; the others are read, those gone
    dropped. Returns whether the group is available. Example: the seed example's 160-instance
    group, one pod Ready since the last pass: one instance read instead of 160."""
    ordinal = group.ordinal
    instances, before = group.instances, old.instances
    for role, k in before:
        if (role, k) not in instances:
            del available[(ordinal, role, k)]
    changed = [inst for key, inst in instances.items() if before.get(key) is not inst]
    available.update(_figures_of(ctx, changed))
    return bool(instances) and _every_instance_ready(ctx, group)


def _group_figures(
    ctx: PassContext, group: GroupObs, shape: tuple[Any, ...] | None, memo: GroupMemo | None, available: dict
) -> bool:
    """Group ``group``'s instances' availability added to ``available``, and whether the group is
    available; from its memo when it holds this shape's figures, else worked out (and kept there
    when there is a shape)."""
    hit = memo.availability if memo is not None and shape is not None else None
    if hit is not None and hit[0] is shape:
        available.update(hit[1])
        return hit[2]
    figures = _instance_figures(ctx, group)
    available.update(figures)
    group_ok = bool(group.instances) and _every_instance_ready(ctx, group)
    if memo is not None and shape is not None:
        memo.availability = (shape, figures, group_ok)
    return group_ok


def _availability_of_all(ctx: PassContext, shape: tuple[Any, ...] | None) -> Availability:
    """``_availability``'s tables, every group read, and each group's memo in the cache (found
    here, in the one walk over the groups). Without verification a group's figures depend only on
    its pods and on ``shape``: a group whose pods are the same parses as last pass (the same
    GroupObs) under the same shape takes last pass's figures from its memo (1,000 groups x 4
    instances: ~3 ms of ~19 in ``bench planner``)."""
    cache = ctx.cache
    table = cache.group_memos if cache is not None else None
    available: dict[InstanceKey, bool] = {}
    group_available: dict[int, bool] = {}
    memos: dict[int, GroupMemo] = {}
    for ordinal, group in ctx.observed.groups.items():
        memo = None
        if table is not None:
            memo = table.get(ordinal)
            if memo is None or memo.group is not group:
                memo = cache.memo_of(group)  # type: ignore[union-attr]
            memos[ordinal] = memo
        group_available[group.ordinal] = _group_figures(ctx, group, shape, memo, available)
    return available, group_available, memos


def _instance_figures(ctx: PassContext, group: GroupObs) -> list[tuple[InstanceKey, bool]]:
    """Each instance of the group with whether it is available."""
    return _figures_of(ctx, group.instances.values())


def _figures_of(ctx: PassContext, instances: Iterable[InstanceObs]) -> list[tuple[InstanceKey, bool]]:
    """Each of these instances with whether it is available."""
    verifying = ctx.ms.verification is not None
    expected_of = ctx.expected_pods
    figures = []
    for inst in instances:
        # inst.ready(expected) and not updating in place, inlined: this runs for every instance.
        ready = (
            inst.all_ready and not inst.updating_in_place and inst.contiguous >= expected_of(inst.revision, inst.role)
        )
        figures.append(((inst.group, inst.role, inst.ordinal), ready and (not verifying or verified_enough(ctx, inst))))
    return figures


def _availability_shape(ctx: PassContext) -> tuple[Any, ...] | None:
    """Everything availability reads besides a group's pods (``expected_pods`` and
    ``_every_instance_ready``, no verification): per readable revision (stored, or the update one)
    its roles with their pods per instance, the spec's pods per role instance (a revision that
    cannot be read, or lacks the role), and the role sizes. Equal shapes give equal figures.
    None (nothing memoised) when a revision's roles cannot be read as numbers. Interned in the
    cache, so a memo made under it is checked by identity."""
    revisions = []
    for rev in sorted({*ctx.history.by_hash, *ctx.equivalent}):
        data = ctx.data_of(rev)
        try:
            roles = (
                None
                if data is None
                else tuple((r.get("name"), 1 + int(r.get("workerReplicas") or 0)) for r in data.get("roles") or [])
            )
        except (AttributeError, TypeError, ValueError):
            return None
        revisions.append((rev, roles))
    key = (
        tuple(revisions),
        tuple((r.name, r.pods_per_instance) for r in ctx.ms.roles),
        tuple(ctx.role_sizes.items()),
    )
    return key if ctx.cache is None else ctx.cache.shapes(key)


def with_partition(ctx: PassContext, partition: IntOrPercent, source: str) -> PassContext:
    """The same pass with the group partition set by ``source`` (the canary steps) instead of the
    spec: the strategy says so, and the groups below it are protected like any partition."""
    count = min(partition.resolve(ctx.ms.replicas, round_up=True), ctx.ms.replicas)
    group = dataclasses.replace(ctx.strategy.group, partition=EffectiveValue(partition.to_json(), count, source))
    revisions = {
        o: group_revision(ctx, o, ctx.observed.groups.get(o), count)
        for o in set(ctx.observed.groups) | set(range(ctx.ms.replicas))
    }
    strategy = dataclasses.replace(ctx.strategy, group=group)
    return dataclasses.replace(ctx, strategy=strategy, group_revisions=revisions)


def returning_after_abort(ctx: PassContext) -> PassContext:
    """The same pass, knowing whether an abort is taking the groups back to stable: the abort
    annotation names the revision the spec selects now as the stable one."""
    stable = ctx.ms.abort.get("stable")
    returning = bool(stable) and (stable == ctx.update_hash or stable in ctx.equivalent)
    return dataclasses.replace(ctx, returning_to_stable=returning) if returning else ctx


def as_paused(ctx: PassContext) -> PassContext:
    """The same pass for a ModelServing that is being paused in this very pass."""
    return dataclasses.replace(ctx, ms=dataclasses.replace(ctx.ms, paused=True))


def group_revision(ctx: PassContext, ordinal: int, group: GroupObs | None, partition: int) -> str:
    """The revision group ``ordinal`` runs, or is rebuilt on when all its pods are gone.

    A protected group (ordinal < partition) with no pods is rebuilt on the revision recorded for it
    in status, or on ``currentRevision``, never on the new spec; a group outside the partition with
    no pods is simply created on the update revision. Example: partition 2, group 1 lost every pod,
    status recorded it on ``a1`` -> rebuilt on ``a1`` although the spec now says ``b2``.
    """
    if group is not None and group.instances:
        return group.revision
    recorded = ctx.recorded.group_revision.get(ordinal)
    if ordinal < partition:
        return recorded or ctx.current_hash
    if ctx.paused and recorded:
        # Paused: a lost group is recovered at the revision it ran, not moved forward. A group
        # whose replacement had started is recorded on the update revision and finishes.
        return recorded
    return ctx.update_hash


def verified_enough(ctx: PassContext, inst: InstanceObs) -> bool:
    """With ``spec.verification`` a Ready instance counts as available only once its verification
    passed for the revision it runs: Ready is not serving. An instance on an older template that was
    never verified (it ran before the verification was configured) still counts, so adding a
    verification does not make the whole ModelServing unavailable at once; a failed one never does.
    """
    if ctx.ms.verification is None:
        return True
    passed = verification_passed(inst.entry, inst.revision)
    return passed is True or (passed is None and not ctx.instance_updated(inst))


def _every_instance_ready(ctx: PassContext, group: GroupObs) -> bool:
    """Every instance the group's revision defines exists and is Ready (not updating in place)."""
    rev = group.revision
    data = ctx.data_of(rev)
    roles = (
        [r["name"] for r in data.get("roles") or []] if data is not None else sorted({r for r, _ in group.instances})
    )
    instances = group.instances
    verifying = ctx.ms.verification is not None
    for role in roles:
        replicas = ctx.role_replicas(role) or sum(1 for (r, _) in instances if r == role)
        expected = ctx.expected_pods(rev, role)
        for ordinal in range(replicas):
            inst = instances.get((role, ordinal))
            if inst is None or not inst.all_ready or inst.contiguous < expected or inst.updating_in_place:
                return False
            if verifying and not verified_enough(ctx, inst):
                return False
    return True


def needs_no_recovery(ctx: PassContext, group: GroupObs) -> bool:
    """Under RoleRecreate (the default policy), True when recovery has nothing to do in ``group``
    and no instance of it is missing: every instance is in the spec, has not lost a pod and has all
    the pods its revision expects, and every instance the group's revision defines for the roles of
    the spec exists. False means "look": ``recovery.recover_group`` and ``create_missing_instances``
    decide. Memoised on the group with the pass's shape (their inputs besides the pods)."""
    if ctx.ms.recovery_policy != RECREATE_ROLE or ctx.shape is None:
        return False
    memo = ctx.memos.get(group.ordinal)
    if memo is not None and memo.group is not group:  # a group from elsewhere than this pass's observation
        memo = None
    hit = memo.intact if memo is not None else None
    if hit is not None and hit[0] is ctx.shape:
        return hit[1]
    intact = _intact(ctx, group)
    if memo is not None:
        memo.intact = (ctx.shape, intact)
    return intact


def _intact(ctx: PassContext, group: GroupObs) -> bool:
    """``needs_no_recovery``'s verdict, worked out."""
    data = ctx.data_of(group.revision)
    intact = data is not None and bool(group.instances)
    if intact:
        role_sizes, expected_of = ctx.role_sizes, ctx.expected_pods
        for (role, _), inst in group.instances.items():
            # inst.complete(expected), inlined: this runs for every instance of a changed group.
            if role not in role_sizes or inst.lost or inst.contiguous < expected_of(inst.revision, role):
                intact = False
                break
    if intact:
        for r in data.get("roles") or []:  # type: ignore[union-attr]
            name = r["name"]
            if name in ctx.role_sizes and any((name, k) not in group.instances for k in range(ctx.role_sizes[name])):
                intact = False
                break
    return intact


def is_group_level(ctx: PassContext) -> bool:
    return ctx.ms.strategy.type == GROUP_ROLLING
