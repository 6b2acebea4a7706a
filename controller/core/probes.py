"""Probe advice: does a role's serving container say when its model is loaded, and can its probes
restart it while it is still loading? Pure; warnings only, never a refusal.

A large model takes minutes after its process starts (download, GPU memory, weights). Kubernetes
has three probes for three questions: the startupProbe (is the long start over?), the
readinessProbe (may it take requests now?) and the livenessProbe (must it be restarted?). Two
mistakes are common and costly:

- no readinessProbe and no startupProbe: the pod is Ready as soon as the container runs, so the
  Loaded gate (``gates``) and the router believe a model is there before it is;
- a livenessProbe (without a startupProbe, which holds it back until the start is over) or a
  startupProbe whose budget is shorter than the load: the kubelet restarts the container while it
  loads, and it loads again, forever.

The budget of a probe is ``initialDelaySeconds + failureThreshold x periodSeconds``, with the
Kubernetes defaults (k8s.io/api core/v1 Probe: initialDelaySeconds 0, periodSeconds 10,
failureThreshold 3; a 0 period or threshold is defaulted too). The kubelet counts it from the
container's start, so it is compared with the time from the container's start to Ready (the Started
and Loaded serving gates), measured on the role's recent pods or, without pods, the load time the
caller expects (the simulated image profile).

Worked example: role ``decode`` with ``livenessProbe: {httpGet: ...}`` and no startupProbe, whose last
8 pods took 412 s (median) from start to Ready -> "role decode: livenessProbe can restart a pod still
loading the model: 0 s delay + 3 x 10 s = 30 s before the first restart, but model load took 412 s
(measured container start -> Loaded, p50 of the last 8 pods)".
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .gates import pod_times
from .observe import PodObs
from .passcache import PassCache
from .spec import ModelServing

# k8s.io/api core/v1 Probe, as the API server defaults it.
DEFAULT_INITIAL_DELAY_SECONDS = 0
DEFAULT_PERIOD_SECONDS = 10
DEFAULT_FAILURE_THRESHOLD = 3
# kubectl's rule for "the" container of a pod when it has several (kubectl logs/exec use it too).
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
# How many recent pods the measured load time is the median of.
MEASURED_PODS = 8

READINESS, STARTUP, LIVENESS = "readinessProbe", "startupProbe", "livenessProbe"


@dataclass(frozen=True, slots=True)
class LoadTime:
    """How long a role's model takes to load, and where that figure comes from (said in the warning).
    ``measured``: seen on pods ("took"); otherwise expected ("takes up to")."""

    seconds: float
    source: str
    measured: bool = True

    def describe(self) -> str:
        verb = "took" if self.measured else "takes up to"
        return f"model load {verb} {_figure(self.seconds)} s ({self.source})"


@dataclass(frozen=True, slots=True)
class ProbeBudget:
    """How long a probe lets a container fail before it acts (a restart, for liveness and startup)."""

    initial_delay: int
    period: int
    failure_threshold: int

    @property
    def seconds(self) -> int:
        return self.initial_delay + self.failure_threshold * self.period

    def describe(self) -> str:
        return f"{self.initial_delay} s delay + {self.failure_threshold} x {self.period} s = {self.seconds} s"


@dataclass(frozen=True, slots=True)
class ProbeWarning:
    role: str
    template: str  # entryTemplate or workerTemplate
    container: str
    probe: str | None  # the probe at fault; None when the missing probe is the fault
    path: str  # the container's (or its probe's) field path in the manifest
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "template": self.template,
            "container": self.container,
            "probe": self.probe,
            "path": self.path,
            "message": self.message,
        }


def _figure(seconds: float) -> str:
    return f"{round(seconds, 1):g}"


def _setting(probe: Mapping[str, Any], key: str, default: int, *, zero_is_default: bool) -> int:
    value = probe.get(key)
    # The API server refuses anything but an integer here; advice must not fail on what it refuses.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    if value == 0 and zero_is_default:
        return default
    return value


def probe_budget(probe: Mapping[str, Any]) -> ProbeBudget:
    """The budget of a probe as written, with the Kubernetes defaults filled in."""
    return ProbeBudget(
        _setting(probe, "initialDelaySeconds", DEFAULT_INITIAL_DELAY_SECONDS, zero_is_default=False),
        _setting(probe, "periodSeconds", DEFAULT_PERIOD_SECONDS, zero_is_default=True),
        _setting(probe, "failureThreshold", DEFAULT_FAILURE_THRESHOLD, zero_is_default=True),
    )


def serving_container(template: Mapping[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The container that serves the model: the one the default-container annotation names, else
    the first. None for a template without containers."""
    spec = template.get("spec") or {}
    containers = [c for c in (spec.get("containers") or []) if isinstance(c, dict)]
    if not containers:
        return None
    # Only spec.containers is validated (``spec``): anything else may be of any type here.
    meta = template.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    wanted = annotations.get(DEFAULT_CONTAINER_ANNOTATION) if isinstance(annotations, dict) else None
    for i, container in enumerate(containers):
        if wanted and container.get("name") == wanted:
            return i, container
    return 0, containers[0]


def _takes_requests(container: Mapping[str, Any]) -> bool:
    # A worker whose container listens on no port (a Ray worker of a multi-node engine) takes no
    # requests: its readiness is not the model's.
    return bool(container.get("ports"))


def template_advice(
    role: str,
    template_key: str,
    template: Mapping[str, Any],
    load: LoadTime | None,
    *,
    path: str,
    serves: bool,
) -> list[ProbeWarning]:
    """Warnings for one pod template of a role. ``path``: the template's field path; ``serves``:
    whether its pods take requests (the entry always; a worker when its container has ports)."""
    found = serving_container(template)
    if found is None:
        return []
    index, container = found
    name = str(container.get("name") or "")
    cpath = f"{path}.spec.containers[{index}]"
    who = f"role {role}" if template_key == "entryTemplate" else f"role {role} workers"
    probes = {key: container.get(key) for key in (READINESS, STARTUP, LIVENESS)}
    probes = {key: value for key, value in probes.items() if isinstance(value, dict)}
    out: list[ProbeWarning] = []

    def warn(probe: str | None, message: str) -> None:
        out.append(ProbeWarning(role, template_key, name, probe, f"{cpath}.{probe}" if probe else cpath, message))

    if serves and READINESS not in probes and STARTUP not in probes:
        warn(
            None,
            f"{who}: container {name} has no readinessProbe and no startupProbe: its pods are Ready (and take "
            "requests) as soon as the container runs, before the model is loaded",
        )
    if load is None:
        return out
    if STARTUP in probes:
        # While a startupProbe runs, the kubelet holds the liveness and readiness probes back: only its
        # own budget can cut the load short.
        budget = probe_budget(probes[STARTUP])
        if budget.seconds < load.seconds:
            warn(
                STARTUP,
                f"{who}: startupProbe gives up before the model is loaded, and the kubelet restarts the "
                f"container: {budget.describe()}, but {load.describe()}",
            )
    elif LIVENESS in probes:
        budget = probe_budget(probes[LIVENESS])
        if budget.seconds < load.seconds:
            warn(
                LIVENESS,
                f"{who}: livenessProbe can restart a pod still loading the model: {budget.describe()} before "
                f"the first restart, but {load.describe()}",
            )
    return out


def advice(ms: ModelServing, loads: Mapping[str, LoadTime] | None = None) -> list[ProbeWarning]:
    """Warnings for every role of a parsed ModelServing; ``loads``: role name -> its load time (a role
    without one gets only the missing-probe warning)."""
    loads = loads or {}
    out: list[ProbeWarning] = []
    for i, role in enumerate(ms.roles):
        path = f"spec.template.roles[{i}]"
        load = loads.get(role.name)
        out.extend(
            template_advice(
                role.name, "entryTemplate", role.entry_template, load, path=f"{path}.entryTemplate", serves=True
            )
        )
        # Without a workerTemplate the workers run the entry template: already advised on.
        if role.worker_replicas and role.worker_template:
            found = serving_container(role.worker_template)
            out.extend(
                template_advice(
                    role.name,
                    "workerTemplate",
                    role.worker_template,
                    load,
                    path=f"{path}.workerTemplate",
                    serves=found is not None and _takes_requests(found[1]),
                )
            )
    return out


def measured_load_times(
    pods: Iterable[PodObs], *, last: int = MEASURED_PODS, cache: PassCache | None = None
) -> dict[str, LoadTime]:
    """Role -> the median time from container start to Ready of its ``last`` most recently created
    pods that got there (``gates.pod_times``, through the caller's ``cache``: the view built from
    the same pods has read their times already). A role with no such pod has no entry."""
    by_role: dict[str, list[tuple[float, float]]] = {}
    for pod in pods:
        times = pod_times(pod, cache)
        if times.started is None or times.ready is None or times.ready < times.started:
            continue
        by_role.setdefault(pod.role, []).append((times.created or times.started, times.ready - times.started))
    out = {}
    for role, samples in by_role.items():
        recent = [seconds for _, seconds in sorted(samples, reverse=True)[:last]]
        out[role] = LoadTime(
            statistics.median(recent), f"measured container start -> Loaded, p50 of the last {len(recent)} pods"
        )
    return out


__all__ = [
    "DEFAULT_FAILURE_THRESHOLD",
    "DEFAULT_INITIAL_DELAY_SECONDS",
    "DEFAULT_PERIOD_SECONDS",
    "LoadTime",
    "ProbeBudget",
    "ProbeWarning",
    "advice",
    "measured_load_times",
    "probe_budget",
    "serving_container",
]
