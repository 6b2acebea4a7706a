"""What the simulated kubelet reports about one pod: its Kubernetes-style events and its log lines.

Pure functions of the pod as stored (its status and the kubelet's state in the annotation
``physics.ANNOTATION_KUBELET``), the clock's ``now`` and, for the log, the requests the pod's engine
served; both drivers (``memory`` and ``database``) answer ``pod_events`` / ``pod_log`` with them, as
they share ``physics``. Nothing is kept besides the pod itself, so the answer is bounded by
construction: one event per reason and container (repeats are counted, as the API server
aggregates them: ``count``, ``firstTimestamp``, ``lastTimestamp``), at most ``LOAD_STEPS`` load
progress lines per start, and the requests the caller passes (it keeps the newest few per pod).

Example: a pod bound at t=101 to node-2, pulled and started at 108 with a 30 s load, asked at 123::

    events: Scheduled (101), Pulling (101), Pulled (108), Created (108), Started (108),
            Unhealthy "Readiness probe failed ... 503" x3 while loading (if it has a readiness probe)
    log:    108 Starting the model server (image ...); 108 Loading model weights;
            111 ... 10% ... 120 ... 40%: the load's progress so far (the load ends at 138)

A crashing image's pod shows the crash of its last attempt (a traceback, exit code 1) and a
``BackOff`` warning counted over its restarts; a deleted pod a ``Killing`` event and its shutdown.
"""

from __future__ import annotations

from typing import Any

from controller.core.ports import Obj

from .objects import rfc3339
from .physics import KILLED, RUNNING, STEP_LOADED, TERMINATING, kubelet_state

# Load progress is logged every tenth of the load: at most this many lines per start.
LOAD_STEPS = 10
# How many log lines a reader gets at most, whatever it asks.
MAX_TAIL = 1000
DEFAULT_PROBE_PERIOD = 10.0
COMPONENT_KUBELET = "kubelet"
COMPONENT_SCHEDULER = "default-scheduler"


def _seconds(stamp: Any) -> float | None:
    import datetime

    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _condition(pod: Obj, ctype: str) -> Obj:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return {}


def _event(
    pod: Obj, reason: str, message: str, first: float, *, last: float | None = None, count: int = 1, warning=False
) -> Obj:
    meta = pod.get("metadata") or {}
    component = COMPONENT_SCHEDULER if reason in ("Scheduled", "FailedScheduling") else COMPONENT_KUBELET
    return {
        "type": "Warning" if warning else "Normal",
        "reason": reason,
        "message": message,
        "count": max(1, int(count)),
        "firstTimestamp": rfc3339(first),
        "lastTimestamp": rfc3339(first if last is None else last),
        "t": first if last is None else last,
        "source": {"component": component, "host": (pod.get("spec") or {}).get("nodeName") or ""},
        "involvedObject": {"kind": "Pod", "namespace": meta.get("namespace"), "name": meta.get("name")},
    }


def _probe_period(pod: Obj, container: str) -> tuple[bool, float]:
    """Whether the container has a readiness probe, and its period (Kubernetes' default 10 s)."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        if c.get("name") == container and isinstance(c.get("readinessProbe"), dict):
            period = c["readinessProbe"].get("periodSeconds") or DEFAULT_PROBE_PERIOD
            try:
                return True, max(1.0, float(period))
            except (TypeError, ValueError):
                return True, DEFAULT_PROBE_PERIOD
    return False, DEFAULT_PROBE_PERIOD


def _ready_at(pod: Obj) -> float | None:
    cond = _condition(pod, "ContainersReady")
    return _seconds(cond.get("lastTransitionTime")) if cond.get("status") == "True" else None


def pod_events(pod: Obj, now: float) -> list[Obj]:
    """The pod's events, oldest first (by ``lastTimestamp``), as ``kubectl get events`` lists them."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    out: list[Obj] = []
    scheduled = _condition(pod, "PodScheduled")
    bound_at = _seconds(status.get("startTime")) or _seconds(scheduled.get("lastTransitionTime"))
    if spec.get("nodeName") and bound_at is not None:
        out.append(_event(pod, "Scheduled", f"Successfully assigned {name} to {spec['nodeName']}", bound_at))
    elif scheduled.get("status") == "False":
        since = _seconds(scheduled.get("lastTransitionTime")) or now
        out.append(
            _event(pod, "FailedScheduling", scheduled.get("message") or "0/0 nodes are available", since, warning=True)
        )
    state = kubelet_state(pod) or {}
    for c in state.get("containers") or ():
        cname, image = c.get("name"), c.get("runs") or c.get("image")
        started = c.get("startedAt")
        if bound_at is not None and c.get("attempts"):
            out.append(_event(pod, "Pulling", f'Pulling image "{c.get("image")}"', bound_at))
        if started is not None:
            starts = max(1, int(c.get("attempts") or 1) - (0 if c.get("state") == "running" else 1))
            first = bound_at if bound_at is not None and starts > 1 else started
            out.append(_event(pod, "Pulled", f'Container image "{image}" already present on machine', started))
            out.append(_event(pod, "Created", f"Created container {cname}", first, last=started, count=starts))
            out.append(_event(pod, "Started", f"Started container {cname}", first, last=started, count=starts))
        has_probe, period = _probe_period(pod, cname)
        if has_probe and started is not None and c.get("state") == "running":
            # The engine answers 503 on its health endpoint while it loads its weights.
            until = now if c.get("step") == STEP_LOADED else (_ready_at(pod) or now)
            failures = int(max(0.0, until - started) // period)
            if failures:
                out.append(
                    _event(
                        pod,
                        "Unhealthy",
                        "Readiness probe failed: HTTP probe failed with statuscode: 503",
                        started + period,
                        last=started + failures * period,
                        count=failures,
                        warning=True,
                    )
                )
        last = c.get("lastExit")
        if last and c.get("restarts"):
            out.append(
                _event(
                    pod,
                    "BackOff",
                    f"Back-off restarting failed container {cname} in pod {meta.get('name')}",
                    last["finishedAt"],
                    last=max(last["finishedAt"], now) if c.get("reason") == "CrashLoopBackOff" else last["finishedAt"],
                    count=c["restarts"],
                    warning=True,
                )
            )
        if c.get("runs") and c.get("image") != c.get("runs") and c.get("state") != "running":
            out.append(
                _event(
                    pod,
                    "Killing",
                    f"Container {cname} definition changed, will be restarted",
                    (c.get("at") or now) - 1.0 if c.get("at") else now,
                )
            )
    if state.get("phase") == TERMINATING:
        since = _seconds(meta.get("deletionTimestamp")) or now
        for c in state.get("containers") or ():
            out.append(_event(pod, "Killing", f"Stopping container {c.get('name')}", since))
    if state.get("phase") == KILLED or status.get("reason") == "Killed":
        out.append(_event(pod, "Killing", status.get("message") or "Killed", now, warning=True))
    if status.get("reason") == "NodeLost":
        out.append(_event(pod, "NodeNotReady", status.get("message") or "Node is not ready", now, warning=True))
    out.sort(key=lambda e: e["t"])
    return out


def _line(t: float, text: str) -> Obj:
    return {"t": t, "time": rfc3339(t), "line": text}


def _request_line(r: Obj, peer: str) -> Obj:
    status = str(r.get("status") or "ok")
    code = {"ok": "200 OK", "error": "500 Internal Server Error", "timeout": "504 Gateway Timeout"}.get(status)
    started = float(r.get("started") or 0.0)
    if r.get("finished") is None:
        return _line(started, f'INFO:     {peer} - "POST /v1/completions HTTP/1.1" received ({r.get("id", "")})')
    if code is None:
        return _line(float(r["finished"]), f"WARNING:  request {r.get('id', '')} aborted: the engine stopped")
    latency = r.get("latencyMs")
    extra = f", first token after {latency:.0f} ms" if isinstance(latency, (int, float)) else ""
    return _line(float(r["finished"]), f'INFO:     {peer} - "POST /v1/completions HTTP/1.1" {code}{extra}')


def pod_log(pod: Obj, now: float, *, requests: list[Obj] | tuple = (), tail: int = 200) -> list[Obj]:
    """The log of the pod's engine container (the first one), oldest first, the last ``tail`` lines
    (at most ``MAX_TAIL``): start, the model load's progress, the crash of the previous attempt
    (a crashing image), readiness, the requests given (``{"id", "started", "finished", "status",
    "latencyMs"}``: in flight when ``finished`` is None) and the shutdown of a deleted pod.
    Each line is ``{"t", "time", "line"}``."""
    tail = max(0, min(int(tail), MAX_TAIL))
    state = kubelet_state(pod) or {}
    containers = state.get("containers") or []
    if not containers or not tail:
        return []
    c = containers[0]
    image = c.get("runs") or c.get("image") or ""
    lines: list[Obj] = []
    last = c.get("lastExit")
    if last and c.get("restarts"):
        t = float(last["finishedAt"])
        lines += [
            _line(t, "ERROR:    Engine core initialization failed. See root cause above."),
            _line(t, "Traceback (most recent call last):"),
            _line(t, '  File "/usr/local/lib/python3.12/site-packages/vllm/engine/llm_engine.py", line 341, in _init'),
            _line(t, "RuntimeError: CUDA error: an illegal memory access was encountered"),
            _line(t, f"The container exited with code {last.get('exitCode', 1)} (restart {c['restarts']})"),
        ]
    started = c.get("startedAt")
    if started is not None and (c.get("state") == "running" or state.get("phase") != RUNNING):
        lines.append(_line(started, f"INFO:     Starting the model server, image {image}"))
        spec = next((x for x in (pod.get("spec") or {}).get("containers") or [] if x.get("name") == c.get("name")), {})
        words = [str(w) for w in (spec.get("command") or []) + (spec.get("args") or [])]
        if words:
            # As engines print their command line at start (readers who may not operate see it masked).
            lines.append(_line(started, "INFO:     command line: " + " ".join(words)))
        lines.append(_line(started, "INFO:     Loading model weights"))
        ready_at = _ready_at(pod)
        load_end = c.get("at") if c.get("step") == STEP_LOADED else ready_at
        if load_end is not None and load_end > started:
            span = load_end - started
            for step in range(1, LOAD_STEPS + 1):
                t = started + span * step / LOAD_STEPS
                if t > now:
                    break
                lines.append(_line(t, f"INFO:     Loading safetensors checkpoint shards: {step * 100 // LOAD_STEPS}%"))
        if c.get("ready") and ready_at is not None:
            took = f" in {ready_at - started:.1f} s" if ready_at >= started else ""
            lines.append(_line(ready_at, f"INFO:     Model loaded{took}; application startup complete"))
            lines.append(_line(ready_at, "INFO:     Uvicorn running on http://0.0.0.0:8000"))
    peer = (pod.get("status") or {}).get("hostIP") or "10.0.0.1"
    lines += [_request_line(r, peer) for r in requests]
    if state.get("phase") == TERMINATING:
        since = _seconds((pod.get("metadata") or {}).get("deletionTimestamp")) or now
        lines.append(_line(since, "INFO:     Received SIGTERM: shutting down, finishing the requests in flight"))
        lines.append(_line(since, "INFO:     Waiting for application shutdown."))
    elif state.get("phase") == KILLED:
        lines.append(_line(now, "The container was killed (exit code 137)"))
    lines.sort(key=lambda line: line["t"])
    return lines[-tail:]


def crashes(before: Obj, after: Obj) -> list[Obj]:
    """The crashes a kubelet step made (a container's restart count grew with a new last exit), as
    Warning events for the cluster's event list (the Events page): ``[{"reason": "BackOff",
    "message", "type": "Warning", "t"}]``; [] when nothing crashed."""
    old = {c.get("name"): c for c in (kubelet_state(before) or {}).get("containers") or ()}
    out = []
    pod = (after.get("metadata") or {}).get("name")
    for c in (kubelet_state(after) or {}).get("containers") or ():
        last = c.get("lastExit")
        prev = old.get(c.get("name")) or {}
        if not last or c.get("restarts", 0) <= prev.get("restarts", 0) or last == prev.get("lastExit"):
            continue
        out.append(
            {
                "type": "Warning",
                "reason": "BackOff",
                "t": float(last["finishedAt"]),
                "message": f"Back-off restarting failed container {c.get('name')} in pod {pod}: exited with code "
                f"{last.get('exitCode', 1)}, {c['restarts']} restart{'s' if c['restarts'] != 1 else ''}",
            }
        )
    return out
