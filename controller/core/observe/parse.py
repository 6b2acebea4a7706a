"""Reading one pod: its object -> ``PodObs``, or None when its identity labels cannot be read.

This runs for every pod version the controller meets (32,000 pods in ``bench planner`` on a cold
pass), so it is one lean function rather than named steps; ``paths`` keeps each parse for as long
as the pod's (uid, resourceVersion) stands.
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
    # This runs for every pod on every pass (32,000 pods in the benchmark): keep it lean.
    meta = pod.get("metadata") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    try:
        group = int(labels[_L_GROUP])
        ordinal = int(labels[_L_ORDINAL])
        index = int(labels[_L_INDEX])
        role = labels[_L_ROLE]
    except (KeyError, ValueError, TypeError):
        return None
    if group < 0 or ordinal < 0 or index < 0 or not role:
        return None
    annotations = meta.get("annotations") or _EMPTY
    status = pod.get("status") or _EMPTY
    spec = pod.get("spec") or _EMPTY
    ready = False
    node = spec.get("nodeName")
    scheduled = bool(node)
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
            gate = cond.get("status") == "True"
            gate_since = _seconds(cond.get("lastTransitionTime"))
            if cond.get("status") == "False":
                leaving = True
    phase = status.get("phase") or "Pending"
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
    draining_since: float | None = None
    state = None
    state_error = None
    verification = None
    if annotations:
        draining = annotations.get(_A_DRAINING)
        if draining is not None:
            leaving = True
            try:
                draining_since = float(draining)
            except ValueError:
                # A mark we cannot read still means "do not route"; treat it as started long
                # ago so the drain timeout ends it rather than leaving the pod unroutable.
                draining_since = float("-inf")
        state_raw = annotations.get(_A_INPLACE)
        if state_raw:
            try:
                state = json.loads(state_raw)
                if not isinstance(state, dict) or "targetRevision" not in state:
                    state, state_error = None, "in-place update annotation lacks targetRevision"
            except ValueError:
                state_error = "in-place update annotation is not JSON"
        verification_raw = annotations.get(_A_VERIFICATION)
        if verification_raw:
            try:
                verification = json.loads(verification_raw)
            except ValueError:
                verification = None  # unreadable: as if never verified (it is verified again)
            if not isinstance(verification, dict):
                verification = None
    if state is not None and state.get("completed") and failing is None:
        failing = _restarts_above_baseline(state, status)
    elif failing is None and crashed_since_ready and state is None and state_error is None:
        # Between two back-offs the kubelet runs the container again and its waiting reason is
        # gone until it exits anew; one that last exited with an error and has not been Ready
        # since is still crash-looping. Read so, the instance stays Failed (and the phase
        # Degraded) through its restarts. An in-place update restarts containers on purpose: its
        # own baseline judges those.
        failing = CRASH_LOOP
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
