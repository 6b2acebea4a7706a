"""Recovery inside a group that stays: lost pods, incomplete instances, roles that left the spec.

Recovery policies (``spec.recoveryPolicy``):

- ``ServingGroupRecreate``: a failed pod, or an instance missing some of its pods (or missing whole
  while the group had it before), rebuilds the whole group;
- ``RoleRecreate`` (default): the instance goes as a whole and comes back (its pods form one engine);
- ``None``: only failed pods are deleted and missing pods recreated, one by one.

Recovery runs while paused too: a pause stops the rollout, not the repair of what failed. Missing
instances are created by the strategy modules, which know the revision each one belongs to.
"""

from __future__ import annotations

from ..observe import GroupObs, InstanceObs
from ..plan import BECAUSE_RECOVERY, BECAUSE_REMOVED_ROLE
from ..spec import GROUP_ROLLING, IN_PLACE, RECREATE_GROUP, RECREATE_NONE
from .builder import PlanBuilder
from .create import create_instance
from .drain import remove_group, remove_instance, remove_pods


def recover_group(out: PlanBuilder, group: GroupObs) -> None:
    ctx = out.ctx
    policy = ctx.ms.recovery_policy
    if policy == RECREATE_GROUP and group.instances and _group_needs_rebuild(out, group):
        remove_group(out, group, BECAUSE_RECOVERY, may_start=True)
        return
    for (role, ordinal), inst in sorted(group.instances.items()):
        if (group.ordinal, role, ordinal) in out.instance_removals:
            continue
        if not ctx.in_spec(role):
            remove_instance(out, inst, BECAUSE_REMOVED_ROLE, may_start=not ctx.paused)
            continue
        expected = ctx.expected_pods(inst.revision, role)
        if policy == RECREATE_NONE and ordinal < ctx.role_replicas(role):
            _recover_pods_one_by_one(out, inst, expected)
            continue
        # (Also None for a surge or extra instance: it goes whole, and the surge logic makes a new
        # one if one is still needed; patching its pods back would race its removal.)
        if inst.lost or not inst.complete(expected):
            remove_instance(out, inst, BECAUSE_RECOVERY, may_start=True)


def _group_needs_rebuild(out: PlanBuilder, group: GroupObs) -> bool:
    """ServingGroupRecreate: any instance lost a pod or misses one, or an instance the group had
    when status was written (within today's role sizes) is gone."""
    ctx = out.ctx
    for (role, _ordinal), inst in group.instances.items():
        if inst.lost or not inst.complete(ctx.expected_pods(inst.revision, role)):
            return True
    for role, desired in ctx.recorded.desired.get(group.ordinal, {}).items():
        for ordinal in range(min(desired, ctx.role_replicas(role))):
            if (role, ordinal) not in group.instances:
                return True
    return False


def _recover_pods_one_by_one(out: PlanBuilder, inst: InstanceObs, expected: int) -> None:
    failed = [p for p in inst.pods.values() if p.failed and not p.deleting]
    if failed:
        remove_pods(
            out,
            failed,
            group=inst.group,
            role=inst.role,
            ordinal=inst.ordinal,
            revision=inst.revision,
            reason=BECAUSE_RECOVERY,
            may_start=True,
        )
    missing = [i for i in range(expected) if i not in inst.pods]
    # Not while the instance is being removed, nor when the rollout is about to replace it anyway:
    # recreating its pods on the old revision while the update deletes the rest would go round
    # forever.
    if missing and not inst.being_removed and not update_replaces(out, inst):
        create_instance(out, inst.group, inst.role, inst.ordinal, inst.revision, BECAUSE_RECOVERY, pod_indexes=missing)


def update_replaces(out: PlanBuilder, inst: InstanceObs) -> bool:
    """Will the rolling update replace this instance (so recovering its pods is wasted)?"""
    ctx = out.ctx
    if ctx.paused or ctx.ms.strategy.type == IN_PLACE or ctx.update_unreadable:
        return False
    if ctx.ms.strategy.type == GROUP_ROLLING:
        partition = ctx.strategy.group.partition.count
        rev = ctx.group_revisions.get(inst.group, inst.revision)
        return partition <= inst.group < ctx.ms.replicas and rev not in ctx.equivalent
    budgets = ctx.strategy.roles.get(inst.role)
    if budgets is None:
        return False
    eligible = budgets.partition.count <= inst.ordinal < ctx.role_replicas(inst.role)
    return eligible and not ctx.instance_updated(inst)
