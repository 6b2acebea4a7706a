"""Canary steps and their automatic analysis: ``spec.rolloutStrategy.canary`` (our extension).

    canary:
      steps:                           # run in order whenever a new update revision appears
        - setPartition: 75%            # ordinals >= partition get the new revision
        - setWeight: 10                # 10% of new requests start on the update revision
        - pause: {durationSeconds: 300} # without durationSeconds: wait for promote
        - setPartition: 0
      trafficRouting:                  # Kubernetes: where the weight is written
        gatewayAPI:
          httpRoute: chat-route        # its first rule's backendRefs: <ms>-stable / <ms>-canary
          backendKind: Service         # or InferencePool (with endpointPickerRef)
      analysis:                        # windows from the first step until the rollout completes
        intervalSeconds: 60
        settleSeconds: 30              # judge a window this long after its end (default: stable's
                                       # p99 request duration in the previous window, at most 300)
        minRequests: 50                # fewer canary requests started in a window: Inconclusive
        failureLimit: 1                # failed windows in total before acting
        inconclusiveLimit: 3           # Inconclusive windows in a row before pausing
        minPassWindows: 1              # passing windows a timed pause needs before it ends
        onFailure: Pause               # or Rollback (to the stable revision)
        metrics:
          - {metric: errorRate, max: 0.02}
          - {metric: latencyP99Ms, maxRatioToStable: 1.3}

A ``setWeight: N`` step (an integer 0..100, as Argo Rollouts' step) routes N% of new requests to
the update revision whatever the number of canary groups; the weight holds until the next
``setWeight``, is 0 before the first one, 0 once the canary is rolled back, aborted or failed, and
100 once every step is done (``weight_at``). Without any ``setWeight`` step there is no weight
(``None``): requests follow load.

Every field is checked: an unknown or misspelt one (``failurLimit: 3``) is refused with its path,
as anywhere else in the manifest, never read as its default.

Only for ServingGroupRollingUpdate (a step's partition counts ServingGroups), and without a partition
in rollingUpdateConfiguration (the steps set it). This module parses and validates it; the planner
runs the steps (``planner.canary``) and ``analysis`` judges the windows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import promql
from .intorpercent import IntOrPercent, IntOrPercentError

METRICS = (
    "errorRate",
    "timeoutRate",
    "latencyP50Ms",
    "latencyP95Ms",
    "latencyP99Ms",
    "feedbackMean",
    # Token figures and paths (request records that carry them).
    "ttftP50Ms",
    "ttftP95Ms",
    "ttftP99Ms",
    "tpotP50Ms",
    "tpotP95Ms",
    "tpotP99Ms",
    "mixedPaths",
    # Resources per revision: GPU utilisation (0-1) and GPU memory used per GPU (MiB).
    "gpuUtilization",
    "gpuMemoryMiB",
)
CHECK_KINDS = ("max", "min", "maxRatioToStable", "maxDeltaToStable")
ON_FAILURE = ("Pause", "Rollback")
PROVIDERS = ("simulated", "prometheus")
PLACEHOLDERS = ("{{revision}}", "{{namespace}}", "{{name}}", "{{window}}")
# Figures a prometheus provider may have a query for beside the metrics: ``requests`` (finished),
# ``started`` (started in the window, finished or not) and ``durationP99Ms`` (the settle time).
QUERY_FIGURES = ("requests", "started", "durationP99Ms")
# The fields each object of the canary may have; any other is refused. The CRD's schema names the
# same ones (tests/kubernetes/test_crd_follows_the_parser.py keeps the two in step).
CANARY_FIELDS = ("steps", "analysis", "trafficRouting")
STEP_KINDS = ("setPartition", "setWeight", "pause")  # a step is exactly one of these
TRAFFIC_ROUTING_FIELDS = ("gatewayAPI",)
GATEWAY_API_FIELDS = ("httpRoute", "backendKind", "endpointPickerRef")
BACKEND_KINDS = ("Service", "InferencePool")
ENDPOINT_PICKER_FIELDS = ("name", "port")
PAUSE_FIELDS = ("durationSeconds",)
CHECK_FIELDS = ("metric", *CHECK_KINDS)
ANALYSIS_FIELDS = (
    "intervalSeconds",
    "settleSeconds",
    "minRequests",
    "failureLimit",
    "inconclusiveLimit",
    "minPassWindows",
    "onFailure",
    "provider",
    "metrics",
    "queries",
)


class CanaryError(ValueError):
    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


@dataclass(frozen=True, slots=True)
class Step:
    set_partition: IntOrPercent | None = None  # a setPartition step
    pause: bool = False  # a pause step
    pause_seconds: float | None = None  # None: wait for promote
    set_weight: int | None = None  # a setWeight step: percent of new requests to the update revision

    def to_json(self) -> dict[str, Any]:
        if self.set_partition is not None:
            return {"setPartition": self.set_partition.to_json()}
        if self.set_weight is not None:
            return {"setWeight": self.set_weight}
        return {"pause": {} if self.pause_seconds is None else {"durationSeconds": self.pause_seconds}}


@dataclass(frozen=True, slots=True)
class Check:
    metric: str
    kind: str  # max | min | maxRatioToStable | maxDeltaToStable
    limit: float

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, self.kind: self.limit}


@dataclass(frozen=True, slots=True)
class Analysis:
    interval_seconds: float
    min_requests: int
    failure_limit: int
    on_failure: str
    provider: str
    checks: tuple[Check, ...]
    queries: dict[str, str]  # prometheus: metric -> query template
    # Seconds a window waits after its end before it is judged (``analysis.due_windows``), so the
    # requests that started in it had time to finish. None (the default): the stable revision's
    # p99 request duration in the previous window (``evidence.settle_seconds``).
    settle_seconds: float | None = None
    # Inconclusive (or Error) windows in a row that pause the rollout.
    inconclusive_limit: int = 3
    # Passing windows, ended after a timed pause began, that the pause needs before it ends.
    min_pass_windows: int = 1


@dataclass(frozen=True, slots=True)
class GatewayAPI:
    """``trafficRouting.gatewayAPI``: the HTTPRoute whose first rule the controller writes."""

    http_route: str
    backend_kind: str = "Service"  # or InferencePool
    endpoint_picker: dict[str, Any] | None = None  # InferencePool: {name, port}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"httpRoute": self.http_route, "backendKind": self.backend_kind}
        if self.endpoint_picker is not None:
            out["endpointPickerRef"] = dict(self.endpoint_picker)
        return out


@dataclass(frozen=True, slots=True)
class Canary:
    steps: tuple[Step, ...]
    analysis: Analysis | None
    gateway_api: GatewayAPI | None = None  # trafficRouting.gatewayAPI (Kubernetes)

    @property
    def weighted(self) -> bool:
        """Whether any step sets a weight (else requests follow load)."""
        return any(step.set_weight is not None for step in self.steps)


TRAFFIC_ROUTING_FIELD = "spec.rolloutStrategy.canary.trafficRouting"
TRAFFIC_ROUTING_REQUIRED = (
    "required on Kubernetes with setWeight steps: the weight is written to the Gateway API HTTPRoute "
    "named in trafficRouting.gatewayAPI.httpRoute (nothing else routes by weight there)"
)


def kubernetes_refusal(canary: Canary | None) -> CanaryError | None:
    """Why a canary cannot run on Kubernetes as written (setWeight steps without trafficRouting),
    or None. The embedded cluster's router needs no trafficRouting."""
    if canary is not None and canary.weighted and canary.gateway_api is None:
        return CanaryError(TRAFFIC_ROUTING_FIELD, TRAFFIC_ROUTING_REQUIRED)
    return None


# Canary phases (``planner.canary``) after which the canary gets no new requests.
WEIGHT_ZERO_PHASES = ("RolledBack", "Aborted", "Failed")


def weight_at(canary: Canary, index: int, phase: str | None = None) -> int | None:
    """The weight while step ``index`` runs: the last ``setWeight`` at or before it, 0 before the
    first; 100 once every step is done; 0 once the canary is rolled back, aborted or failed.
    None when no step sets a weight.

    Example: steps [setPartition 75%, setWeight 10, pause, setWeight 50] -> step 0: 0, steps 1-2: 10,
    step 3: 50, done (index 4): 100."""
    if not canary.weighted:
        return None
    if phase in WEIGHT_ZERO_PHASES:
        return 0
    if index >= len(canary.steps):
        return 100
    for step in reversed(canary.steps[: index + 1]):
        if step.set_weight is not None:
            return step.set_weight
    return 0


def _number(raw: Any, path: str, *, minimum: float | None = None) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise CanaryError(path, f"must be a number, got {raw!r}")
    if minimum is not None and raw < minimum:
        raise CanaryError(path, f"must be at least {minimum:g}, got {raw!r}")
    return float(raw)


def _dict(raw: Any, path: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise CanaryError(path, f"must be an object, got {type(raw).__name__}")
    return raw


def _step(raw: Any, path: str) -> Step:
    raw = _dict(raw, path)
    keys = set(raw)
    if keys == {"setPartition"}:
        try:
            return Step(set_partition=IntOrPercent.parse(raw["setPartition"], max_percent=100))
        except IntOrPercentError as err:
            raise CanaryError(f"{path}.setPartition", str(err)) from None
    if keys == {"setWeight"}:
        weight = raw["setWeight"]
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
            raise CanaryError(f"{path}.setWeight", f"must be an integer from 0 to 100 (a percent), got {weight!r}")
        return Step(set_weight=weight)
    if keys == {"pause"}:
        pause = raw["pause"] if raw["pause"] is not None else {}
        pause = _dict(pause, f"{path}.pause")
        unknown = set(pause) - set(PAUSE_FIELDS)
        if unknown:
            raise CanaryError(
                f"{path}.pause.{sorted(unknown)[0]}", f"unknown field (allowed: {', '.join(PAUSE_FIELDS)})"
            )
        seconds = pause.get("durationSeconds")
        if seconds is not None:
            seconds = _number(seconds, f"{path}.pause.durationSeconds", minimum=0)
        return Step(pause=True, pause_seconds=seconds)
    unknown = sorted(keys - set(STEP_KINDS))
    if unknown:
        raise CanaryError(
            f"{path}.{unknown[0]}", "unknown field (a step is {setPartition: N}, {setWeight: N} or {pause: {...}})"
        )
    raise CanaryError(path, "a step is exactly one of {setPartition: N}, {setWeight: N} or {pause: {durationSeconds?}}")


def _unknown(raw: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise CanaryError(f"{path}.{unknown[0]}", f"unknown field (allowed: {', '.join(allowed)})")


_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # a DNS-1123 subdomain


def _name(raw: Any, path: str) -> str:
    if not isinstance(raw, str) or not _OBJECT_NAME.match(raw):
        raise CanaryError(path, f"must be the name of an object (a lowercase DNS name), got {raw!r}")
    return raw


def _traffic_routing(raw: Any, path: str) -> GatewayAPI:
    raw = _dict(raw, path)
    _unknown(raw, TRAFFIC_ROUTING_FIELDS, path)
    if raw.get("gatewayAPI") is None:
        raise CanaryError(f"{path}.gatewayAPI", "required: the Gateway API HTTPRoute the weights are written to")
    gw = _dict(raw["gatewayAPI"], f"{path}.gatewayAPI")
    _unknown(gw, GATEWAY_API_FIELDS, f"{path}.gatewayAPI")
    route = _name(gw.get("httpRoute"), f"{path}.gatewayAPI.httpRoute")
    kind = gw.get("backendKind", "Service")
    if kind not in BACKEND_KINDS:
        raise CanaryError(f"{path}.gatewayAPI.backendKind", f"must be Service or InferencePool, got {kind!r}")
    picker = gw.get("endpointPickerRef")
    if kind == "InferencePool":
        if picker is None:
            raise CanaryError(
                f"{path}.gatewayAPI.endpointPickerRef", "required with backendKind InferencePool (the pools' picker)"
            )
        picker = _dict(picker, f"{path}.gatewayAPI.endpointPickerRef")
        _unknown(picker, ENDPOINT_PICKER_FIELDS, f"{path}.gatewayAPI.endpointPickerRef")
        out = {"name": _name(picker.get("name"), f"{path}.gatewayAPI.endpointPickerRef.name")}
        if picker.get("port") is not None:
            port = picker["port"]
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                raise CanaryError(f"{path}.gatewayAPI.endpointPickerRef.port", f"must be a port 1..65535, got {port!r}")
            out["port"] = port
        picker = out
    elif picker is not None:
        raise CanaryError(f"{path}.gatewayAPI.endpointPickerRef", "only with backendKind InferencePool")
    return GatewayAPI(route, kind, picker)


def _check(raw: Any, path: str) -> Check:
    raw = _dict(raw, path)
    metric = raw.get("metric")
    if metric not in METRICS:
        raise CanaryError(f"{path}.metric", f"must be one of {', '.join(METRICS)}, got {metric!r}")
    kinds = [k for k in CHECK_KINDS if k in raw]
    unknown = set(raw) - set(CHECK_FIELDS)
    if unknown:
        raise CanaryError(f"{path}.{sorted(unknown)[0]}", f"unknown field (allowed: {', '.join(CHECK_FIELDS)})")
    if len(kinds) != 1:
        raise CanaryError(path, f"give exactly one of {', '.join(CHECK_KINDS)}")
    kind = kinds[0]
    if metric == "feedbackMean" and kind == "max":
        raise CanaryError(f"{path}.max", "feedback is better when higher: use min")
    if kind == "min" and metric != "feedbackMean":
        raise CanaryError(
            f"{path}.min", f"{metric} is better when lower: use max, maxRatioToStable or maxDeltaToStable"
        )
    limit = _number(raw[kind], f"{path}.{kind}", minimum=0)
    if kind == "maxRatioToStable" and limit < 1:
        raise CanaryError(
            f"{path}.{kind}", f"a ratio limit below 1 would fail a canary as good as stable, got {limit:g}"
        )
    return Check(metric, kind, limit)


def _count(raw: Any, path: str, *, minimum: int, why: str = "") -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        rule = "a non-negative integer" if minimum == 0 else f"an integer of at least {minimum}"
        raise CanaryError(path, f"must be {rule}{why}, got {raw!r}")
    return raw


def _analysis(raw: Any, path: str) -> Analysis:
    raw = _dict(raw, path)
    unknown = set(raw) - set(ANALYSIS_FIELDS)
    if unknown:
        raise CanaryError(f"{path}.{sorted(unknown)[0]}", f"unknown field (allowed: {', '.join(ANALYSIS_FIELDS)})")
    interval = _number(raw.get("intervalSeconds", 60), f"{path}.intervalSeconds", minimum=1)
    settle = raw.get("settleSeconds")
    if settle is not None:
        settle = _number(settle, f"{path}.settleSeconds", minimum=0)
    min_requests = _count(raw.get("minRequests", 50), f"{path}.minRequests", minimum=0)
    limit = _count(raw.get("failureLimit", 1), f"{path}.failureLimit", minimum=1)
    inconclusive_limit = _count(raw.get("inconclusiveLimit", 3), f"{path}.inconclusiveLimit", minimum=1)
    min_pass = _count(
        raw.get("minPassWindows", 1),
        f"{path}.minPassWindows",
        minimum=1,
        why=" (a timed pause never ends on no evidence)",
    )
    on_failure = raw.get("onFailure", "Pause")
    if on_failure not in ON_FAILURE:
        raise CanaryError(f"{path}.onFailure", f"must be Pause or Rollback, got {on_failure!r}")
    provider = raw.get("provider", "simulated")
    if provider not in PROVIDERS:
        raise CanaryError(f"{path}.provider", f"must be simulated or prometheus, got {provider!r}")
    metrics = raw.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        raise CanaryError(f"{path}.metrics", "must list at least one check")
    checks = tuple(_check(m, f"{path}.metrics[{i}]") for i, m in enumerate(metrics))
    queries_raw = raw.get("queries") or {}
    queries_raw = _dict(queries_raw, f"{path}.queries")
    queries: dict[str, str] = {}
    for metric, template in queries_raw.items():
        if metric not in METRICS and metric not in QUERY_FIGURES:
            known = ", ".join((*QUERY_FIGURES, *METRICS))
            raise CanaryError(f"{path}.queries.{metric}", f"unknown metric (known: {known})")
        # A template's name or text; which ones the installation allows is ``promql.resolve``'s to
        # say (validation and the controller ask it with the installation's templates).
        try:
            queries[metric] = promql.check_reference(template, f"{path}.queries.{metric}")
        except promql.QueryRefused as err:
            raise CanaryError(err.field, err.rule) from None
    if provider == "prometheus":
        missing = [m for m in ("requests", *sorted({c.metric for c in checks})) if m not in queries]
        if missing:
            raise CanaryError(f"{path}.queries", f"the prometheus provider needs a query for {', '.join(missing)}")
    return Analysis(
        interval, min_requests, limit, on_failure, provider, checks, queries, settle, inconclusive_limit, min_pass
    )


def parse_canary(raw: Any, path: str, *, strategy_type: str, group_partition_set: bool) -> Canary | None:
    if raw is None:
        return None
    raw = _dict(raw, path)
    if strategy_type != "ServingGroupRollingUpdate":
        raise CanaryError(path, f"canary steps apply to ServingGroupRollingUpdate, not {strategy_type}")
    if group_partition_set:
        raise CanaryError(
            "spec.rolloutStrategy.rollingUpdateConfiguration.partition",
            "remove it: with canary steps the steps set the partition",
        )
    unknown = set(raw) - set(CANARY_FIELDS)
    if unknown:
        raise CanaryError(f"{path}.{sorted(unknown)[0]}", f"unknown field (allowed: {', '.join(CANARY_FIELDS)})")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise CanaryError(f"{path}.steps", "must list at least one step")
    steps = tuple(_step(s, f"{path}.steps[{i}]") for i, s in enumerate(steps_raw))
    analysis = _analysis(raw["analysis"], f"{path}.analysis") if raw.get("analysis") is not None else None
    routing = raw.get("trafficRouting")
    gateway = _traffic_routing(routing, f"{path}.trafficRouting") if routing is not None else None
    return Canary(steps, analysis, gateway)
