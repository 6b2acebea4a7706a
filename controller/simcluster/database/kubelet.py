"""The simulated kubelet of the live app, as pure functions of a pod and the simulated time.

The in-memory simulator (``controller.simcluster.memory.kubelet``) keeps each pod's runtime in memory and sets
timers; the live app cannot (any process may die at any moment), so here the runtime state and the
next deadline live in the pod itself, in the annotation ``sim.rolloutui.io/kubelet``::

    {"stage": "schedule" | "starting" | "loading" | "ready" | "backoff" | "terminating",
     "at": <simulated time of the next step, or null>, "attempt": <start attempts>,
     "running": {container: image it runs}, "restarts": {container: count}, "startedAt": t}

and ``SimObject.next_at`` mirrors ``at`` so the tick finds due pods with one indexed query. The
semantics are the in-memory kubelet's (same timings, same per-image behaviour, same status shape):

    created --schedule--> bound --pull+start--> running, loading --load--> Ready
    crash image: --load--> exits, restartCount+1, CrashLoopBackOff 10 s, 20 s, ... 300 s, then load again
    image patched in place: restart (restartCount+1), pull+start+load again; UID, node and IP kept
    deleted --terminate (at most the grace period)--> removed; its GPUs are free only then

Example with timing {schedule: 1, pull: 5, start: 2, load: 30}: a pod created at t=100 is bound at
101, running at 108 and Ready at 138. Pod ``Ready`` = every container ready AND every readiness gate
condition True (``ready_conditions``), recomputed whenever the controller sets a gate.
"""

from __future__ import annotations

import json
import random
from typing import Any

from controller.core import naming
from controller.core.ports import Obj
from controller.simcluster.config import ClusterConfig, Span
from controller.simcluster.memory.kubelet import (
    CRASH_BACKOFF_MAX,
    CRASH_BACKOFF_START,
    image_id,
    node_lost_status,
    ready_conditions,
)
from controller.simcluster.objects import rfc3339

ANNOTATION_KUBELET = "sim.rolloutui.io/kubelet"

SCHEDULE, STARTING, LOADING, READY, BACKOFF, TERMINATING = (
    "schedule",
    "starting",
    "loading",
    "ready",
    "backoff",
    "terminating",
)


def kubelet_state(pod: Obj) -> dict[str, Any]:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_KUBELET)
    if not raw:
        return {"stage": SCHEDULE, "at": None, "attempt": 0, "running": {}, "restarts": {}}
    try:
        return json.loads(raw)
    except ValueError:
        return {"stage": SCHEDULE, "at": None, "attempt": 0, "running": {}, "restarts": {}}


def with_state(pod: Obj, state: dict[str, Any]) -> Obj:
    meta = dict(pod.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations[ANNOTATION_KUBELET] = json.dumps(state, sort_keys=True, separators=(",", ":"))
    meta["annotations"] = annotations
    return {**pod, "metadata": meta}


def draw(config: ClusterConfig, pod: Obj, phase: str, attempt: int = 0, span: Span | None = None) -> float:
    # One random stream per (pod uid, purpose, attempt): any process computes the same draw.
    uid = (pod.get("metadata") or {}).get("uid", "")
    return (span or config.timing[phase]).draw(random.Random(f"{uid}:{phase}:{attempt}"))


def _containers(pod: Obj) -> list[Obj]:
    return list((pod.get("spec") or {}).get("containers") or [])


def _load_span(config: ClusterConfig, pod: Obj) -> Span:
    # Containers load in parallel; the pod is ready when the slowest one is.
    spans = [config.image(c.get("image", "")).load or config.timing["load"] for c in _containers(pod)]
    return max(spans, key=lambda s: s.high, default=config.timing["load"])


def _crashes(config: ClusterConfig, pod: Obj) -> list[str]:
    return [c.get("name", f"c{i}") for i, c in enumerate(_containers(pod)) if config.image(c.get("image", "")).crash]


# -- transitions (each returns the new pod; ``None`` from ``advance`` means "remove it") --------------


def on_create(pod: Obj, now: float, config: ClusterConfig) -> Obj:
    state = {"stage": SCHEDULE, "at": now + draw(config, pod, "schedule"), "attempt": 0, "running": {}, "restarts": {}}
    return with_state({**pod, "status": {"phase": "Pending", "conditions": []}}, state)


def on_bind(pod: Obj, now: float, config: ClusterConfig, node: str, host_ip: str, pod_ip: str) -> Obj:
    state = kubelet_state(pod)
    state.update(stage=STARTING, attempt=1, at=now + draw(config, pod, "pull") + draw(config, pod, "start"))
    status = dict(pod.get("status") or {})
    stamp = rfc3339(now)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.insert(0, {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp})
    status.update(
        phase="Pending", conditions=conditions, hostIP=host_ip, podIP=pod_ip, podIPs=[{"ip": pod_ip}], startTime=stamp
    )
    new = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}, "status": status}
    new = with_state(new, state)
    return {**new, "status": render_status(new, state, now)}


def unschedulable(pod: Obj, now: float, nodes: int, need: int, most_free: int) -> Obj:
    """Stays Pending with kube-scheduler's reason; retried on the next tick."""
    status = dict(pod.get("status") or {})
    message = (
        f"0/{nodes} nodes are available: {nodes} Insufficient {naming.GPU_RESOURCE} "
        f"(pod needs {need} free {naming.GPU_RESOURCE}; the most free on one node is {most_free})"
    )
    old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
    if old and old.get("status") == "False" and old.get("message") == message:
        return pod
    since = old.get("lastTransitionTime") if old and old.get("status") == "False" else rfc3339(now)
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastTransitionTime": since,
    }
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    return {**pod, "status": {**status, "phase": "Pending", "conditions": [cond, *conditions]}}


def on_delete(pod: Obj, now: float, config: ClusterConfig) -> Obj:
    """Graceful termination starts: containers stop being ready; removal after the terminate phase."""
    state = kubelet_state(pod)
    delay = draw(config, pod, "terminate")
    grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
    if grace is not None:
        delay = min(delay, float(grace))  # SIGKILL at the end of the grace period
    state.update(stage=TERMINATING, at=now + delay)
    new = with_state(pod, state)
    return {**new, "status": render_status(new, state, now)}


def on_images_changed(old: Obj, new: Obj, now: float, config: ClusterConfig) -> Obj:
    """In-place image change of a running pod: the changed containers restart from the new image."""
    state = kubelet_state(new)
    if state.get("stage") in (SCHEDULE, TERMINATING) or not (new.get("spec") or {}).get("nodeName"):
        return new  # not started yet: it will start from the spec's image anyway
    old_images = {c.get("name"): c.get("image") for c in _containers(old)}
    changed = [c.get("name") for c in _containers(new) if old_images.get(c.get("name")) != c.get("image")]
    if not changed:
        return new
    restarts = dict(state.get("restarts") or {})
    for name in changed:
        restarts[name] = int(restarts.get(name, 0)) + 1
    attempt = int(state.get("attempt", 0)) + 1
    state.update(
        stage=STARTING,
        attempt=attempt,
        restarts=restarts,
        at=now + draw(config, new, "pull", attempt) + draw(config, new, "start", attempt),
    )
    out = with_state(new, state)
    return {**out, "status": render_status(out, state, now)}


def advance(pod: Obj, now: float, config: ClusterConfig) -> Obj | None:
    """Run every kubelet step that is due at ``now`` (except scheduling, which needs the nodes)."""
    state = kubelet_state(pod)
    changed = False
    for _ in range(8):  # a tick after a long outage may owe several steps
        at = state.get("at")
        stage = state.get("stage")
        if at is None or at > now or stage == SCHEDULE:
            break
        attempt = int(state.get("attempt", 1))
        if stage == TERMINATING:
            return None
        if stage == STARTING:
            state["running"] = {c.get("name", f"c{i}"): c.get("image", "") for i, c in enumerate(_containers(pod))}
            state["startedAt"] = at
            state.update(stage=LOADING, at=at + draw(config, pod, "load", attempt, _load_span(config, pod)))
        elif stage == LOADING:
            crashing = _crashes(config, pod)
            if crashing:
                restarts = dict(state.get("restarts") or {})
                for name in crashing:
                    restarts[name] = int(restarts.get(name, 0)) + 1
                # Exit 1, then CrashLoopBackOff: 10 s after the first crash, 20 s, 40 s, ... at most 300 s.
                worst = max(restarts[name] for name in crashing)
                backoff = min(CRASH_BACKOFF_MAX, CRASH_BACKOFF_START * 2 ** (worst - 1))
                state.update(
                    stage=BACKOFF,
                    restarts=restarts,
                    attempt=attempt + 1,
                    at=at + backoff + draw(config, pod, "start", attempt + 1),
                )
            else:
                state.update(stage=READY, at=None)
        elif stage == BACKOFF:
            state["startedAt"] = at
            state.update(stage=LOADING, at=at + draw(config, pod, "load", attempt, _load_span(config, pod)))
        else:
            state["at"] = None
        changed = True
    if not changed:
        return pod
    new = with_state(pod, state)
    return {**new, "status": render_status(new, state, now)}


def fail(pod: Obj, node: str) -> Obj:
    """The node is lost: the pod fails (its removal follows)."""
    status = node_lost_status(pod.get("status") or {}, node, (pod.get("metadata") or {}).get("name"))
    return {**pod, "status": status}


# -- status -----------------------------------------------------------------------------------------


def render_status(pod: Obj, state: dict[str, Any], now: float) -> Obj:
    """The kubelet's status of the pod (the same shape as ``controller.simcluster.memory.kubelet.render_status``)."""
    status = dict(pod.get("status") or {})
    stamp = rfc3339(now)
    stage = state.get("stage")
    running = state.get("running") or {}
    restarts = state.get("restarts") or {}
    statuses = []
    all_ready = bool(_containers(pod))
    any_started = False
    for i, c in enumerate(_containers(pod)):
        name = c.get("name", f"c{i}")
        runs = running.get(name)
        is_running = stage in (LOADING, READY, TERMINATING) and runs is not None
        ready = stage == READY
        started = is_running
        any_started = any_started or started or int(restarts.get(name, 0)) > 0
        shown = runs or c.get("image", "")
        entry = {
            "name": name,
            "image": shown,
            "imageID": image_id(shown) if runs else "",
            "ready": ready,
            "started": started,
            "restartCount": int(restarts.get(name, 0)),
        }
        if is_running:
            entry["state"] = {"running": {"startedAt": rfc3339(state.get("startedAt") or now)}}
        elif stage == BACKOFF:
            entry["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
        else:
            entry["state"] = {"waiting": {"reason": "ContainerCreating"}}
        all_ready = all_ready and ready
        statuses.append(entry)
    containers_ready = all_ready and stage == READY
    if stage == SCHEDULE:
        return status
    status["containerStatuses"] = statuses
    if status.get("phase") != "Failed":  # a failed pod stays failed (phase is terminal)
        status["phase"] = "Running" if any_started else "Pending"
    status["conditions"] = ready_conditions(pod, status.get("conditions") or [], containers_ready, stamp)
    return status


def recompute_ready(pod: Obj, now: float) -> Obj:
    """After someone else changed the pod's conditions (a readiness gate): the kubelet's status sync."""
    state = kubelet_state(pod)
    if state.get("stage") == SCHEDULE:
        return pod
    status = dict(pod.get("status") or {})
    containers_ready = state.get("stage") == READY
    status["conditions"] = ready_conditions(pod, status.get("conditions") or [], containers_ready, rfc3339(now))
    return {**pod, "status": status}


def kill(pod: Obj, now: float, reason: str) -> Obj:
    """The container was killed for good (an operator's fault injection): phase Failed, not ready."""
    state = kubelet_state(pod)
    state.update(stage="failed", at=None)
    new = with_state(pod, state)
    status = dict(new.get("status") or {})
    stamp = rfc3339(now)
    status.update(phase="Failed", reason="Killed", message=reason)
    status["conditions"] = [
        {**c, "status": "False", "lastTransitionTime": stamp} if c.get("type") in ("Ready", "ContainersReady") else c
        for c in status.get("conditions") or []
    ]
    status["containerStatuses"] = [
        {
            **c,
            "ready": False,
            "started": False,
            "state": {"terminated": {"exitCode": 137, "reason": "Killed", "finishedAt": stamp}},
        }
        for c in status.get("containerStatuses") or []
    ]
    return {**new, "status": status}


def pod_ip(number: int) -> str:
    # Pod IPs from 10.128.0.0/9 by row number: 10.128.0.1, 10.128.0.2, ..., 10.128.1.0, ...
    return f"10.{128 + (number >> 16) % 128}.{(number >> 8) & 255}.{number & 255}"


def node_ip(index: int) -> str:
    # Node IPs 10.0.0.1, 10.0.0.2, ... (the first node is 10.0.0.1), as in controller.simcluster.memory.cluster.
    return f"10.0.{(index + 1) >> 8}.{(index + 1) & 255}"
