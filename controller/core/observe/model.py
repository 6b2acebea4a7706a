"""Observation's values: pods -> role instances -> ServingGroups, each frozen once built.

Everything here is derived from the pods' labels, annotations and status, never from memory, so a
restarted controller sees exactly what the previous one saw. A pod belongs to instance
(group ordinal, role, instance ordinal) by its labels; an instance is Ready only when all its
``1 + workerReplicas`` pods exist, are Ready and none is being drained or deleted.

The values are frozen: nothing changes an observed pod, instance or group after it is built, so
what a pass derives from one (``passcache``) is keyed by the object itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import digests
from ..ports import Obj
from .frozen import Frozen

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
# observe compares a group's pods with the previous pass's by identity (``paths.group_of``).
# Nothing changes a PodObs after ``parse_pod`` built it. It is not a frozen dataclass because a
# frozen one sets each of its 27 fields through ``object.__setattr__``: several times the cost of
# building it, paid for 32,000 pods on a cold pass.
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

    @property
    def failed(self) -> bool:
        return self.phase == "Failed"

    @property
    def draining(self) -> bool:
        """Marked draining and not yet terminating (a terminating pod's drain is over)."""
        return self.draining_since is not None and not self.deleting


class _InstanceFields:
    """``InstanceObs``'s fields, writable: ``_instance`` sets them, then freezes it (``frozen``)."""

    __slots__ = (
        "group",
        "role",
        "ordinal",
        "pods",
        "revision",
        "role_hash",
        "all_ready",
        "deleting",
        "draining",
        "being_removed",
        "lost",
        "failing",
        "unschedulable",
        "updating_in_place",
        "contiguous",
    )
    group: int
    role: str
    ordinal: int
    pods: Mapping[int, PodObs]  # by pod index
    revision: str
    role_hash: str
    all_ready: bool  # every present pod Ready, none draining or deleting
    deleting: bool  # some pod terminating
    draining: bool  # some pod marked draining (and not yet terminating)
    being_removed: bool  # some pod draining or terminating
    lost: bool  # a pod failed for good (phase Failed): recovery must act
    failing: str | None  # CrashLoopBackOff & co
    unschedulable: str | None
    updating_in_place: bool
    contiguous: int  # pod indexes 0, 1, ... present without a gap (an instance of n pods: n)


class InstanceObs(Frozen, _InstanceFields):
    """One role instance, frozen: its aggregates are taken once, when it is built
    (``instance_of``), because planning reads them often. A frozen ``__slots__`` class rather than
    a named tuple or a frozen dataclass: its fields are read at slot speed and it is as cheap to
    build as a tuple (``frozen``)."""

    __slots__ = ()
    FIELDS = _InstanceFields.__slots__

    def __new__(
        cls,
        group: int,
        role: str,
        ordinal: int,
        pods: Mapping[int, PodObs],
        revision: str = "",
        role_hash: str = "",
        all_ready: bool = False,
        deleting: bool = False,
        draining: bool = False,
        being_removed: bool = False,
        lost: bool = False,
        failing: str | None = None,
        unschedulable: str | None = None,
        updating_in_place: bool = False,
        contiguous: int = 0,
    ) -> InstanceObs:
        return _instance(
            group,
            role,
            ordinal,
            pods,
            revision,
            role_hash,
            all_ready,
            deleting,
            draining,
            being_removed,
            lost,
            failing,
            unschedulable,
            updating_in_place,
            contiguous,
        )

    def failure(self) -> str | None:
        """Why it will not become Ready by itself, with its pods' restarts ("CrashLoopBackOff, 4
        restarts"), or None when it is not failing."""
        if self.failing is None and not self.lost:
            return None
        what = self.failing or "a pod Failed"
        restarts = max((p.restarts for p in self.pods.values()), default=0)
        return f"{what}, {restarts} restart{'' if restarts == 1 else 's'}" if restarts else what

    @property
    def entry(self) -> PodObs | None:
        return self.pods.get(0) or (next(iter(self.pods.values())) if self.pods else None)

    def complete(self, expected_pods: int) -> bool:
        """Pods 0 .. expected_pods - 1 all exist."""
        return self.contiguous >= expected_pods

    def ready(self, expected_pods: int) -> bool:
        return self.all_ready and self.complete(expected_pods)


def _contiguous(pods: Mapping[int, PodObs]) -> int:
    """Pod indexes 0, 1, ... present without a gap: {0, 1, 3} -> 2."""
    contiguous = 0
    while contiguous in pods:
        contiguous += 1
    return contiguous


def instance_of(
    group: int, role: str, ordinal: int, pods: dict[int, PodObs], revision_counts: dict[str, int] | None = None
) -> InstanceObs:
    """The instance of these pods, its aggregates taken in one walk over them. ``revision_counts``:
    the group's pods per revision, this instance's pods added to it (the group's tally is taken in
    this same walk)."""
    entry = pods.get(0) or next(iter(pods.values()))
    all_ready = True
    deleting = draining = lost = updating = False
    failing = unschedulable = None
    for pod in pods.values():
        if revision_counts is not None:
            revision_counts[pod.revision] = revision_counts.get(pod.revision, 0) + 1
        if pod.deleting:
            deleting = True
            all_ready = False
            continue
        if pod.draining_since is not None:
            draining = True
            all_ready = False
        if not pod.ready:
            all_ready = False
        if pod.phase == "Failed":
            lost = True
        if pod.failing_reason and failing is None:
            failing = pod.failing_reason
        if pod.unschedulable and unschedulable is None:
            unschedulable = pod.unschedulable
        if pod.gate is False or (pod.has_gate and pod.gate is None and pod.inplace_state is not None):
            updating = True
    return _instance(
        group,
        role,
        ordinal,
        pods,
        entry.revision,
        entry.role_hash,
        all_ready,
        deleting,
        draining,
        deleting or draining,
        lost,
        failing,
        unschedulable,
        updating,
        _contiguous(pods),
    )


_new_object = object.__new__


def _instance(
    group: int,
    role: str,
    ordinal: int,
    pods: Mapping[int, PodObs],
    revision: str,
    role_hash: str,
    all_ready: bool,
    deleting: bool,
    draining: bool,
    being_removed: bool,
    lost: bool,
    failing: str | None,
    unschedulable: str | None,
    updating_in_place: bool,
    contiguous: int,
) -> InstanceObs:
    """An ``InstanceObs`` of these fields: set on a writable one, then frozen (``frozen``). Every
    field positional: ``instance_of`` calls this for each instance it builds (the seed example's
    runs build ~150,000), and keywords or the class's own call would add to each."""
    inst = _new_object(_InstanceFields)
    inst.group = group
    inst.role = role
    inst.ordinal = ordinal
    inst.pods = pods
    inst.revision = revision
    inst.role_hash = role_hash
    inst.all_ready = all_ready
    inst.deleting = deleting
    inst.draining = draining
    inst.being_removed = being_removed
    inst.lost = lost
    inst.failing = failing
    inst.unschedulable = unschedulable
    inst.updating_in_place = updating_in_place
    inst.contiguous = contiguous
    inst.__class__ = InstanceObs
    return inst


class _GroupFields:
    """``GroupObs``'s fields, writable: ``GroupObs.__new__`` sets them, then freezes it (``frozen``)."""

    __slots__ = (
        "ordinal",
        "instances",
        "revision_counts",
        "revision",
        "deleting",
        "being_removed",
        "unschedulable",
        "pod_count",
    )
    ordinal: int
    instances: Mapping[tuple[str, int], InstanceObs]
    revision_counts: Mapping[str, int]  # pods per revision
    revision: str  # the revision most of its pods run (they agree outside recovery)
    deleting: bool
    being_removed: bool
    unschedulable: bool  # some instance has a pod the scheduler cannot place
    pod_count: int


class GroupObs(Frozen, _GroupFields):
    """One ServingGroup, frozen: built once from its pods (``group_of_pods``). What the planner and
    the view derive from it is kept by the caller's ``passcache.PassCache``, keyed by the group."""

    __slots__ = ()
    FIELDS = _GroupFields.__slots__

    def __new__(
        cls,
        ordinal: int,
        instances: Mapping[tuple[str, int], InstanceObs],
        revision_counts: Mapping[str, int],
        revision: str = "",
        deleting: bool = False,
        being_removed: bool = False,
        unschedulable: bool = False,
        pod_count: int = 0,
    ) -> GroupObs:
        group = _new_object(_GroupFields)
        group.ordinal = ordinal
        group.instances = instances
        group.revision_counts = revision_counts
        group.revision = revision
        group.deleting = deleting
        group.being_removed = being_removed
        group.unschedulable = unschedulable
        group.pod_count = pod_count
        group.__class__ = GroupObs
        return group

    def running(self) -> digests.Running:
        """What its pods run (``digests.running``), for the record of digests on the revisions."""
        return digests.running(p for inst in self.instances.values() for p in inst.pods.values())

    def role_instances(self, role: str) -> list[InstanceObs]:
        return [inst for (r, _), inst in self.instances.items() if r == role]

    def revisions(self) -> Mapping[str, int]:
        return self.revision_counts


def group_of_pods(ordinal: int, pods: list[PodObs], previous: GroupObs | None = None) -> GroupObs:
    """The group of these pods (in list order: a pod's instance is made when its first pod comes).

    ``previous``: an earlier group of the same ordinal. An instance is a function of its group
    ordinal, role, instance ordinal and pods in order, so one whose pods are the very parses (same
    indexes, same order, the same ``PodObs`` objects) of an instance of ``previous`` is that
    instance, taken as it is: what the planner and the view keep per instance (by identity) stays
    valid. Worked example: the seed example's one group of 160 instances, one pod changed, keeps
    159 of its instances."""
    by_instance: dict[tuple[str, int], dict[int, PodObs]] = {}
    current: dict[int, PodObs] | None = None
    role, instance = None, -1
    for pod in pods:
        if current is None or instance != pod.ordinal or role != pod.role:
            role, instance = pod.role, pod.ordinal
            current = by_instance.get((role, instance))
            if current is None:
                current = by_instance[(role, instance)] = {}
        current[pod.index] = pod
    counts: dict[str, int] = {}
    instances: dict[tuple[str, int], InstanceObs] = {}
    # The group's flags and pod count taken in the walk that builds its instances: four generator
    # walks over them cost more than the instances' own building (the seed example's 160-instance
    # group, rebuilt on most passes: ~700,000 generator steps a run).
    deleting = being_removed = unschedulable = False
    pod_count = 0
    before = previous.instances if previous is not None else _EMPTY
    for key, members in by_instance.items():
        inst = before.get(key)
        if inst is not None and _same_pods(inst.pods, members):
            for pod in members.values():
                counts[pod.revision] = counts.get(pod.revision, 0) + 1
        else:
            inst = instance_of(ordinal, key[0], key[1], members, counts)
        instances[key] = inst
        deleting = deleting or inst.deleting
        being_removed = being_removed or inst.being_removed
        unschedulable = unschedulable or inst.unschedulable is not None
        pod_count += len(members)
    return GroupObs(ordinal, instances, counts, _most_run(counts), deleting, being_removed, unschedulable, pod_count)


_EMPTY: Mapping[tuple[str, int], InstanceObs] = {}  # read-only: no previous group


def _same_pods(kept: Mapping[int, PodObs], members: dict[int, PodObs]) -> bool:
    """The same pod indexes in the same order, each the very same parse (``PodObs`` is by identity)."""
    if len(kept) != len(members):
        return False
    for (i, pod), (j, other) in zip(kept.items(), members.items()):
        if i != j or pod is not other:
            return False
    return True


def _most_run(counts: Mapping[str, int]) -> str:
    """The revision most pods run; on a tie the first in name order: {"b": 2, "a": 2} -> "a"."""
    if len(counts) == 1:
        return next(iter(counts))
    return max(sorted(counts), key=lambda r: counts[r]) if counts else ""


@dataclass(frozen=True, slots=True)
class Observed:
    groups: Mapping[int, GroupObs]
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
