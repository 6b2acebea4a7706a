"""Reading one pod: its object -> ``PodObs``, or None when its identity labels cannot be read.

This runs for every pod version the controller meets (32,000 pods in ``bench planner`` on a cold
pass): ``parse_pod`` reads the object in a few named steps, each reading its part once; ``paths``
keeps each parse for as long as the pod's (uid, resourceVersion) stands.
"""

from __future__ import annotations

import json
from typing import Any

from .. import digests, naming
from ..ports import Obj
from .model import CRASH_LOOP, FAILING_REASONS, PodObs


def _seconds(value: Any) -> float | None:
    """A condition time as clock seconds: the core writes numbers, an API server RFC 3339."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        from datetime import datetime

        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _restarts_above_baseline(state: dict[str, Any], status: dict[str, Any]) -> str | None:
    """Restart counts judged against the in-place update's recorded baseline.

    The update itself restarts each changed container once, so that one restart is expected; a
    container that is not Ready and restarted more than that since (baseline + 1) is crashing.
    Example: baseline restartCount 2 -> 3 after the update is fine; 4 and not Ready is a crash.
    """
    baseline = state.get("containers") or {}
    for cs in status.get("containerStatuses") or ():
        base = baseline.get(cs.get("name"))
        if not isinstance(base, dict) or cs.get("ready"):
            continue
        try:
            allowed = int(base.get("restartCount") or 0) + 1
        except (TypeError, ValueError):
            continue
        if int(cs.get("restartCount") or 0) > allowed:
            return "RestartsAboveInPlaceBaseline"
    return None


_L_GROUP = naming.LABEL_GROUP_ORDINAL
_L_ORDINAL = naming.LABEL_ROLE_ORDINAL
_L_INDEX = naming.LABEL_POD_INDEX
_L_ROLE = naming.LABEL_ROLE
_L_REVISION = naming.LABEL_REVISION
_L_ROLE_HASH = naming.LABEL_ROLE_TEMPLATE_HASH
_A_DRAINING = naming.ANNOTATION_DRAINING
_A_INPLACE = naming.ANNOTATION_INPLACE_STATE
_A_VERIFICATION = naming.ANNOTATION_VERIFICATION
_C_GATE = naming.CONDITION_INPLACE_READY
_EMPTY: dict[str, Any] = {}


def parse_pod(pod: Obj) -> PodObs | None:
    """One pod's observation, read in named steps: conditions, containers, marks.

    This runs for every pod version the controller meets (32,000 pods on a cold pass of the
    benchmark), so each step reads its part of the object once and hands back plain values."""
    meta = pod.get("metadata") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    try:  # the identity, read here rather than in a step of its own: one call fewer a pod
        group = int(labels[_L_GROUP])
        ordinal = int(labels[_L_ORDINAL])
        index = int(labels[_L_INDEX])
        role = labels[_L_ROLE]
    except (KeyError, ValueError, TypeError):
        return None  # not ours to count
    if group < 0 or ordinal < 0 or index < 0 or not role:
        return None
    annotations = meta.get("annotations") or _EMPTY
    status = pod.get("status") or _EMPTY
    spec = pod.get("spec") or _EMPTY
    node = spec.get("nodeName")
    ready, scheduled, unschedulable, gate, gate_since, leaving = _read_conditions(status, bool(node))
    phase = status.get("phase") or "Pending"
    restarts, failing, crashed_since_ready = _read_containers(status)
    if annotations:
        draining_since, state, state_error, verification = _read_marks(annotations)
        leaving = leaving or draining_since is not None
    else:
        draining_since = state = state_error = verification = None
    if failing is None and (crashed_since_ready or state is not None):  # most pods: neither
        failing = _failing_between_restarts(state, state_error, status, crashed_since_ready=crashed_since_ready)
    gates = spec.get("readinessGates")
    has_gate = bool(gates) and any(g.get("conditionType") == _C_GATE for g in gates)
    digest, image_digests = digests.pod_digests(pod)
    return PodObs(
        meta.get("name") or "",
        meta.get("uid") or "",
        group,
        role,
        ordinal,
        index,
        labels.get(_L_REVISION) or "",
        labels.get(_L_ROLE_HASH) or "",
        phase,
        ready and phase == "Running",
        scheduled,
        unschedulable,
        bool(meta.get("deletionTimestamp")),
        draining_since,
        node,
        restarts,
        failing,
        gate,
        gate_since,
        has_gate,
        state,
        state_error,
        verification,
        str(meta.get("resourceVersion") or ""),
        digest,
        image_digests,
        leaving,
        pod,
    )


def _read_conditions(
    status: dict[str, Any], on_node: bool
) -> tuple[bool, bool, str | None, bool | None, float | None, bool]:
    """(Ready, scheduled, why unschedulable, in-place gate, gate since, leaving) from the conditions.

    A pod with a node is scheduled whatever its PodScheduled says; a gate condition that is False
    means the pod is leaving the endpoints (an in-place update took it out)."""
    ready = False
    scheduled = on_node
    unschedulable = None
    gate = None
    gate_since = None
    leaving = False
    for cond in status.get("conditions") or ():
        ctype = cond.get("type")
        if ctype == "Ready":
            ready = cond.get("status") == "True"
        elif ctype == "PodScheduled":
            if cond.get("status") == "True":
                scheduled = True
            elif cond.get("reason") == "Unschedulable":
                unschedulable = cond.get("message") or "no node fits the pod"
        elif ctype == _C_GATE:
            said = cond.get("status")
            gate = said == "True"
            gate_since = _seconds(cond.get("lastTransitionTime"))
            leaving = leaving or said == "False"
    return ready, scheduled, unschedulable, gate, gate_since, leaving


def _read_containers(status: dict[str, Any]) -> tuple[int, str | None, bool]:
    """(restarts, failing reason, crashed since Ready) over the container statuses.

    Failing is the last container waiting for a reason of ``FAILING_REASONS``; crashed since Ready
    is a container that restarted, is not Ready, and last exited with an error code."""
    restarts = 0
    failing = None
    crashed_since_ready = False
    for cs in status.get("containerStatuses") or ():
        count = int(cs.get("restartCount") or 0)
        restarts += count
        state = cs.get("state")
        if state:
            waiting = state.get("waiting")
            if waiting and waiting.get("reason") in FAILING_REASONS:
                failing = waiting["reason"]
        if count and not cs.get("ready"):
            last = (cs.get("lastState") or _EMPTY).get("terminated")
            if last and last.get("exitCode") not in (0, None):
                crashed_since_ready = True
    return restarts, failing, crashed_since_ready


def _read_marks(
    annotations: dict[str, Any],
) -> tuple[float | None, dict[str, Any] | None, str | None, dict[str, Any] | None]:
    """(draining since, in-place state, why the state is unreadable, verification) from our marks."""
    draining_since: float | None = None
    draining = annotations.get(_A_DRAINING)
    if draining is not None:
        try:
            draining_since = float(draining)
        except ValueError:
            # A mark we cannot read still means "do not route"; treat it as started long
            # ago so the drain timeout ends it rather than leaving the pod unroutable.
            draining_since = float("-inf")
    state, state_error = _inplace_state(annotations.get(_A_INPLACE))
    verification = None
    verification_raw = annotations.get(_A_VERIFICATION)
    if verification_raw:
        try:
            verification = json.loads(verification_raw)
        except ValueError:
            verification = None  # unreadable: as if never verified (it is verified again)
        if not isinstance(verification, dict):
            verification = None
    return draining_since, state, state_error, verification


def _inplace_state(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The in-place update's recorded state, or None with the reason it cannot be used."""
    if not raw:
        return None, None
    try:
        state = json.loads(raw)
    except ValueError:
        return None, "in-place update annotation is not JSON"
    if not isinstance(state, dict) or "targetRevision" not in state:
        return None, "in-place update annotation lacks targetRevision"
    return state, None


def _failing_between_restarts(
    state: dict[str, Any] | None, state_error: str | None, status: dict[str, Any], *, crashed_since_ready: bool
) -> str | None:
    """Why a pod with no failing waiting reason still fails, if it does.

    After a completed in-place update its recorded restart baseline judges the restarts. Otherwise,
    between two back-offs the kubelet runs the container again and its waiting reason is gone until
    it exits anew; one that last exited with an error and has not been Ready since is still
    crash-looping. Read so, the instance stays Failed (and the phase Degraded) through its restarts.
    An in-place update restarts containers on purpose: its own baseline judges those."""
    if state is not None and state.get("completed"):
        return _restarts_above_baseline(state, status)
    if crashed_since_ready and state is None and state_error is None:
        return CRASH_LOOP
    return None
