"""ServingGroupRollingUpdate: replace whole groups within the group budgets.

- at least ``R - maxUnavailable`` groups available at all times, where *available* means every
  instance Ready and nothing draining or deleting; a Ready surge group counts;
- at most ``R + maxSurge`` groups exist; surge groups take ordinals ``R, R+1, ...`` and are created
  only while outdated groups remain;
- an outdated group that is not available is replaced first (it costs no availability), then
  available ones, highest ordinal first, among ordinals ``>= partition``.

Worked example: R=4, maxUnavailable=1, maxSurge=0: available 4, floor 3 -> replace group 3; while
its replacement is not Ready available is 3 = floor, so groups 2, 1, 0 wait ("maxUnavailable
reached"); then 2, then 1, then 0. With maxUnavailable=0, maxSurge=1: create surge group 4 first;
only when it is Ready (available 5) may group 3 go (available 4 = floor), and so on; at the end the
surge group is removed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..plan import (
    BECAUSE_RECOVERY,
    BECAUSE_SCALE,
    BECAUSE_SURGE,
    BECAUSE_SURGE_DONE,
    BECAUSE_UPDATE,
    KIND_BUDGET,
    KIND_PARTITION,
    KIND_PAUSED,
    KIND_UNSCHEDULABLE,
)
from .budgets import availability_floor, group_step, wanted_surge
from .builder import PlanBuilder
from .context import needs_no_recovery
from .create import create_group, create_missing_instances
from .drain import remove_group
from .recovery import recover_group

PAUSED_REASON = "rollout paused: resume or promote to continue"


@dataclass(frozen=True, slots=True)
class _Budgets:
    replicas: int
    partition: int
    max_unavailable: int
    max_surge: int

    @property
    def floor(self) -> int:
        return availability_floor(self.replicas, self.max_unavailable)


def roll_groups(out: PlanBuilder) -> None:
    ctx = out.ctx
    effective = ctx.strategy.group
    b = _Budgets(ctx.ms.replicas, effective.partition.count, effective.max_unavailable.count, effective.max_surge.count)
    groups = ctx.observed.groups
    revisions = ctx.group_revisions
    available = {o for o, g in groups.items() if ctx.group_is_available(g) and not g.being_removed}
    outdated = [
        o
        for o in range(b.partition, b.replicas)
        if o in groups and groups[o].instances and revisions[o] not in ctx.equivalent
    ]
    pending = [o for o in outdated if not groups[o].being_removed]

    _report_protected_groups(out, b)
    surge_now, keep_surge, surge_wanted = _surge_to_keep(out, b, pending)
    _remove_groups_beyond_replicas(out, b, available, keep_surge, pending)
    # Groups already being replaced keep going (their drain or termination continues) while they
    # are still outdated; otherwise their drain is cancelled at the end of the pass.
    for o in outdated:
        if groups[o].being_removed:
            remove_group(out, groups[o], BECAUSE_UPDATE, may_start=not ctx.paused)
    _start_replacements(out, b, pending, available, keep_surge | set(surge_now))
    _create_surge_groups(out, b, keep_surge, surge_wanted)
    _fill_and_recover(out, b)
    _report_unschedulable(out, b)


def _report_protected_groups(out: PlanBuilder, b: _Budgets) -> None:
    """Outdated groups below the partition stay as they are: say so."""
    ctx = out.ctx
    for o in range(min(b.partition, b.replicas)):
        if o in ctx.observed.groups and ctx.group_revisions[o] not in ctx.equivalent:
            out.block(
                o,
                None,
                f"protected by partition {b.partition} (ordinal {o} < {b.partition}); promote to update it",
                KIND_PARTITION,
            )


def _surge_to_keep(out: PlanBuilder, b: _Budgets, pending: list[int]) -> tuple[list[int], set[int], int]:
    """Surge groups are ordinals >= replicas on the update revision, kept while outdated groups
    remain to be replaced. Paused, the rollout keeps the surge it has and makes no more."""
    ctx = out.ctx
    groups = ctx.observed.groups
    surge_now = sorted(
        o
        for o in groups
        if b.replicas <= o < b.replicas + b.max_surge
        and ctx.group_revisions[o] in ctx.equivalent
        and not groups[o].being_removed
    )
    wanted = wanted_surge(b.max_surge, len(pending))
    if ctx.paused:
        wanted = len(surge_now) if pending else 0
    return surge_now, set(surge_now[:wanted]), wanted


def _remove_groups_beyond_replicas(
    out: PlanBuilder, b: _Budgets, available: set[int], keep_surge: set[int], pending: list[int]
) -> None:
    """Groups beyond replicas that are not kept surge: scale down, or surge no longer needed. A
    Ready group beyond replicas stays while removing it would dip below the floor (the groups that
    replace it are not Ready yet). That holds for a surge group of an older revision too: a new
    rollout started before the previous one finished (found by tests/live/test_soak.py: replicas
    4, maxUnavailable 1, groups 1 and 2 being replaced, the Ready surge group 4 drained when the
    image changed again, leaving 2 groups available, floor 3).

    It stays only inside the surge slots (ordinals below replicas + maxSurge): at most that many
    groups exist, whatever the floor. A scale-down from 5 to 4 with maxSurge 0 removes group 4 even
    while group 1 is being replaced (found by tests/core/test_planner_properties.py: group 4 kept
    for the floor left 5 groups in service, bound 4 + 0)."""
    ctx = out.ctx
    groups = ctx.observed.groups
    for o in sorted((o for o in groups if o >= b.replicas and o not in keep_surge), reverse=True):
        in_surge_slot = o < b.replicas + b.max_surge
        is_surge = ctx.group_revisions[o] in ctx.equivalent and in_surge_slot
        if in_surge_slot and o in available and len(available) - 1 < b.floor:
            if not pending:
                what = "surge group" if is_surge else "group"
                out.block(o, None, f"{what} {o} stays until {b.floor} groups are available without it", KIND_BUDGET)
            continue
        remove_group(out, groups[o], BECAUSE_SURGE_DONE if is_surge else BECAUSE_SCALE, may_start=True)
        available.discard(o)


def _start_replacements(
    out: PlanBuilder, b: _Budgets, pending: list[int], available: set[int], surge: set[int]
) -> None:
    """Replace outdated groups: unavailable ones first (free), then highest ordinal first."""
    ctx = out.ctx
    groups = ctx.observed.groups
    if ctx.paused:
        for o in sorted(pending, key=lambda o: (o in available, -o)):
            out.block(o, None, PAUSED_REASON, KIND_PAUSED)
        return
    if ctx.update_unreadable:
        return  # the replacements could not be built: reported when the context was checked
    step = group_step(pending, available, b.floor)
    for o in step.replace:
        remove_group(out, groups[o], BECAUSE_UPDATE, may_start=True)
    if step.wait:
        reason, kind = _budget_reason(out, b, step.available_after, surge)
        for o in step.wait:
            out.block(o, None, reason, kind)


def _budget_reason(out: PlanBuilder, b: _Budgets, count_available: int, surge: set[int]) -> tuple[str, str]:
    """Why the remaining groups wait (the same words for each of them)."""
    ctx = out.ctx
    groups = ctx.observed.groups
    for o in sorted(surge):
        group = groups.get(o)
        if group is None:
            continue
        for inst in group.instances.values():
            if inst.unschedulable:
                return (
                    f"blocked: surge pod unschedulable, {b.max_unavailable} unavailable allowed (group "
                    f"{o}: {inst.unschedulable})",
                    KIND_UNSCHEDULABLE,
                )
        if not ctx.group_is_available(group):
            return (
                f"waiting for surge group {o} to become Ready ({b.max_unavailable} unavailable allowed)",
                KIND_BUDGET,
            )
    unavailable = max(b.replicas - count_available, 0)
    waiting_on = [
        o
        for o in range(b.replicas)
        if not ctx.group_is_available(groups.get(o)) or (o in groups and groups[o].being_removed)
    ]
    detail = f": waiting for group {', '.join(map(str, waiting_on[:5]))} to become Ready" if waiting_on else ""
    failures = group_failures(groups, waiting_on)
    if failures:
        # Named, or the operator reads "waiting" and waits for a crash loop that never ends.
        detail += f" ({'; '.join(failures[:3])}{'; ...' if len(failures) > 3 else ''})"
    if b.max_unavailable == 0:
        return (f"0 unavailable allowed{detail or ': waiting for surge capacity to become Ready'}", KIND_BUDGET)
    return (f"maxUnavailable reached ({unavailable} of {b.max_unavailable}){detail}", KIND_BUDGET)


def group_failures(groups, ordinals) -> list[str]:
    """The failing instances of these groups in an operator's words: "group 3 decode-0:
    CrashLoopBackOff, 4 restarts"."""
    out = []
    for o in ordinals:
        group = groups.get(o)
        for (role, ordinal), inst in sorted(group.instances.items()) if group is not None else ():
            failure = inst.failure()
            if failure:
                out.append(f"group {o} {role}-{ordinal}: {failure}")
    return out


def _create_surge_groups(out: PlanBuilder, b: _Budgets, keep_surge: set[int], wanted: int) -> None:
    """New surge groups on the update revision, at the lowest free ordinals >= replicas, never more
    than ``replicas + maxSurge`` groups in all."""
    ctx = out.ctx
    if ctx.paused or len(keep_surge) >= wanted:
        return
    groups = ctx.observed.groups
    # Every ordinal below replicas exists once this pass is done (_fill_and_recover creates the
    # missing ones, e.g. the second half of a replacement), so count it now: otherwise a pass that
    # refills groups 1 and 2 also made a surge group beyond the bound (found by the soak: replicas 4,
    # maxSurge 1, 6 groups in service).
    existing = len(set(groups) | set(range(b.replicas)))
    ordinal = b.replicas
    for _ in range(wanted - len(keep_surge)):
        while ordinal in groups:
            ordinal += 1
        if existing >= b.replicas + b.max_surge:
            break
        create_group(out, ordinal, ctx.update_hash, BECAUSE_SURGE)
        existing += 1
        ordinal += 1


def _fill_and_recover(out: PlanBuilder, b: _Budgets) -> None:
    """Missing ordinals are created (scale up, recovery, the second half of a replacement); groups
    that stay are recovered and completed with the instances they lack."""
    ctx = out.ctx
    groups = ctx.observed.groups
    for o in range(b.replicas):
        group = groups.get(o)
        rev = ctx.group_revisions[o]
        if group is None or not group.instances:
            # The second half of a replacement when the group ran an older revision before.
            replaced = rev in ctx.equivalent and ctx.recorded.group_revision.get(o, rev) not in ctx.equivalent
            create_group(out, o, rev, BECAUSE_UPDATE if replaced else BECAUSE_RECOVERY)
    for o, group in sorted(groups.items()):
        if o in out.group_removals:
            continue
        rev = ctx.group_revisions[o]
        if rev == group.revision and needs_no_recovery(ctx, group):
            continue  # most groups on most passes: nothing lost, nothing missing
        data = ctx.data_of(rev)
        if data is None:
            out.report_unreadable_once(rev, o, None, f"recovery of group {o}")
            continue
        recover_group(out, group)
        if o in out.group_removals:
            continue  # recovery rebuilds it whole: nothing to add to a group on its way out
        roles = [r["name"] for r in data.get("roles") or [] if ctx.in_spec(r["name"])]
        create_missing_instances(out, o, group, roles, lambda role, ordinal, rev=rev: rev)


def _report_unschedulable(out: PlanBuilder, b: _Budgets) -> None:
    """New capacity that cannot be placed: say so for the group that holds it (once per group)."""
    already = {blocked.group for blocked in out.blocked if blocked.kind == KIND_UNSCHEDULABLE}
    for o, group in out.ctx.observed.groups.items():
        if not group.unschedulable or o in out.group_removals or o in already:
            continue
        for inst in group.instances.values():
            if inst.unschedulable:
                what = "surge group" if o >= b.replicas else "group"
                out.block(o, inst.role, f"{what} {o} pod unschedulable: {inst.unschedulable}", KIND_UNSCHEDULABLE)
                break
