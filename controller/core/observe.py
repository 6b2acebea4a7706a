"""Observation: pods -> role instances -> ServingGroups.

Everything here is derived from the pods' labels, annotations and status, never from memory, so a
restarted controller sees exactly what the previous one saw. A pod belongs to instance
(group ordinal, role, instance ordinal) by its labels; an instance is Ready only when all its
``1 + workerReplicas`` pods exist, are Ready and none is being drained or deleted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import naming
from .ports import Obj

# Container waiting reasons that mean "this will not become Ready by itself".
FAILING_REASONS = frozenset({"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName", "RunContainerError"})


@dataclass(slots=True)
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
    has_gate: bool
    inplace_state: dict[str, Any] | None
    inplace_state_error: str | None
    raw: Obj = field(repr=False)

    @property
    def failed(self) -> bool:
        return self.phase == "Failed"


@dataclass(slots=True)
class InstanceObs:
    group: int
    role: str
    ordinal: int
    pods: dict[int, PodObs] = field(default_factory=dict)  # by pod index

    @property
    def entry(self) -> PodObs | None:
        return self.pods.get(0) or (next(iter(self.pods.values())) if self.pods else None)

    @property
    def revision(self) -> str:
        entry = self.entry
        return entry.revision if entry else ""

    @property
    def role_hash(self) -> str:
        entry = self.entry
        return entry.role_hash if entry else ""

    def complete(self, expected_pods: int) -> bool:
        return len(self.pods) >= expected_pods and all(i in self.pods for i in range(expected_pods))

    def ready(self, expected_pods: int) -> bool:
        if not self.complete(expected_pods):
            return False
        for pod in self.pods.values():
            if not pod.ready or pod.deleting or pod.draining_since is not None:
                return False
        return True

    @property
    def deleting(self) -> bool:
        return any(p.deleting for p in self.pods.values())

    @property
    def draining(self) -> bool:
        return any(p.draining_since is not None and not p.deleting for p in self.pods.values())

    @property
    def lost(self) -> bool:
        """A pod failed for good (phase Failed): recovery must act."""
        return any(p.failed and not p.deleting for p in self.pods.values())

    @property
    def unschedulable(self) -> str | None:
        for pod in self.pods.values():
            if pod.unschedulable and not pod.deleting:
                return pod.unschedulable
        return None

    @property
    def failing(self) -> str | None:
        for pod in self.pods.values():
            if pod.failing_reason and not pod.deleting:
                return pod.failing_reason
        return None

    @property
    def updating_in_place(self) -> bool:
        return any(p.gate is False or (p.has_gate and p.gate is None and p.inplace_state is not None) for p in self.pods.values())


@dataclass(slots=True)
class GroupObs:
    ordinal: int
    instances: dict[tuple[str, int], InstanceObs] = field(default_factory=dict)

    def role_instances(self, role: str) -> list[InstanceObs]:
        return [inst for (r, _), inst in self.instances.items() if r == role]

    @property
    def pod_count(self) -> int:
        return sum(len(i.pods) for i in self.instances.values())

    @property
    def deleting(self) -> bool:
        return any(i.deleting for i in self.instances.values())

    def revisions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for inst in self.instances.values():
            for pod in inst.pods.values():
                counts[pod.revision] = counts.get(pod.revision, 0) + 1
        return counts

    @property
    def revision(self) -> str:
        """The revision the group runs: that of most of its pods (they agree outside recovery)."""
        counts = self.revisions()
        if not counts:
            return ""
        return max(sorted(counts), key=lambda r: counts[r])


@dataclass(slots=True)
class Observed:
    groups: dict[int, GroupObs]
    in_flight: Mapping[str, int]
    foreign: list[str]  # pods with our name label but unparseable identity labels

    def group(self, ordinal: int) -> GroupObs | None:
        return self.groups.get(ordinal)


def _int_label(labels: dict[str, str], key: str) -> int | None:
    value = labels.get(key)
    if value is None or not value.isdigit():
        return None
    return int(value)


def _condition(conditions: list[dict[str, Any]], ctype: str) -> bool | None:
    for cond in conditions:
        if cond.get("type") == ctype:
            return cond.get("status") == "True"
    return None


def parse_pod(pod: Obj) -> PodObs | None:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    group = _int_label(labels, naming.LABEL_GROUP_ORDINAL)
    ordinal = _int_label(labels, naming.LABEL_ROLE_ORDINAL)
    index = _int_label(labels, naming.LABEL_POD_INDEX)
    role = labels.get(naming.LABEL_ROLE)
    if group is None or ordinal is None or index is None or not role:
        return None
    annotations = meta.get("annotations") or {}
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    conditions = status.get("conditions") or []
    ready = False
    scheduled = bool(spec.get("nodeName"))
    unschedulable = None
    gate = None
    for cond in conditions:
        ctype = cond.get("type")
        if ctype == "Ready":
            ready = cond.get("status") == "True"
        elif ctype == "PodScheduled":
            if cond.get("status") == "True":
                scheduled = True
            elif cond.get("reason") == "Unschedulable":
                unschedulable = cond.get("message") or "no node fits the pod"
        elif ctype == naming.CONDITION_INPLACE_READY:
            gate = cond.get("status") == "True"
    phase = status.get("phase") or "Pending"
    restarts = 0
    failing = None
    for cs in status.get("containerStatuses") or []:
        restarts += int(cs.get("restartCount") or 0)
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in FAILING_REASONS:
            failing = waiting["reason"]
    draining = annotations.get(naming.ANNOTATION_DRAINING)
    draining_since: float | None = None
    if draining is not None:
        try:
            draining_since = float(draining)
        except ValueError:
            # A mark we cannot read still means "do not route"; treat it as started long ago so
            # the drain timeout ends it rather than leaving the pod unroutable forever.
            draining_since = float("-inf")
    state_raw = annotations.get(naming.ANNOTATION_INPLACE_STATE)
    state = None
    state_error = None
    if state_raw:
        try:
            state = json.loads(state_raw)
            if not isinstance(state, dict) or "targetRevision" not in state:
                state, state_error = None, "in-place update annotation lacks targetRevision"
        except ValueError:
            state_error = "in-place update annotation is not JSON"
    has_gate = any(g.get("conditionType") == naming.CONDITION_INPLACE_READY for g in spec.get("readinessGates") or [])
    return PodObs(
        name=meta.get("name") or "",
        uid=meta.get("uid") or "",
        group=group,
        role=role,
        ordinal=ordinal,
        index=index,
        revision=labels.get(naming.LABEL_REVISION) or "",
        role_hash=labels.get(naming.LABEL_ROLE_TEMPLATE_HASH) or "",
        phase=phase,
        ready=ready and phase == "Running",
        scheduled=scheduled,
        unschedulable=unschedulable,
        deleting=bool(meta.get("deletionTimestamp")),
        draining_since=draining_since,
        node=spec.get("nodeName"),
        restarts=restarts,
        failing_reason=failing,
        gate=gate,
        has_gate=has_gate,
        inplace_state=state,
        inplace_state_error=state_error,
        raw=pod,
    )


def observe(pods: list[Obj], in_flight: Mapping[str, int] | None = None) -> Observed:
    groups: dict[int, GroupObs] = {}
    foreign: list[str] = []
    for raw in pods:
        pod = parse_pod(raw)
        if pod is None:
            foreign.append((raw.get("metadata") or {}).get("name") or "?")
            continue
        group = groups.get(pod.group)
        if group is None:
            group = groups[pod.group] = GroupObs(pod.group)
        key = (pod.role, pod.ordinal)
        inst = group.instances.get(key)
        if inst is None:
            inst = group.instances[key] = InstanceObs(pod.group, pod.role, pod.ordinal)
        inst.pods[pod.index] = pod
    return Observed(groups, in_flight or {}, foreign)
