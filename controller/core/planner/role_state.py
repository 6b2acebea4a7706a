"""Where each role of one group stands in a role-level rollout (RoleRollingUpdate, in-place).

``role_states`` counts, per role, from the observed instances: which are on the target template,
available, outdated and waiting, in flight, protected by the partition, and how many old ones still
serve. The admission step spends these counters (``RoleState.take``) as it admits replacements.
"""

from __future__ import annotations

from fractions import Fraction

from ..observe import GroupObs, InstanceObs
from .budgets import started_progress
from .context import PassContext
from .inplace import in_progress as inplace_in_progress


class RoleState:
    """Counters for one role inside one group while admitting replacements."""

    __slots__ = (
        "role",
        "replicas",
        "partition",
        "max_unavailable",
        "max_surge",
        "instances",
        "available",
        "at_target",
        "outdated_pending",
        "protected_outdated",
        "ready_target",
        "in_flight",
        "old_alive",
        "old_routable",
    )

    def __init__(self, role: str, replicas: int, partition: int, max_unavailable: int, max_surge: int):
        self.role = role
        self.replicas = replicas
        self.partition = min(partition, replicas)
        self.max_unavailable = max_unavailable
        self.max_surge = max_surge
        self.instances: dict[int, InstanceObs] = {}
        self.available: set[int] = set()
        self.at_target: set[int] = set()
        self.outdated_pending: list[int] = []
        self.protected_outdated: list[int] = []
        self.ready_target = 0  # R: eligible, on the target template, Ready
        self.in_flight = 0  # I: removing, target-not-Ready, or missing eligible slots
        self.old_alive = 0  # old instances that still exist and may serve (draining included)
        self.old_routable = 0  # old instances that still take new requests

    @property
    def target(self) -> int:
        """Eligible instances: replicas - partition."""
        return max(self.replicas - self.partition, 0)

    def started_progress(self) -> Fraction:
        return started_progress(self.ready_target, self.in_flight, self.target)

    def take(self, k: int) -> None:
        """Instance ``k`` starts its replacement: it leaves service and is in flight."""
        self.available.discard(k)
        self.in_flight += 1
        self.old_routable -= 1

    def removing_outdated(self) -> int:
        """Outdated instances (inside replicas) whose removal is already under way."""
        return sum(
            1
            for k, inst in self.instances.items()
            if k < self.replicas and k not in self.at_target and inst.being_removed
        )


def role_states(ctx: PassContext, group: GroupObs, in_place: bool) -> dict[str, RoleState]:
    """Each spec role's counters in ``group``. The instances are taken role by role in one walk
    over the group, and each instance's figures read in locals: the seed example's 160-instance
    group is counted on nearly every pass."""
    by_role: dict[str, list[tuple[int, InstanceObs]]] = {role.name: [] for role in ctx.ms.roles}
    for (rname, k), inst in group.instances.items():
        members = by_role.get(rname)
        if members is not None:
            members.append((k, inst))
    states: dict[str, RoleState] = {}
    for role in ctx.ms.roles:
        budgets = ctx.strategy.roles[role.name]
        st = RoleState(
            role.name,
            role.replicas,
            budgets.partition.count,
            budgets.max_unavailable.count,
            budgets.max_surge.count,
        )
        _count_instances(ctx, st, by_role[role.name], ctx.update_role_hashes.get(role.name, ""), in_place)
        for k in range(st.partition, role.replicas):
            if k not in st.instances:
                st.in_flight += 1  # a replacement deleted but not yet recreated
        states[role.name] = st
    return states


def _count_instances(
    ctx: PassContext, st: RoleState, members: list[tuple[int, InstanceObs]], target: str, in_place: bool
) -> None:
    """The role's instances (ordinal, instance) counted into ``st``."""
    available_of = ctx.instance_available
    equivalent = ctx.equivalent
    replicas, partition = st.replicas, st.partition
    instances, available, at_target_set = st.instances, st.available, st.at_target
    ready_target = in_flight = old_alive = old_routable = 0
    for k, inst in members:
        instances[k] = inst
        at_target = inst.role_hash == target or inst.revision in equivalent
        removing = inst.being_removed
        updating = in_place and inplace_in_progress(ctx, inst)
        if at_target and not updating:
            at_target_set.add(k)
        if available_of[(inst.group, inst.role, inst.ordinal)] and not removing and not updating:
            available.add(k)
        if partition <= k < replicas:
            if at_target and not updating:
                if k in available:
                    ready_target += 1
                else:
                    in_flight += 1
            elif removing or updating:
                in_flight += 1
            else:
                st.outdated_pending.append(k)
        if k < partition and not at_target:
            st.protected_outdated.append(k)
        if not at_target and not inst.deleting:
            old_alive += 1  # a draining old instance still serves its in-flight requests
            if not removing:
                old_routable += 1
    st.ready_target += ready_target
    st.in_flight += in_flight
    st.old_alive += old_alive
    st.old_routable += old_routable
