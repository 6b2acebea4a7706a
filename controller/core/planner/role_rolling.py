"""RoleRollingUpdate and InPlaceRollingUpdate: replace (or patch) role instances inside each group.

Only instances whose role template changed are replaced; unchanged roles keep running. Every group
spends its own per-role budget: ``maxUnavailable: 1`` on a role means one instance of that role
per group, not one in the whole ModelServing. Per group, in this order:

1. recovery (``recovery``), then continue what is already under way (drains, in-place updates);
2. admit new replacements: paused -> none; in place -> only image changes; uncoordinated roles by
   their own budget; coordinated roles through ``coordination``;
3. surge instances (ordinals >= replicas on the target), removal of extra instances, creation of
   missing ones, and unschedulable new capacity reported.
"""

from __future__ import annotations

from typing import Any

from ..observe import GroupObs
from ..plan import (
    BECAUSE_RECOVERY,
    BECAUSE_SCALE,
    BECAUSE_SURGE,
    BECAUSE_SURGE_DONE,
    BECAUSE_UPDATE,
    KIND_BUDGET,
    KIND_DEPENDENCY,
    KIND_PARTITION,
    KIND_PAUSED,
    KIND_UNSCHEDULABLE,
)
from ..spec import IN_PLACE
from . import inplace
from .budgets import availability_floor, replacement_allowed, wanted_surge
from .builder import PlanBuilder
from .context import PassContext, needs_no_recovery
from .coordination import admit_coordinated, role_budget_reason
from .create import create_instance, create_missing_instances
from .drain import remove_group, remove_instance
from .paths import ALLOWED, LAST_PATH_OF_ENTRIES, keeper_of
from .recovery import recover_group
from .role_state import RoleState, role_states

PAUSED_REASON = "rollout paused: resume or promote to continue"


def roll_roles(out: PlanBuilder) -> None:
    ctx = out.ctx
    replicas = ctx.ms.replicas
    groups = ctx.observed.groups
    in_place = ctx.ms.strategy.type == IN_PLACE
    # Whole groups beyond replicas: scale down.
    for o in sorted((o for o in groups if o >= replicas), reverse=True):
        remove_group(out, groups[o], BECAUSE_SCALE, may_start=True)
    for o in range(replicas):
        group = groups.get(o)
        if group is None or not group.instances:
            create_missing_instances(
                out,
                o,
                None,
                list(ctx.ms.role_names),
                lambda role, k, o=o: instance_revision_for_create(
                    ctx, o, role, k, ctx.strategy.roles[role].partition.count
                ),
            )
            continue
        _roll_group(out, group, in_place)


def instance_revision_for_create(ctx: PassContext, group: int, role: str, ordinal: int, partition: int) -> str:
    """The revision a missing instance is created on: a protected one (ordinal < partition) at
    the revision recorded for it (or its group, or currentRevision), a paused one at its recorded
    revision, any other at the update revision."""
    # An instance not recorded on its own ran its group's revision.
    recorded = ctx.recorded.instance_revision.get((group, role, ordinal)) or ctx.recorded.group_revision.get(group)
    if ordinal < partition:
        if recorded:
            return recorded
        if ctx.role_data_of(ctx.current_hash, role) is not None or ctx.data_of(ctx.current_hash) is None:
            return ctx.current_hash
    if ctx.paused and recorded:
        return recorded  # paused: recover at its own revision (see context.group_revision)
    return ctx.update_hash


def _roll_group(out: PlanBuilder, group: GroupObs, in_place: bool) -> None:
    ctx = out.ctx
    o = group.ordinal
    states = role_states(ctx, group, in_place)
    # Recovery and scale inside the group first (these keep their own rules).
    if not needs_no_recovery(ctx, group):
        recover_group(out, group)
    if o in out.group_removals:
        return  # ServingGroupRecreate is rebuilding the whole group
    for role, st in states.items():
        for k in st.protected_outdated:
            out.block(
                o, role, f"{role}-{k} protected by partition {st.partition}; promote to update it", KIND_PARTITION
            )
        _continue_started(out, o, role, st, in_place)
    admitted = _admit(out, group, states, in_place)
    for role, ks in admitted.items():
        for k in ks:
            inst = states[role].instances[k]
            if in_place:
                inplace.start(out, inst)
            else:
                remove_instance(out, inst, BECAUSE_UPDATE, may_start=True)
    for role, st in states.items():
        _surge_scale_and_fill(out, o, role, st, in_place)


def _continue_started(out: PlanBuilder, o: int, role: str, st: RoleState, in_place: bool) -> None:
    """Replacements already started go on (drains and terminations in progress; in-place
    protocols), paused or not: a pause starts nothing new but lets started work finish."""
    ctx = out.ctx
    # Only instances being removed go on: those few are sorted, not the role's (100 in the seed example).
    removing = [] if in_place else [(k, inst) for k, inst in st.instances.items() if inst.being_removed]
    for k, inst in sorted(removing, key=_ordinal):
        if (o, role, k) in out.instance_removals:
            continue
        if k < st.replicas and k >= st.partition and not ctx.instance_updated(inst):
            remove_instance(out, inst, BECAUSE_UPDATE, may_start=not ctx.paused)
    if in_place:
        for _k, inst in sorted(st.instances.items()):
            if inplace.in_progress(ctx, inst):
                inplace.continue_update(out, inst)


def _ordinal(item: tuple[int, Any]) -> int:
    return item[0]


def _admit(out: PlanBuilder, group: GroupObs, states: dict[str, RoleState], in_place: bool) -> dict[str, list[int]]:
    """Which outdated instances start their replacement now, per role: unavailable ones first
    (free), then the highest ordinal, each within the role's budget (and, for coordinated roles,
    the coordination rules)."""
    ctx = out.ctx
    o = group.ordinal
    coordination = ctx.ms.strategy.coordination
    admitted: dict[str, list[int]] = {}
    queues = {role: _admission_order(st) for role, st in states.items()}
    if ctx.paused:
        for role, queue in queues.items():
            if queue:
                out.block(o, role, PAUSED_REASON, KIND_PAUSED)
        return admitted
    if ctx.update_unreadable:
        return admitted
    if in_place:
        queues = inplace.updatable(out, group, queues)
    coordinated = set(coordination.roles) if coordination else set()
    keeper = keeper_of(out)
    # Uncoordinated roles: budgets only (and, on a request path, its consistent paths).
    for role, queue in queues.items():
        if role in coordinated:
            continue
        st = states[role]
        for k in queue:
            allowed = replacement_allowed(
                candidate_available=k in st.available,
                available=len(st.available),
                total=st.replicas,
                max_unavailable=st.max_unavailable,
            )
            if not allowed:
                out.block(o, role, role_budget_reason(st), KIND_BUDGET)
                break
            if keeper is not None:
                case = keeper.case(ctx, st.instances[k])
                if case.case != ALLOWED:
                    out.block(o, role, case.reason, KIND_DEPENDENCY)
                    break
                keeper.take(ctx, st.instances[k])
            admitted.setdefault(role, []).append(k)
            st.take(k)
    if coordination:
        admit_coordinated(out, o, states, queues, admitted)
    return admitted


def _admission_order(st: RoleState) -> list[int]:
    """The role's outdated instances in the order they are admitted: the unavailable ones first
    (replacing them costs no availability), each part from the highest ordinal down. Example:
    pending [0, 1, 2, 3], available {0, 2} -> [3, 1, 2, 0]."""
    available = st.available
    unavailable = [k for k in st.outdated_pending if k not in available]
    serving = [k for k in st.outdated_pending if k in available]
    unavailable.sort(reverse=True)
    serving.sort(reverse=True)
    return unavailable + serving


def _surge_scale_and_fill(out: PlanBuilder, o: int, role: str, st: RoleState, in_place: bool) -> None:
    """Surge instances (ordinals >= replicas on the target), scale-down of other extras, creation
    of missing instances, and unschedulable new capacity reported."""
    ctx = out.ctx
    paused = ctx.paused
    surge_wanted = (
        0 if in_place or paused else wanted_surge(st.max_surge, len(st.outdated_pending) + st.removing_outdated())
    )
    if paused:
        # Paused: keep the surge there is while work remains, make none.
        surge_wanted = (
            sum(1 for k in st.instances if st.replicas <= k < st.replicas + st.max_surge and k in st.at_target)
            if st.outdated_pending
            else 0
        )
    surge_now = sorted(
        k
        for k in st.instances
        if st.replicas <= k < st.replicas + st.max_surge and k in st.at_target and not st.instances[k].being_removed
    )
    keep = set(surge_now[:surge_wanted])
    floor = availability_floor(st.replicas, st.max_unavailable)
    keeper = keeper_of(out)
    for k in sorted((k for k in st.instances if k >= st.replicas and k not in keep), reverse=True):
        if (o, role, k) in out.instance_removals:
            continue
        in_surge_slot = k < st.replicas + st.max_surge
        if in_surge_slot and k in st.available and k in st.at_target and len(st.available) - 1 < floor:
            continue  # a Ready surge instance stays until its replacement is Ready
        if keeper is not None and k in st.available:
            if in_surge_slot and k in st.at_target and keeper.case(ctx, st.instances[k]).case == LAST_PATH_OF_ENTRIES:
                continue  # and while Ready entries have no other consistent path through it
            keeper.take(ctx, st.instances[k])
        remove_instance(
            out, st.instances[k], BECAUSE_SURGE_DONE if k in st.at_target else BECAUSE_SCALE, may_start=True
        )
        st.available.discard(k)
    if not paused and len(keep) < surge_wanted:
        # Surge takes the free ordinals replicas .. replicas + maxSurge - 1 and no others: with
        # replicas 3 and maxSurge 1 a surge instance is instance 3, and while an old instance 3 is
        # still terminating the surge waits for it (creating instance 4 instead, with instance 0
        # lost and refilled in the same pass, put 5 instances in service, bound 3 + 1: found by
        # tests/core/test_planner_properties.py).
        free = [k for k in range(st.replicas, st.replicas + st.max_surge) if k not in st.instances]
        for k in free[: surge_wanted - len(keep)]:
            if len(st.instances) >= st.replicas + st.max_surge:
                break
            create_instance(out, o, role, k, ctx.update_hash, BECAUSE_SURGE)
    for k in range(st.replicas):
        if k not in st.instances:
            rev = instance_revision_for_create(ctx, o, role, k, st.partition)
            create_instance(out, o, role, k, rev, BECAUSE_UPDATE if rev in ctx.equivalent else BECAUSE_RECOVERY)
    for k, inst in st.instances.items():
        message = inst.unschedulable
        if message and (o, role, k) not in out.instance_removals:
            surge = k >= st.replicas
            out.block(
                o,
                role,
                f"{'surge instance' if surge else 'instance'} {role}-{k} unschedulable: {message}"
                + (f"; {st.max_unavailable} unavailable allowed" if surge else ""),
                KIND_UNSCHEDULABLE,
            )
            break
