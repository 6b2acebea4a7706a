"""The planner: ``plan(ms, history, observed, now) -> Plan``. A pure function.

Given the spec, the revision history, what the cluster holds (pods, the previous status) and the
time, it returns the actions to take now, the status to write, and for every group/role that cannot
progress the reason in words. It remembers nothing: everything it needs is in its arguments, so a
restarted controller plans exactly as the old one would have.

Budgets (ServingGroupRollingUpdate; the role-level types apply the same rules per role inside each
group, every group spending its own budget):

- at least ``R - maxUnavailable`` groups available at all times, where *available* means every
  instance Ready and nothing draining or deleting; a Ready surge group counts;
- at most ``R + maxSurge`` groups exist; surge groups take ordinals ``R, R+1, ...`` and are
  created only while outdated groups remain;
- an outdated group that is not available is replaced first (it costs no availability), then
  available ones, highest ordinal first, among ordinals ``>= partition``.

Worked example: R=4, maxUnavailable=1, maxSurge=0: available 4, floor 3 -> replace group 3; while
its replacement is not Ready available is 3 = floor, so groups 2, 1, 0 wait ("maxUnavailable
reached"); then 2, then 1, then 0.

With maxUnavailable=0, maxSurge=1: create surge group 4 first; only when it is Ready (available 5)
may group 3 go (available 4 = floor), and so on; at the end the surge group is removed.

Deleting a pod that serves traffic always goes through drain (see ``_remove_pods``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from . import naming
from .observe import GroupObs, InstanceObs, Observed, PodObs
from .plan import (
    BECAUSE_RECOVERY,
    BECAUSE_REMOVED_ROLE,
    BECAUSE_SCALE,
    BECAUSE_SURGE,
    BECAUSE_SURGE_DONE,
    BECAUSE_UPDATE,
    CREATE,
    DELETE,
    DRAIN,
    KIND_BUDGET,
    KIND_DEADLOCK,
    KIND_DEPENDENCY,
    KIND_DRAIN,
    KIND_FAILING,
    KIND_PARTITION,
    KIND_PAUSED,
    KIND_REFUSED,
    KIND_REVISION,
    KIND_SKEW,
    KIND_UNSCHEDULABLE,
    PATCH_IMAGE,
    SET_GATE,
    UNDRAIN,
    Action,
    Blocked,
    Plan,
)
from .podtemplate import build_instance_pods, template_images
from .revisions import History, canonicalize_data, gc_actions, record_update_revision, role_data, role_hash
from .spec import GROUP_ROLLING, IN_PLACE, RECREATE_GROUP, RECREATE_NONE, ModelServing
from .status import build_status
from .strategy import ClusterSettings, EffectiveStrategy, resolve

# While a drain waits for in-flight requests the router's counts change without any cluster event,
# so the controller looks again this often.
DRAIN_POLL_SECONDS = 0.5

InstanceKey = tuple[int, str, int]  # (group, role, ordinal)


def plan(
    ms: ModelServing,
    history: History,
    observed: Observed,
    now: float,
    *,
    status: dict[str, Any] | None = None,
    settings: ClusterSettings | None = None,
) -> Plan:
    """Plan one reconcile pass. ``status`` is the ModelServing's status as last written."""
    return _Pass(ms, history, observed, now, status or {}, settings).run()


@dataclass(slots=True)
class _Removal:
    reason: str
    revision: str  # the revision the removed pods run (for the trace)


class _Pass:
    def __init__(
        self,
        ms: ModelServing,
        history: History,
        observed: Observed,
        now: float,
        status: dict[str, Any],
        settings: ClusterSettings | None,
    ):
        self.ms = ms
        self.history = history
        self.observed = observed
        self.now = now
        self.prev = status
        self.strategy: EffectiveStrategy = resolve(ms, settings)
        self.actions: list[Action] = []
        self.blocked: list[Blocked] = []
        self.requeue_after: float | None = None
        # Pods that this pass deletes or keeps draining; any other draining pod gets undrained.
        self.removing_pods: set[str] = set()
        self.group_removals: dict[int, _Removal] = {}
        self.instance_removals: dict[InstanceKey, _Removal] = {}
        self.unreadable_reported: set[tuple[str, int | None]] = set()  # (revision, group)
        self.recorded = _recorded_revisions(status)
        self._expected_cache: dict[tuple[str, str], int] = {}
        self._available_cache: dict[int, bool] = {}
        self._group_available_cache: dict[int, bool] = {}
        self._waiting_on: list[int] | None = None

    # -----------------------------------------------------------------------------------------
    # Revisions

    def _revisions(self) -> None:
        spec = self.ms.manifest.get("spec") or {}
        self.update = record_update_revision(
            self.ms.name, spec, self.history, int(self.prev.get("collisionCount") or 0)
        )
        self.update_hash = self.update.hash
        self.update_role_hashes = {r["name"]: role_hash(r) for r in self.update.data.get("roles") or []}
        # Revisions whose data is the same as the update revision's after re-canonicalisation (a
        # serialisation change, not a template change): pods on them are up to date.
        self.equivalent = {self.update_hash}
        for rev in self.history.revisions:
            if (
                rev.hash != self.update_hash
                and rev.data is not None
                and canonicalize_data(rev.data) == self.update.data
            ):
                self.equivalent.add(rev.hash)
        record = self.history.get(self.update_hash)
        self.update_unreadable = record is not None and not record.readable
        current = self.prev.get("currentRevision")
        self.current_hash = (
            current
            if current and (current in self.history.by_hash or current == self.update_hash)
            else self.update_hash
        )
        # Every referenced revision whose stored data cannot be read is reported once, by name.
        referenced = (
            {self.current_hash}
            | set(self.recorded.group_revision.values())
            | set(self.recorded.instance_revision.values())
        )
        for group in self.observed.groups.values():
            referenced.update(group.revision_counts)
        for rev in sorted(referenced):
            record = self.history.get(rev)
            if record is None or record.readable:
                continue
            what = (
                "the rollout and every create that needs it"
                if rev in self.equivalent
                else "every create and recovery that needs it"
            )
            self.report_unreadable(rev, None, None, what)

    def data_of(self, rev: str) -> dict[str, Any] | None:
        if rev in self.equivalent:
            # Stored but unreadable under the update hash: the spec hashes the same, yet a
            # template is only ever taken from a readable revision, never assumed.
            return None if self.update_unreadable else self.update.data
        return self.history.data_of(rev)

    def role_data_of(self, rev: str, role: str) -> dict[str, Any] | None:
        data = self.data_of(rev)
        return role_data(data, role) if data is not None else None

    def expected_pods(self, rev: str, role: str) -> int:
        key = (rev, role)
        cached = self._expected_cache.get(key)
        if cached is not None:
            return cached
        rd = self.role_data_of(rev, role)
        if rd is not None:
            value = 1 + int(rd.get("workerReplicas") or 0)
        else:
            spec_role = self.ms.role(role)
            value = spec_role.pods_per_instance if spec_role else 1
        self._expected_cache[key] = value
        return value

    def role_replicas(self, role: str) -> int:
        spec_role = self.ms.role(role)
        return spec_role.replicas if spec_role else 0

    def report_unreadable(self, rev: str, group: int | None, role: str | None, what: str) -> None:
        record = self.history.get(rev)
        why = record.error if record and record.error else "not found in the revision history"
        fix = (
            f"; deleting ControllerRevision {record.name} lets the controller store it again from the spec"
            if record and rev in self.equivalent
            else ""
        )
        self.blocked.append(
            Blocked(
                group,
                role,
                f"revision {rev} is unreadable ({why}): {what} is paused until it is repaired or the "
                f"reference goes away{fix}",
                KIND_REVISION,
            )
        )
        self.unreadable_reported.add((rev, group))

    # -----------------------------------------------------------------------------------------
    # Shared helpers

    def instance_available(self, inst: InstanceObs) -> bool:
        key = id(inst)
        cached = self._available_cache.get(key)
        if cached is None:
            cached = self._available_cache[key] = (
                inst.ready(self.expected_pods(inst.revision, inst.role)) and not inst.updating_in_place
            )
        return cached

    def group_available(self, group: GroupObs | None) -> bool:
        if group is None or not group.instances:
            return False
        cached = self._group_available_cache.get(group.ordinal)
        if cached is None:
            cached = self._group_available_cache[group.ordinal] = self._group_available(group)
        return cached

    def _group_available(self, group: GroupObs) -> bool:
        rev = group.revision
        data = self.data_of(rev)
        roles = (
            [r["name"] for r in data.get("roles") or []]
            if data is not None
            else sorted({r for r, _ in group.instances})
        )
        for role in roles:
            replicas = self.role_replicas(role) or sum(1 for (r, _) in group.instances if r == role)
            expected = self.expected_pods(rev, role)
            for ordinal in range(replicas):
                inst = group.instances.get((role, ordinal))
                if inst is None or not inst.ready(expected) or inst.updating_in_place:
                    return False
        return True

    def create_instance(
        self, group: int, role: str, ordinal: int, rev: str, reason: str, pod_indexes: list[int] | None = None
    ) -> bool:
        rd = self.role_data_of(rev, role)
        if rd is None:
            if (rev, group) not in self.unreadable_reported:
                self.report_unreadable(rev, group, role, f"creating {role}-{ordinal} of group {group}")
            return False
        pods = build_instance_pods(
            ms=self.ms.manifest,
            revision_hash=rev,
            role_data=rd,
            group=group,
            ordinal=ordinal,
            in_place_gate=self.ms.strategy.type == IN_PLACE,
            scheduler_name=(self.data_of(rev) or {}).get("schedulerName"),
            pod_indexes=pod_indexes,
        )
        self.actions.append(
            Action(
                CREATE, group, role, ordinal, rev, reason, pods=pods, pod_names=[p["metadata"]["name"] for p in pods]
            )
        )
        return True

    def _remove_pods(
        self, pods: list[PodObs], *, group: int, role: str, ordinal: int, revision: str, reason: str, may_start: bool
    ) -> None:
        """Delete pods, draining the ones that serve traffic first.

        Per pod: already terminating -> wait; not Ready and not marked -> delete now (it serves no
        traffic); marked draining -> delete once the router reports no in-flight requests or the
        drain timeout has passed (the requests still running are then interrupted, and the
        simulator counts them); Ready -> mark draining (only when ``may_start``: a paused rollout
        starts no new drain, but one already started finishes).

        Worked example: timeout 120 s, marked at t=100, at t=150 in-flight 3 -> wait (poll again
        in 0.5 s); at t=160 in-flight 0 -> delete; had it still been 2 at t=220, delete anyway.
        """
        to_drain: list[PodObs] = []
        to_delete: list[PodObs] = []
        waiting = False
        timeout = self.ms.drain_timeout_seconds
        for pod in pods:
            if pod.deleting:
                self.removing_pods.add(pod.name)
                continue
            if pod.draining_since is not None:
                self.removing_pods.add(pod.name)
                in_flight = self.observed.in_flight.get(pod.name, 0)
                elapsed = self.now - pod.draining_since
                if in_flight <= 0 or elapsed >= timeout:
                    to_delete.append(pod)
                else:
                    waiting = True
                    left = max(timeout - elapsed, 0.0)
                    self._requeue(min(DRAIN_POLL_SECONDS, left))
                continue
            if pod.ready and timeout > 0:
                if may_start:
                    to_drain.append(pod)
                    self.removing_pods.add(pod.name)
                continue
            if may_start or not pod.ready:
                to_delete.append(pod)
                self.removing_pods.add(pod.name)
        if waiting and to_delete:
            # Pods of one instance are one engine: while any of them still finishes in-flight
            # requests (the entry, typically), the others those requests need stay. Only pods
            # that were never serving (not Ready, never marked) go now.
            to_delete = [p for p in to_delete if not p.ready and p.draining_since is None]
        if to_drain:
            mark = {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: repr(float(self.now))}}}
            self.actions.append(
                Action(
                    DRAIN,
                    group,
                    role,
                    ordinal,
                    revision,
                    reason,
                    pod_names=[p.name for p in to_drain],
                    patches={p.name: mark for p in to_drain},
                )
            )
            self._requeue(DRAIN_POLL_SECONDS)
        if to_delete:
            self.actions.append(
                Action(
                    DELETE,
                    group,
                    role,
                    ordinal,
                    revision,
                    reason,
                    pod_names=[p.name for p in to_delete],
                    pod_uids=[p.uid for p in to_delete],
                )
            )
        if waiting:
            longest = max(
                (
                    self.observed.in_flight.get(p.name, 0)
                    for p in pods
                    if p.draining_since is not None and not p.deleting
                ),
                default=0,
            )
            self.blocked.append(
                Blocked(
                    group,
                    role,
                    f"draining {role}-{ordinal}: waiting for {longest} in-flight request(s) (timeout {timeout:g} s)",
                    KIND_DRAIN,
                )
            )

    def _requeue(self, seconds: float) -> None:
        seconds = max(seconds, 0.05)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds

    def remove_instance(self, inst: InstanceObs, reason: str, *, may_start: bool) -> None:
        self.instance_removals[(inst.group, inst.role, inst.ordinal)] = _Removal(reason, inst.revision)
        self._remove_pods(
            list(inst.pods.values()),
            group=inst.group,
            role=inst.role,
            ordinal=inst.ordinal,
            revision=inst.revision,
            reason=reason,
            may_start=may_start,
        )

    def remove_group(self, group: GroupObs, reason: str, *, may_start: bool) -> None:
        self.group_removals[group.ordinal] = _Removal(reason, group.revision)
        for (role, ordinal), inst in sorted(group.instances.items()):
            self._remove_pods(
                list(inst.pods.values()),
                group=group.ordinal,
                role=role,
                ordinal=ordinal,
                revision=inst.revision,
                reason=reason,
                may_start=may_start,
            )

    @staticmethod
    def being_removed(group: GroupObs) -> bool:
        return group.being_removed

    # -----------------------------------------------------------------------------------------
    # Recovery and scale inside one group (both strategies)

    def reconcile_instances(self, group: GroupObs) -> None:
        """Recover lost pods and remove instances of roles that left the spec, inside a group
        that is staying. Missing instances are created by the caller (it knows their revision).

        Recovery policies:
        - ServingGroupRecreate: a failed pod, or an instance missing some of its pods (or missing
          whole while the group had it before), rebuilds the whole group;
        - RoleRecreate: the instance goes as a whole and comes back (its pods form one engine);
        - None: only failed pods are deleted and missing pods recreated, one by one.
        """
        policy = self.ms.recovery_policy
        recorded_desired = self.recorded.desired.get(group.ordinal, {})
        if policy == RECREATE_GROUP and group.instances:
            for (role, _ordinal), inst in group.instances.items():
                expected = self.expected_pods(inst.revision, role)
                if inst.lost or not inst.complete(expected):
                    self.remove_group(group, BECAUSE_RECOVERY, may_start=True)
                    return
            for role, desired in recorded_desired.items():
                for ordinal in range(min(desired, self.role_replicas(role))):
                    if (role, ordinal) not in group.instances:
                        self.remove_group(group, BECAUSE_RECOVERY, may_start=True)
                        return
        for (role, ordinal), inst in sorted(group.instances.items()):
            if (group.ordinal, role, ordinal) in self.instance_removals:
                continue
            if self.ms.role(role) is None:
                self.remove_instance(inst, BECAUSE_REMOVED_ROLE, may_start=not self.ms.paused)
                continue
            expected = self.expected_pods(inst.revision, role)
            if policy == RECREATE_NONE and ordinal < self.role_replicas(role):
                failed = [p for p in inst.pods.values() if p.failed and not p.deleting]
                if failed:
                    self._remove_pods(
                        failed,
                        group=group.ordinal,
                        role=role,
                        ordinal=ordinal,
                        revision=inst.revision,
                        reason=BECAUSE_RECOVERY,
                        may_start=True,
                    )
                missing = [i for i in range(expected) if i not in inst.pods]
                # Not while the instance is being removed, nor when the rollout is about to replace
                # it anyway: recreating its pods on the old revision while the update deletes the
                # rest would go round forever.
                if missing and not inst.being_removed and not self.update_replaces(inst):
                    self.create_instance(
                        group.ordinal, role, ordinal, inst.revision, BECAUSE_RECOVERY, pod_indexes=missing
                    )
                continue
            # (Also None for a surge or extra instance: it goes whole, and the surge logic makes
            # a new one if one is still needed; patching its pods back would race its removal.)
            if inst.lost or not inst.complete(expected):
                self.remove_instance(inst, BECAUSE_RECOVERY, may_start=True)

    def update_replaces(self, inst: InstanceObs) -> bool:
        """Will the rolling update replace this instance (so recovering its pods is wasted)?"""
        if self.ms.paused or self.ms.strategy.type == IN_PLACE or self.update_unreadable:
            return False
        if self.ms.strategy.type == GROUP_ROLLING:
            partition = self.strategy.group.partition.count
            rev = (
                self.group_revisions.get(inst.group, inst.revision)
                if hasattr(self, "group_revisions")
                else inst.revision
            )
            return partition <= inst.group < self.ms.replicas and rev not in self.equivalent
        budgets = self.strategy.roles.get(inst.role)
        if budgets is None:
            return False
        return budgets.partition.count <= inst.ordinal < self.role_replicas(inst.role) and not self.instance_updated(
            inst
        )

    def create_missing_instances(
        self, group_ordinal: int, group: GroupObs | None, roles: list[str], rev_for: Any
    ) -> None:
        for role in roles:
            for ordinal in range(self.role_replicas(role)):
                if group is not None and (role, ordinal) in group.instances:
                    continue
                rev = rev_for(role, ordinal)
                self.create_instance(
                    group_ordinal, role, ordinal, rev, BECAUSE_SCALE if group is not None else BECAUSE_RECOVERY
                )

    # -----------------------------------------------------------------------------------------
    # ServingGroupRollingUpdate

    def group_revision(self, ordinal: int, group: GroupObs | None, partition: int) -> str:
        """The revision group ``ordinal`` runs, or is rebuilt on when all its pods are gone.

        A protected group (ordinal < partition) with no pods is rebuilt on the revision recorded
        for it in status, or on ``currentRevision``, never on the new spec; a group outside the
        partition with no pods is simply created on the update revision.
        """
        if group is not None and group.instances:
            return group.revision
        recorded = self.recorded.group_revision.get(ordinal)
        if ordinal < partition:
            return recorded or self.current_hash
        if self.ms.paused and recorded:
            # Paused: a lost group is recovered at the revision it ran, not moved forward. A group
            # whose replacement had started is recorded on the update revision and finishes.
            return recorded
        return self.update_hash

    def recorded_group_revision(self, ordinal: int) -> str:
        """What status records for a group: a group being replaced is recorded on the update
        revision, so a restart mid-replacement (or a pause) rebuilds it as the update intended."""
        removal = self.group_removals.get(ordinal)
        if removal is not None and removal.reason == BECAUSE_UPDATE:
            return self.update_hash
        return self.group_revisions.get(ordinal, self.update_hash)

    def group_rolling(self) -> None:
        ms = self.ms
        budgets = self.strategy.group
        replicas = ms.replicas
        partition = budgets.partition.count
        max_unavailable = budgets.max_unavailable.count
        max_surge = budgets.max_surge.count
        groups = self.observed.groups
        paused = ms.paused
        self.group_revisions = {
            o: self.group_revision(o, groups.get(o), partition) for o in set(groups) | set(range(replicas))
        }

        available = {o for o, g in groups.items() if self.group_available(g) and not self.being_removed(g)}
        floor = replicas - max_unavailable
        outdated = [
            o
            for o in range(partition, replicas)
            if o in groups and groups[o].instances and self.group_revisions[o] not in self.equivalent
        ]
        pending = [o for o in outdated if not self.being_removed(groups[o])]

        # Outdated groups below the partition stay as they are: say so.
        for o in range(min(partition, replicas)):
            if o in groups and self.group_revisions[o] not in self.equivalent:
                self.blocked.append(
                    Blocked(
                        o,
                        None,
                        f"protected by partition {partition} (ordinal {o} < {partition}); promote to update it",
                        KIND_PARTITION,
                    )
                )

        # Surge groups: ordinals >= replicas on the update revision, kept while outdated groups
        # remain to be replaced.
        wanted_surge = min(max_surge, len(pending))
        surge_now = sorted(
            o
            for o in groups
            if replicas <= o < replicas + max_surge
            and self.group_revisions[o] in self.equivalent
            and not self.being_removed(groups[o])
        )
        if paused:
            wanted_surge = len(surge_now) if pending else 0
        keep_surge = set(surge_now[:wanted_surge])

        # Groups beyond replicas that are not kept surge: scale down, or surge no longer needed. A
        # Ready surge group stays while removing it would dip below the floor (its replacement
        # is not Ready yet).
        for o in sorted((o for o in groups if o >= replicas and o not in keep_surge), reverse=True):
            is_surge = self.group_revisions[o] in self.equivalent and o < replicas + max_surge
            if is_surge and o in available and len(available) - 1 < floor:
                if not pending:
                    self.blocked.append(
                        Blocked(
                            o, None, f"surge group {o} stays until {floor} groups are available without it", KIND_BUDGET
                        )
                    )
                continue
            self.remove_group(groups[o], BECAUSE_SURGE_DONE if is_surge else BECAUSE_SCALE, may_start=True)
            available.discard(o)

        # Groups already being replaced keep going (their drain or termination continues) while
        # they are still outdated; otherwise their drain is cancelled below.
        for o in outdated:
            if self.being_removed(groups[o]):
                self.remove_group(groups[o], BECAUSE_UPDATE, may_start=not paused)

        # Replace outdated groups: unavailable ones first (free), then highest ordinal first.
        candidates = sorted(pending, key=lambda o: (o in available, -o))
        count_available = len(available)
        for o in candidates:
            if paused:
                self.blocked.append(Blocked(o, None, "rollout paused: resume or promote to continue", KIND_PAUSED))
                continue
            if self.update_unreadable:
                continue  # its replacement could not be built: reported once above
            if o not in available:
                self.remove_group(groups[o], BECAUSE_UPDATE, may_start=True)
                continue
            if count_available - 1 >= floor:
                self.remove_group(groups[o], BECAUSE_UPDATE, may_start=True)
                count_available -= 1
                continue
            self.blocked.append(
                Blocked(
                    o,
                    None,
                    *self.group_budget_reason(
                        count_available, floor, max_unavailable, keep_surge | set(surge_now), replicas
                    ),
                )
            )

        # Create surge groups while outdated groups remain.
        existing = len(groups)
        if not paused and len(keep_surge) < wanted_surge:
            ordinal = replicas
            for _ in range(wanted_surge - len(keep_surge)):
                while ordinal in groups:
                    ordinal += 1
                if existing >= replicas + max_surge:
                    break
                self.create_group(ordinal, self.update_hash, BECAUSE_SURGE)
                existing += 1
                ordinal += 1

        # Fill missing ordinals (scale up, recovery, the second half of a replacement).
        for o in range(replicas):
            group = groups.get(o)
            rev = self.group_revisions[o]
            if group is None or not group.instances:
                # The second half of a replacement when the group ran an older revision before.
                replaced = rev in self.equivalent and self.recorded.group_revision.get(o, rev) not in self.equivalent
                self.create_group(o, rev, BECAUSE_UPDATE if replaced else BECAUSE_RECOVERY)
        for o, group in sorted(groups.items()):
            if o in self.group_removals:
                continue
            rev = self.group_revisions[o]
            if self.data_of(rev) is None:
                if (rev, o) not in self.unreadable_reported:
                    self.report_unreadable(rev, o, None, f"recovery of group {o}")
                continue
            self.reconcile_instances(group)
            if o in self.group_removals:
                continue  # recovery rebuilds it whole: nothing to add to a group on its way out
            roles = [r["name"] for r in (self.data_of(rev) or {}).get("roles") or []]
            self.create_missing_instances(
                o, group, [r for r in roles if self.ms.role(r) is not None], lambda role, ordinal, rev=rev: rev
            )

        self.unschedulable_surge_reasons(groups, replicas, max_unavailable)

    def create_group(self, ordinal: int, rev: str, reason: str) -> None:
        data = self.data_of(rev)
        if data is None:
            if (rev, ordinal) not in self.unreadable_reported:
                self.report_unreadable(rev, ordinal, None, f"creating group {ordinal}")
            return
        for role in data.get("roles") or []:
            if self.ms.role(role["name"]) is None:
                continue
            for k in range(self.role_replicas(role["name"])):
                self.create_instance(ordinal, role["name"], k, rev, reason)

    def group_budget_reason(
        self, count_available: int, floor: int, max_unavailable: int, surge: set[int], replicas: int
    ) -> tuple[str, str]:
        groups = self.observed.groups
        for o in sorted(surge):
            group = groups.get(o)
            if group is None:
                continue
            for inst in group.instances.values():
                message = inst.unschedulable
                if message:
                    return (
                        f"blocked: surge pod unschedulable, {max_unavailable} unavailable allowed (group "
                        f"{o}: {message})",
                        KIND_UNSCHEDULABLE,
                    )
            if not self.group_available(group):
                return (
                    f"waiting for surge group {o} to become Ready ({max_unavailable} unavailable allowed)",
                    KIND_BUDGET,
                )
        unavailable = max(replicas - count_available, 0)
        if self._waiting_on is None:
            # Computed once per pass: every blocked group gets the same explanation.
            self._waiting_on = [
                o
                for o in range(replicas)
                if not self.group_available(groups.get(o)) or (o in groups and self.being_removed(groups[o]))
            ]
        waiting_on = self._waiting_on
        detail = f": waiting for group {', '.join(map(str, waiting_on[:5]))} to become Ready" if waiting_on else ""
        if max_unavailable == 0:
            return (f"0 unavailable allowed{detail or ': waiting for surge capacity to become Ready'}", KIND_BUDGET)
        return (f"maxUnavailable reached ({unavailable} of {max_unavailable}){detail}", KIND_BUDGET)

    def unschedulable_surge_reasons(self, groups: dict[int, GroupObs], replicas: int, max_unavailable: int) -> None:
        """New capacity that cannot be placed: say so for the group that holds it."""
        already = {b.group for b in self.blocked if b.kind == KIND_UNSCHEDULABLE}
        for o, group in groups.items():
            if o in self.group_removals or o in already:
                continue
            for inst in group.instances.values():
                message = inst.unschedulable
                if message:
                    what = "surge group" if o >= replicas else "group"
                    self.blocked.append(
                        Blocked(o, inst.role, f"{what} {o} pod unschedulable: {message}", KIND_UNSCHEDULABLE)
                    )
                    break

    # -----------------------------------------------------------------------------------------
    # RoleRollingUpdate and InPlaceRollingUpdate

    def instance_revision_for_create(self, group: int, role: str, ordinal: int, partition: int) -> str:
        # An instance not recorded on its own ran its group's revision.
        recorded = self.recorded.instance_revision.get((group, role, ordinal)) or self.recorded.group_revision.get(
            group
        )
        if ordinal < partition:
            if recorded:
                return recorded
            if self.role_data_of(self.current_hash, role) is not None or self.data_of(self.current_hash) is None:
                return self.current_hash
        if self.ms.paused and recorded:
            return recorded  # paused: recover at its own revision (see group_revision)
        return self.update_hash

    def instance_updated_or_group(self, group_rev: str, inst: InstanceObs | None, role: str) -> bool:
        """Is this instance (or, when missing, its slot) on the update revision?"""
        if self.ms.strategy.type == GROUP_ROLLING:
            return group_rev in self.equivalent
        if inst is None:
            return True
        return self.instance_updated(inst)

    def instance_updated(self, inst: InstanceObs) -> bool:
        return inst.role_hash == self.update_role_hashes.get(inst.role) or inst.revision in self.equivalent

    def role_rolling(self) -> None:
        ms = self.ms
        replicas = ms.replicas
        groups = self.observed.groups
        in_place = ms.strategy.type == IN_PLACE
        # Whole groups beyond replicas: scale down.
        for o in sorted((o for o in groups if o >= replicas), reverse=True):
            self.remove_group(groups[o], BECAUSE_SCALE, may_start=True)
        for o in range(replicas):
            group = groups.get(o)
            if group is None or not group.instances:
                self.create_missing_instances(
                    o,
                    None,
                    list(ms.role_names),
                    lambda role, k, o=o: self.instance_revision_for_create(
                        o, role, k, self.strategy.roles[role].partition.count
                    ),
                )
                continue
            self.role_rolling_group(group, in_place)

    def role_rolling_group(self, group: GroupObs, in_place: bool) -> None:
        ms = self.ms
        o = group.ordinal
        paused = ms.paused
        states: dict[str, _RoleState] = {}
        for role in ms.roles:
            budgets = self.strategy.roles[role.name]
            st = _RoleState(
                role.name,
                role.replicas,
                budgets.partition.count,
                budgets.max_unavailable.count,
                budgets.max_surge.count,
            )
            target = self.update_role_hashes.get(role.name, "")
            for (rname, k), inst in group.instances.items():
                if rname != role.name:
                    continue
                st.instances[k] = inst
                at_target = inst.role_hash == target or inst.revision in self.equivalent
                removing = self.being_removed_instance(inst)
                updating = in_place and self.inplace_in_progress(inst)
                if at_target and not updating:
                    st.at_target.add(k)
                if self.instance_available(inst) and not removing and not updating:
                    st.available.add(k)
                if k < role.replicas and k >= st.partition:
                    if at_target and not updating:
                        if k in st.available:
                            st.ready_target += 1
                        else:
                            st.in_flight += 1
                    elif removing or updating:
                        st.in_flight += 1
                    else:
                        st.outdated_pending.append(k)
                if k < st.partition and not at_target:
                    st.protected_outdated.append(k)
                if not at_target and not inst.deleting:
                    st.old_alive += 1  # a draining old instance still serves its in-flight requests
                    if not removing:
                        st.old_routable += 1
            for k in range(st.partition, role.replicas):
                if k not in st.instances:
                    st.in_flight += 1  # a replacement deleted but not yet recreated
            states[role.name] = st

        # Recovery and scale inside the group first (these keep their own rules).
        self.reconcile_instances(group)
        if o in self.group_removals:
            return  # ServingGroupRecreate is rebuilding the whole group
        for role, st in states.items():
            for k in st.protected_outdated:
                self.blocked.append(
                    Blocked(
                        o,
                        role,
                        f"{role}-{k} protected by partition {st.partition}; promote to update it",
                        KIND_PARTITION,
                    )
                )
            # Continue replacements already started (drains and terminations in progress).
            for k, inst in sorted(st.instances.items()):
                if (o, role, k) in self.instance_removals:
                    continue
                if (
                    k < st.replicas
                    and k >= st.partition
                    and not self.instance_updated(inst)
                    and self.being_removed_instance(inst)
                    and not in_place
                ):
                    self.remove_instance(inst, BECAUSE_UPDATE, may_start=not paused)
            if in_place:
                for _k, inst in sorted(st.instances.items()):
                    if self.inplace_in_progress(inst):
                        self.inplace_continue(inst)

        admitted = self.admit(group, states, in_place)
        for role, ks in admitted.items():
            st = states[role]
            for k in ks:
                inst = st.instances[k]
                if in_place:
                    self.inplace_start(inst)
                else:
                    self.remove_instance(inst, BECAUSE_UPDATE, may_start=True)

        # Surge instances (ordinals >= replicas on the target), scale-down of other extras, and
        # creation of missing instances.
        for role, st in states.items():
            wanted_surge = (
                0 if in_place or paused else min(st.max_surge, len(st.outdated_pending) + st.removing_outdated(self))
            )
            if paused:
                wanted_surge = (
                    sum(1 for k in st.instances if st.replicas <= k < st.replicas + st.max_surge and k in st.at_target)
                    if st.outdated_pending
                    else 0
                )
            surge_now = sorted(
                k
                for k in st.instances
                if st.replicas <= k < st.replicas + st.max_surge
                and k in st.at_target
                and not self.being_removed_instance(st.instances[k])
            )
            keep = set(surge_now[:wanted_surge])
            floor = st.replicas - st.max_unavailable
            for k in sorted((k for k in st.instances if k >= st.replicas and k not in keep), reverse=True):
                if (o, role, k) in self.instance_removals:
                    continue
                inst = st.instances[k]
                if k in st.available and k in st.at_target and len(st.available) - 1 < floor:
                    continue  # a Ready surge instance stays until its replacement is Ready
                self.remove_instance(inst, BECAUSE_SURGE_DONE if k in st.at_target else BECAUSE_SCALE, may_start=True)
                st.available.discard(k)
            if not paused and len(keep) < wanted_surge:
                k = st.replicas
                for _ in range(wanted_surge - len(keep)):
                    while k in st.instances:
                        k += 1
                    if len(st.instances) >= st.replicas + st.max_surge:
                        break
                    self.create_instance(o, role, k, self.update_hash, BECAUSE_SURGE)
                    k += 1
            for k in range(st.replicas):
                if k not in st.instances:
                    rev = self.instance_revision_for_create(o, role, k, st.partition)
                    self.create_instance(
                        o, role, k, rev, BECAUSE_UPDATE if rev in self.equivalent else BECAUSE_RECOVERY
                    )
            for k, inst in st.instances.items():
                message = inst.unschedulable
                if message and (o, role, k) not in self.instance_removals:
                    kind_word = "surge instance" if k >= st.replicas else "instance"
                    self.blocked.append(
                        Blocked(
                            o,
                            role,
                            f"{kind_word} {role}-{k} unschedulable: {message}"
                            + (f"; {st.max_unavailable} unavailable allowed" if k >= st.replicas else ""),
                            KIND_UNSCHEDULABLE,
                        )
                    )
                    break

    @staticmethod
    def being_removed_instance(inst: InstanceObs) -> bool:
        return inst.being_removed

    # -----------------------------------------------------------------------------------------
    # Admission of replacements inside one group: budgets, then coordination

    def admit(self, group: GroupObs, states: dict[str, _RoleState], in_place: bool) -> dict[str, list[int]]:
        """Which outdated instances start their replacement now, per role.

        Without coordination each role spends its own budget. With coordination a selection loop
        admits one candidate at a time: the one whose role has the lowest started progress, then
        the earlier role in the spec, then the highest ordinal; each admission must pass the role's
        budget, the skew quota, the dependency gate and the teardown order.
        """
        o = group.ordinal
        ms = self.ms
        coordination = ms.strategy.coordination
        admitted: dict[str, list[int]] = {}
        queues: dict[str, list[int]] = {}
        for role, st in states.items():
            queues[role] = sorted(st.outdated_pending, key=lambda k: (k in st.available, -k))
        if ms.paused:
            for role, queue in queues.items():
                if queue:
                    self.blocked.append(Blocked(o, role, "rollout paused: resume or promote to continue", KIND_PAUSED))
            return admitted
        if self.update_unreadable:
            return admitted
        if in_place:
            queues = self.inplace_filter(group, states, queues)
        coordinated = set(coordination.roles) if coordination else set()
        # Uncoordinated roles: budgets only.
        for role, queue in queues.items():
            if role in coordinated:
                continue
            st = states[role]
            for k in queue:
                if self.budget_allows(st, k):
                    admitted.setdefault(role, []).append(k)
                    st.take(k)
                else:
                    self.blocked.append(Blocked(o, role, self.role_budget_reason(st), KIND_BUDGET))
                    break
        if not coordination:
            return admitted
        skew = Fraction(coordination.max_skew_percent, 100)
        order = {name: i for i, name in enumerate(ms.role_names)}
        callers: dict[str, list[str]] = {r: [] for r in coordinated}
        for dep in coordination.dependencies:
            for target in dep.depends_on:
                callers[target].append(dep.role)
        reasons: dict[str, tuple[str, str]] = {}
        while True:
            best = None
            for role in coordinated:
                queue = queues.get(role) or []
                if not queue:
                    continue
                st = states[role]
                k = queue[0]
                why = self.coordination_refusal(role, k, states, coordinated, skew, callers)
                if why is None and not self.budget_allows(st, k):
                    why = (self.role_budget_reason(st), KIND_BUDGET)
                if why is not None:
                    reasons[role] = why
                    continue
                reasons.pop(role, None)
                rank = (st.started_progress(), order[role], -k)
                if best is None or rank < best[0]:
                    best = (rank, role, k)
            if best is None:
                break
            _, role, k = best
            queues[role].pop(0)
            states[role].take(k)
            admitted.setdefault(role, []).append(k)
        # Nothing admitted, nothing in motion, yet work remains: no later pass can change that by
        # itself, so it is a stall an operator must resolve, not "progress".
        in_motion = any(
            states[r].in_flight > 0
            or any(k not in states[r].available for k in states[r].at_target)
            or (
                states[r].outdated_pending
                and sum(1 for k in states[r].instances if k >= states[r].replicas) < states[r].max_surge
            )
            for r in coordinated
        )
        stalled = not admitted and not in_motion
        for role, (reason, kind) in sorted(reasons.items()):
            if queues.get(role):
                if stalled and kind in (KIND_SKEW, KIND_DEPENDENCY, KIND_BUDGET):
                    reason, kind = (
                        f"stalled: {reason}; no role can move until an operator changes the strategy "
                        "(maxSkew, maxSurge, maxUnavailable)",
                        KIND_DEADLOCK,
                    )
                self.blocked.append(Blocked(o, role, reason, kind))
        return admitted

    def budget_allows(self, st: _RoleState, k: int) -> bool:
        if k not in st.available:
            return True  # replacing an unavailable instance costs no availability
        return len(st.available) - 1 >= st.replicas - st.max_unavailable

    def role_budget_reason(self, st: _RoleState) -> str:
        unavailable = max(st.replicas - len(st.available), 0)
        if st.max_unavailable == 0:
            surge = [k for k in st.instances if k >= st.replicas]
            for k in surge:
                message = st.instances[k].unschedulable
                if message:
                    return f"blocked: surge pod unschedulable, 0 unavailable allowed ({st.role}-{k}: {message})"
            return f"0 unavailable allowed: waiting for surge {st.role} capacity to become Ready"
        return f"maxUnavailable reached ({unavailable} of {st.max_unavailable})"

    @staticmethod
    def ready_baseline(states: dict[str, _RoleState], coordinated: set[str], callers: dict[str, list[str]]) -> Fraction:
        """The lowest Ready progress among roles still rolling out.

        A dependency's last old instance kept back by the teardown order is not lagging, it is held
        on purpose until its old callers are gone, so it counts as done here. Without that, B=5
        holding one old instance sits at 80% and caps its caller A=10 at ceil(0.9 * 10) = 9 of 10
        replacements: A could never finish, so B could never let go (a permanent wait).
        """
        baseline = Fraction(1)
        for name in coordinated:
            st = states[name]
            if st.target == 0:
                continue
            ready = st.ready_target
            # Held only once everything else of the role is Ready: before that the role is simply
            # behind. Example: B=3 with 1 new Ready, 1 in flight and 1 old is at 1/3, not 2/3.
            held = (
                st.old_routable == 1
                and st.ready_target == st.target - 1
                and bool(st.outdated_pending)
                and any(states[c].old_alive > 0 for c in callers.get(name, []))
            )
            if held:
                ready = min(ready + 1, st.target)
            if ready < st.target:
                baseline = min(baseline, Fraction(ready, st.target))
        return baseline

    def coordination_refusal(
        self,
        role: str,
        k: int,
        states: dict[str, _RoleState],
        coordinated: set[str],
        skew: Fraction,
        callers: dict[str, list[str]],
    ) -> tuple[str, str] | None:
        st = states[role]
        coordination = self.ms.strategy.coordination
        assert coordination is not None
        # Skew quota: allowedStarted = min(T, ceil(min(1, baseline + skew) * T)).
        # Example: T = 100, 50, 10 at baseline 0 and skew 10% -> 10, 5, 1.
        baseline = self.ready_baseline(states, coordinated, callers)
        allowed = min(st.target, math.ceil(min(Fraction(1), baseline + skew) * st.target))
        if st.ready_target + st.in_flight + 1 > allowed:
            return (
                f"maxSkew {coordination.max_skew_percent}%: {st.ready_target + st.in_flight} of {st.target} "
                f"started, quota {allowed} "
                f"until the slowest role passes {float(baseline) * 100:.0f}% Ready",
                KIND_SKEW,
            )
        # Dependency gate: before the first replacement of `role`, every role it depends on
        # (transitively) has a Ready instance on the target template.
        if st.ready_target == 0:
            for dep in _closure(role, coordination):
                dst = states.get(dep)
                if dst is None:
                    continue
                if not any(
                    dst.instances[j].role_hash == self.update_role_hashes.get(dep) and j in dst.available
                    for j in dst.instances
                ):
                    if dst.target == 0 and dst.old_alive:
                        return (
                            f"waits for dependency {dep}, whose replicas are all protected by its partition",
                            KIND_DEADLOCK,
                        )
                    return (
                        f"waits for dependency {dep}: no Ready {dep} instance on the new template yet",
                        KIND_DEPENDENCY,
                    )
        # Teardown order: while an old caller exists, keep at least one old instance of its
        # dependency. A single-instance dependency therefore needs surge or an interruption.
        old_callers = [c for c in callers.get(role, []) if states[c].old_alive > 0]
        if old_callers and st.old_routable - 1 < 1:
            if st.max_surge == 0:
                return (
                    f"replacing the last old {role} instance would leave old {', '.join(old_callers)} "
                    f"without an old {role}: "
                    f"{role} needs maxSurge >= 1, an interruption (raise maxUnavailable and accept it), or "
                    "cross-version compatibility",
                    KIND_DEADLOCK,
                )
            return (
                f"keeps its last old instance while old {', '.join(old_callers)} exist (teardown order)",
                KIND_DEPENDENCY,
            )
        return None

    # -----------------------------------------------------------------------------------------
    # InPlaceRollingUpdate

    def inplace_in_progress(self, inst: InstanceObs) -> bool:
        """Decided from the pods alone (gate condition, update-state annotation, drain mark), never
        from memory, so a restarted controller picks the protocol up where it stopped."""
        target = self.update_role_hashes.get(inst.role)
        for pod in inst.pods.values():
            if pod.gate is False:
                return True
            state = pod.inplace_state
            if state and not state.get("completed") and state.get("targetRevision"):
                return True
            if (
                pod.draining_since is not None
                and not pod.deleting
                and pod.role_hash != target
                and inst.ordinal < self.role_replicas(inst.role)
            ):
                return True  # marked for an in-place update (ungated pod, or killed between writes)
        return False

    def inplace_refusal(self, inst: InstanceObs) -> str | None:
        """Only regular container images may differ; anything else is refused, never recreated."""
        old = self.role_data_of(inst.revision, inst.role)
        new = self.role_data_of(self.update_hash, inst.role)
        if old is None:
            return None  # reported as unreadable elsewhere
        if new is None:
            return f"role {inst.role} is not in the new revision"
        differences = _non_image_differences(old, new)
        if differences:
            return (
                "in-place update refused: only container images may change, but "
                + "; ".join(differences[:3])
                + " changed; switch rolloutStrategy.type to RoleRollingUpdate to recreate"
            )
        return None

    def inplace_filter(
        self, group: GroupObs, states: dict[str, _RoleState], queues: dict[str, list[int]]
    ) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for role, queue in queues.items():
            kept = []
            for k in queue:
                inst = states[role].instances[k]
                if self.data_of(inst.revision) is None:
                    if (inst.revision, group.ordinal) not in self.unreadable_reported:
                        self.report_unreadable(inst.revision, group.ordinal, role, "the in-place update")
                    continue
                refusal = self.inplace_refusal(inst)
                if refusal:
                    self.blocked.append(Blocked(group.ordinal, role, refusal, KIND_REFUSED))
                    break
                kept.append(k)
            out[role] = kept
        return out

    def inplace_start(self, inst: InstanceObs) -> None:
        """Step 1: take the pods that still run the old template out of routing: readiness gate
        False (the pod leaves the endpoints) and the drain mark (the router stops sending and the
        controller can count what is still in flight)."""
        pods = [p for p in inst.pods.values() if not self._pod_on_target(p) and not p.deleting]
        gated = [p for p in pods if p.has_gate and p.gate is not False]
        if gated:
            self.actions.append(
                Action(
                    SET_GATE,
                    inst.group,
                    inst.role,
                    inst.ordinal,
                    self.update_hash,
                    BECAUSE_UPDATE,
                    pod_names=[p.name for p in gated],
                    condition=_gate_condition(False, "StartInPlaceUpdate", self.now),
                )
            )
            self._requeue(DRAIN_POLL_SECONDS)
        # A pod without the gate (created under another strategy) can only leave routing by the
        # drain mark; a gated pod's False condition already does that, and its time is the drain start.
        unmarked = [p for p in pods if not p.has_gate and p.draining_since is None]
        if unmarked:
            mark = {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: repr(float(self.now))}}}
            self.actions.append(
                Action(
                    DRAIN,
                    inst.group,
                    inst.role,
                    inst.ordinal,
                    inst.revision,
                    BECAUSE_UPDATE,
                    pod_names=[p.name for p in unmarked],
                    patches={p.name: mark for p in unmarked},
                )
            )
            self._requeue(DRAIN_POLL_SECONDS)
        self.removing_pods.update(p.name for p in pods)

    def _pod_on_target(self, pod: PodObs) -> bool:
        """Labelled with the target template and not in the middle of an update to another one
        (a bad image, then the old image set back: the labels never moved, the images did)."""
        if pod.role_hash != self.update_role_hashes.get(pod.role):
            return False
        state = pod.inplace_state
        return state is None or bool(state.get("completed")) or state.get("targetRevision") in self.equivalent

    def inplace_continue(self, inst: InstanceObs) -> None:
        """Steps 2-5 for every pod of an instance under update, each step decided from the pod:

        2. no update state yet: make sure it is out of routing (gate False, drain mark), wait until
           its in-flight requests finish (bounded by drain.timeoutSeconds), then write the state
           annotation (target revision, image IDs and restart counts before) and the new images
           in one patch, clearing the drain mark;
        3. wait until every changed container runs the new image with a new image ID, Ready;
        4. gate True (skipped when it already is, so a restart right after it does not repeat it);
        5. move the revision labels and mark the state completed.
        """
        target_role = self.role_data_of(self.update_hash, inst.role)
        if target_role is None:
            return
        target = self.update_role_hashes.get(inst.role)
        timeout = self.ms.drain_timeout_seconds
        not_started: list[PodObs] = []
        drained: list[PodObs] = []
        gate_up: list[PodObs] = []
        finish: list[PodObs] = []
        failing = None
        waiting_in_flight = 0
        for pod in inst.pods.values():
            if pod.deleting:
                continue
            state = pod.inplace_state
            valid = state is not None and state.get("targetRevision") in self.equivalent
            if not valid:
                if self._pod_on_target(pod):
                    continue  # already on the target template
                self.removing_pods.add(pod.name)
                if pod.has_gate:
                    if pod.gate is not False:
                        not_started.append(pod)
                        continue
                    since = pod.gate_since if pod.gate_since is not None else float("-inf")
                elif pod.draining_since is None:
                    not_started.append(pod)
                    continue
                else:
                    since = pod.draining_since
                in_flight = self.observed.in_flight.get(pod.name, 0)
                if in_flight <= 0 or self.now - since >= timeout:
                    drained.append(pod)
                else:
                    waiting_in_flight = max(waiting_in_flight, in_flight)
                    self._requeue(min(DRAIN_POLL_SECONDS, max(timeout - (self.now - since), 0.0)))
                continue
            if state.get("completed"):
                if pod.has_gate and pod.gate is False:
                    gate_up.append(pod)
                continue
            if _inplace_pod_done(pod, state, target_role):
                if pod.has_gate and pod.gate is not True:
                    gate_up.append(pod)
                finish.append(pod)
            elif pod.failing_reason:
                failing = pod.failing_reason
        if not_started:
            self.inplace_start(_SubInstance(inst, not_started))
        if drained and not not_started and not waiting_in_flight:
            # The pods of an instance are one engine: a worker restarts only when the entry's
            # in-flight requests (which run on the worker too) are done or timed out.
            self._patch_images(inst, drained)
        if waiting_in_flight:
            self.blocked.append(
                Blocked(
                    inst.group,
                    inst.role,
                    f"in-place update of {inst.role}-{inst.ordinal}: waiting for {waiting_in_flight} "
                    f"in-flight request(s) (timeout {timeout:g} s)",
                    KIND_DRAIN,
                )
            )
        if gate_up:
            self.actions.append(
                Action(
                    SET_GATE,
                    inst.group,
                    inst.role,
                    inst.ordinal,
                    self.update_hash,
                    BECAUSE_UPDATE,
                    pod_names=[p.name for p in gate_up],
                    condition=_gate_condition(True, "InPlaceUpdateDone", self.now),
                )
            )
        if finish:
            labels = {naming.LABEL_REVISION: self.update_hash, naming.LABEL_ROLE_TEMPLATE_HASH: target}
            patches = {}
            for pod in finish:
                state = dict(pod.inplace_state or {})
                state["completed"] = True
                state["completedAt"] = self.now
                # The state stays as the restart baseline: one restart per changed container is
                # the update itself; more than that later is a crash, judged by recovery.
                patches[pod.name] = {
                    "metadata": {
                        "labels": labels,
                        "annotations": {naming.ANNOTATION_INPLACE_STATE: json.dumps(state, sort_keys=True)},
                    }
                }
            self.actions.append(
                Action(
                    PATCH_IMAGE,
                    inst.group,
                    inst.role,
                    inst.ordinal,
                    self.update_hash,
                    "in-place update complete",
                    pod_names=[p.name for p in finish],
                    patches=patches,
                )
            )
        if failing:
            self.blocked.append(
                Blocked(
                    inst.group,
                    inst.role,
                    f"in-place update of {inst.role}-{inst.ordinal} is not completing ({failing}); set a "
                    "working image or roll back",
                    KIND_FAILING,
                )
            )

    def _patch_images(self, inst: InstanceObs, pods: list[PodObs]) -> None:
        target_role = self.role_data_of(self.update_hash, inst.role)
        if target_role is None:
            return
        patches = {}
        for pod in pods:
            images = template_images(target_role, pod.index)
            # A merge patch replaces lists whole, so every container is sent, with its new image.
            merged = []
            changed = False
            baseline = {}
            statuses = {cs.get("name"): cs for cs in (pod.raw.get("status") or {}).get("containerStatuses") or []}
            for c in (pod.raw.get("spec") or {}).get("containers") or []:
                want = images.get(c.get("name"))
                merged.append({**c, "image": want} if want else c)
                cs = statuses.get(c["name"]) or {}
                # A container is part of the update when its spec or what it runs differs from the
                # target: after a lost or malformed state annotation the spec may already say the
                # new image while the old one still runs, and that must not pass as done.
                if want and (want != c.get("image") or (cs.get("image") and cs.get("image") != want)):
                    changed = changed or want != c.get("image")
                    baseline[c["name"]] = {
                        "image": c.get("image"),
                        "runningImage": cs.get("image"),
                        "imageID": cs.get("imageID"),
                        "containerID": cs.get("containerID"),
                        "restartCount": int(cs.get("restartCount") or 0),
                    }
            state = {
                "targetRevision": self.update_hash,
                "targetRoleHash": self.update_role_hashes[inst.role],
                "startedAt": self.now,
                "containers": baseline,
            }
            # The drain mark goes in the same write: from here the readiness gate (False until the
            # new image is Ready) keeps the pod out of routing.
            annotations: dict[str, Any] = {naming.ANNOTATION_INPLACE_STATE: json.dumps(state, sort_keys=True)}
            if pod.draining_since is not None:
                annotations[naming.ANNOTATION_DRAINING] = None
            patch: dict[str, Any] = {"metadata": {"annotations": annotations}}
            if changed:
                patch["spec"] = {"containers": merged}
            patches[pod.name] = patch
        self.actions.append(
            Action(
                PATCH_IMAGE,
                inst.group,
                inst.role,
                inst.ordinal,
                self.update_hash,
                BECAUSE_UPDATE,
                pod_names=[p.name for p in pods],
                patches=patches,
            )
        )

    def init_gates(self) -> None:
        """Pods created with the InPlaceUpdateReady gate start with the condition True."""
        for group in self.observed.groups.values():
            for inst in group.instances.values():
                names = [
                    p.name
                    for p in inst.pods.values()
                    if p.has_gate and p.gate is None and p.inplace_state is None and not p.deleting
                ]
                if names:
                    self.actions.append(
                        Action(
                            SET_GATE,
                            inst.group,
                            inst.role,
                            inst.ordinal,
                            inst.revision,
                            "initialise readiness gate",
                            pod_names=names,
                            condition=_gate_condition(True, "PodCreated", self.now),
                        )
                    )

    # -----------------------------------------------------------------------------------------

    def undrain_cancelled(self) -> None:
        """A drain whose pod is no longer to be deleted must be undone, or it stays unroutable."""
        for group in self.observed.groups.values():
            for inst in group.instances.values():
                names = [
                    p.name
                    for p in inst.pods.values()
                    if p.draining_since is not None and not p.deleting and p.name not in self.removing_pods
                ]
                if names:
                    unmark = {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: None}}}
                    self.actions.append(
                        Action(
                            UNDRAIN,
                            inst.group,
                            inst.role,
                            inst.ordinal,
                            inst.revision,
                            "drain cancelled",
                            pod_names=names,
                            patches={n: unmark for n in names},
                        )
                    )

    def run(self) -> Plan:
        self._revisions()
        if self.ms.strategy.type == GROUP_ROLLING:
            self.group_rolling()
        else:
            self.role_rolling()
            if self.ms.strategy.type == IN_PLACE:
                self.init_gates()
        self.undrain_cancelled()
        status = build_status(self)
        referenced = set(status.get("referencedRevisions") or [])
        revision_actions = list(self.update.actions)
        revision_actions += gc_actions(
            self.history, referenced=referenced | {self.update_hash}, limit=self.ms.revision_history_limit
        )
        return Plan(
            self.actions,
            revision_actions,
            status,
            self.blocked,
            self.requeue_after,
            self.update_hash,
            status["currentRevision"],
        )


class _SubInstance:
    """A view of an instance restricted to some of its pods (to start the protocol on them)."""

    def __init__(self, inst: InstanceObs, pods: list[PodObs]):
        self.group, self.role, self.ordinal, self.revision = inst.group, inst.role, inst.ordinal, inst.revision
        self.pods = {p.index: p for p in pods}


class _RoleState:
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
        return max(self.replicas - self.partition, 0)

    def started_progress(self) -> Fraction:
        if self.target == 0:
            return Fraction(1)
        return Fraction(min(self.ready_target + self.in_flight, self.target), self.target)

    def take(self, k: int) -> None:
        self.available.discard(k)
        self.in_flight += 1
        self.old_routable -= 1

    def removing_outdated(self, p: _Pass) -> int:
        return sum(
            1
            for k, inst in self.instances.items()
            if k < self.replicas and k not in self.at_target and p.being_removed_instance(inst)
        )


def _closure(role: str, coordination: Any) -> list[str]:
    seen: list[str] = []
    stack = list(coordination.depends_on(role))
    while stack:
        dep = stack.pop()
        if dep in seen:
            continue
        seen.append(dep)
        stack.extend(coordination.depends_on(dep))
    return seen


def _gate_condition(ready: bool, reason: str, now: float) -> dict[str, Any]:
    return {
        "type": naming.CONDITION_INPLACE_READY,
        "status": "True" if ready else "False",
        "reason": reason,
        "lastTransitionTime": now,
    }


def _strip_images(template: dict[str, Any] | None) -> Any:
    if not template:
        return template
    spec = dict(template.get("spec") or {})
    spec["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers") or []]
    return {**template, "spec": spec}


def _non_image_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    if int(old.get("workerReplicas") or 0) != int(new.get("workerReplicas") or 0):
        out.append("workerReplicas")
    for key in ("entryTemplate", "workerTemplate"):
        a, b = old.get(key), new.get(key)
        if (a is None) != (b is None):
            out.append(key)
            continue
        if a is None:
            continue
        names_a = [c.get("name") for c in (a.get("spec") or {}).get("containers") or []]
        names_b = [c.get("name") for c in (b.get("spec") or {}).get("containers") or []]
        if names_a != names_b:
            out.append(f"{key} containers (added, removed or reordered)")
            continue
        init_a = [c.get("image") for c in (a.get("spec") or {}).get("initContainers") or []]
        init_b = [c.get("image") for c in (b.get("spec") or {}).get("initContainers") or []]
        if init_a != init_b:
            out.append(f"{key} init container images")
        if _strip_images(a) != _strip_images(b):
            out.append(f"{key} (fields other than container images)")
    return out


def _inplace_pod_done(pod: PodObs, state: dict[str, Any], target_role: dict[str, Any]) -> bool:
    """Every changed container runs the target image with a new image ID, and containers are Ready."""
    images = template_images(target_role, pod.index)
    spec_images = {c.get("name"): c.get("image") for c in (pod.raw.get("spec") or {}).get("containers") or []}
    statuses = {cs.get("name"): cs for cs in (pod.raw.get("status") or {}).get("containerStatuses") or []}
    baseline = state.get("containers") or {}
    for name, base in baseline.items():
        want = images.get(name)
        if spec_images.get(name) != want:
            return False
        cs = statuses.get(name)
        if not cs or cs.get("image") != want or not cs.get("ready"):
            return False
        if base.get("imageID") and cs.get("imageID") == base.get("imageID") and base.get("runningImage") != want:
            # The kubelet has not visibly restarted it on the new image yet. (When the container
            # was still running the wanted image at patch time, e.g. the old image set back before
            # a bad one ever started, an unchanged image ID is exactly what success looks like.)
            return False
    conditions = (pod.raw.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "ContainersReady" and c.get("status") == "True" for c in conditions) or all(
        (statuses.get(n) or {}).get("ready") for n in spec_images
    )


@dataclass(slots=True)
class _Recorded:
    group_revision: dict[int, str]
    instance_revision: dict[tuple[int, str, int], str]
    desired: dict[int, dict[str, int]]


def _recorded_revisions(status: dict[str, Any]) -> _Recorded:
    """The revision references persisted in status by earlier passes (they survive restarts).

    ``groups[].revision`` / ``targetRevision`` per group; ``groups[].instanceRevisions`` as
    ``{"role/ordinal": hash}`` for instances on another revision than their group's; every other
    instance of a group runs the group's revision. ``roleReplicas`` is the role size then.
    """
    groups: dict[int, str] = {}
    instances: dict[tuple[int, str, int], str] = {}
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
    return _Recorded(groups, instances, desired)
