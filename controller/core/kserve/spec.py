"""An InferenceService (``serving.kserve.io/v1beta1``), validated as KServe's webhook and the API
server would, with the field path in every error.

What matters here is what KServe turns into Deployments and traffic: the components (predictor,
transformer, explainer) with their containers, replicas and ``deploymentStrategy``; a multi-node
predictor's ``workerSpec``; the Knative ``canaryTrafficPercent``; the Standard-mode
``spec.canary[]`` (KServe 0.20).

The deployment mode is the annotation ``serving.kserve.io/deploymentMode`` when it names a mode
(current or legacy name: ``RawDeployment`` is ``Standard``, ``Serverless`` is ``Knative``), else
the ConfigMap's ``defaultDeploymentMode``: KServe's ``GetDeploymentMode`` ignores an annotation
value it does not know, so the product does too and says so in a warning. A ``ModelMesh``
InferenceService is served by ModelMesh Serving, not by Deployments of its own: it is read (name,
mode, predictor) and shown as not managed by RolloutUI, never refused for a predictor the product
does not model.

Warnings (``InferenceService.warnings``) are what KServe accepts and ignores; the pages show them.

Refused, as KServe refuses them: a ``deploymentStrategy`` in Knative mode ("customizing
deploymentStrategy is only supported for raw deployment mode"), a strategy type other than
RollingUpdate or Recreate (and ``rollingUpdate`` beside Recreate, as the API server refuses it),
malformed int-or-percent values, both budgets 0, ``spec.canary`` outside Standard mode, canary
names that repeat or equal the stable predictor's, traffic over 100%, a canary with a worker spec
or autoscaling fields, a canary ``minReplicas`` above the stable one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .. import podresources
from ..intorpercent import IntOrPercent, IntOrPercentError
from .config import KNATIVE, MODELMESH, STANDARD, DeployConfig, current_mode_name
from .errors import KServeError
from .multinode import BACKEND_RAY, DEFAULT_PARALLEL_SIZE, InsufficientGPUs, MultiNode, multinode
from .runtimes import DEFAULT_RUNTIMES, GPU_RESOURCES, merged_container, select_runtime, updated_image
from .strategy import RECREATE, UserStrategy

API_VERSION = "serving.kserve.io/v1beta1"
KIND = "InferenceService"
ANNOTATION_DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode"
COMPONENTS = ("predictor", "transformer", "explainer")
# Fields of a component that configure autoscaling (not allowed on a Standard-mode canary).
AUTOSCALING_FIELDS = ("maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "autoScaling")
WORKER_CONTAINER = "worker-container"

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """A multi-node predictor: the head is the predictor's pod, the workers ``RAY_NODE_COUNT - 1``
    more, sized as KServe sizes them (``multinode``)."""

    replicas: int
    containers: tuple[dict[str, Any], ...]
    nodes: MultiNode | None = None


@dataclass(frozen=True, slots=True)
class Component:
    kind: str  # predictor | transformer | explainer
    name: str | None  # predictor.name (the stable predictor's name for spec.canary promotion)
    min_replicas: int
    max_replicas: int | None
    canary_traffic_percent: int | None
    strategy: UserStrategy | None
    containers: tuple[dict[str, Any], ...]  # the pod's containers, as KServe builds them
    worker: WorkerSpec | None
    raw: dict[str, Any] = field(repr=False, compare=False)
    impl_index: int = 0  # the implementation's container (the kserve-container)
    runtime: str | None = None  # the ServingRuntime serving a model
    runtime_problem: str | None = None  # why a model has no runtime (KServe's controller fails it)
    replicas: int = 1  # the pods its Standard-mode Deployment keeps (see _deployment_replicas)

    @property
    def image(self) -> str:
        return str(self.containers[self.impl_index].get("image") or "")


@dataclass(frozen=True, slots=True)
class Canary:
    """One ``spec.canary[]`` entry (Standard mode): its own predictor Deployment and a weight."""

    name: str
    traffic_percent: int
    predictor: Component


@dataclass(frozen=True, slots=True)
class SpecWarning:
    """Something KServe accepts and ignores (or fixes up) that the operator should know about."""

    field: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


# Why a ModelMesh InferenceService is listed but not managed (the page and every refusal say it).
MODELMESH_REASON = (
    "ModelMesh mode: the model is loaded into ModelMesh Serving's shared runtime pods, which its own "
    "controller (modelmesh-serving) manages; KServe creates no Deployment for it, so RolloutUI has "
    "nothing to roll out, pause or split"
)


@dataclass(frozen=True, slots=True)
class InferenceService:
    name: str
    namespace: str
    uid: str
    generation: int
    deployment_mode: str
    components: dict[str, Component]
    canaries: tuple[Canary, ...]
    manifest: dict[str, Any] = field(repr=False, compare=False)
    warnings: tuple[SpecWarning, ...] = ()

    @property
    def predictor(self) -> Component:
        return self.components["predictor"]

    @property
    def standard(self) -> bool:
        return self.deployment_mode == STANDARD

    @property
    def knative(self) -> bool:
        return self.deployment_mode == KNATIVE

    @property
    def managed(self) -> bool:
        """False for ModelMesh: listed, never rolled out by RolloutUI (``MODELMESH_REASON``)."""
        return self.deployment_mode != MODELMESH


def _mapping(value: Any, path: str, *, required: bool = False) -> dict[str, Any]:
    if value is None:
        if required:
            raise KServeError(path, "required")
        return {}
    if not isinstance(value, dict):
        raise KServeError(path, f"must be an object, got {type(value).__name__}")
    return value


def _int(value: Any, path: str, *, default: int | None, minimum: int = 0, maximum: int | None = None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise KServeError(path, f"must be an integer, got {value!r}")
    if value < minimum:
        raise KServeError(path, f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise KServeError(path, f"must be at most {maximum}, got {value}")
    return value


def _budget(raw: Any, path: str, *, max_percent: int | None) -> IntOrPercent | None:
    if raw is None:
        return None
    try:
        return IntOrPercent.parse(raw, max_percent=max_percent)
    except IntOrPercentError as err:
        raise KServeError(path, str(err)) from None


def _user_strategy(raw: Any, path: str, mode: str) -> UserStrategy | None:
    if raw is None:
        return None
    raw = _mapping(raw, path)
    if mode != STANDARD:
        raise KServeError(
            path,
            "customizing deploymentStrategy is only supported for the Standard (raw deployment) mode; "
            f"this InferenceService runs in {mode} mode",
        )
    kind = raw.get("type") or "RollingUpdate"
    if kind not in ("RollingUpdate", RECREATE):
        raise KServeError(f"{path}.type", f"must be Recreate or RollingUpdate, got {kind!r}")
    if kind == RECREATE:
        # KServe copies the strategy as written; the API server refuses rollingUpdate beside Recreate.
        if raw.get("rollingUpdate") is not None:
            raise KServeError(f"{path}.rollingUpdate", "may not be specified when the strategy type is Recreate")
        return UserStrategy(RECREATE)
    rolling = _mapping(raw.get("rollingUpdate"), f"{path}.rollingUpdate")
    surge = _budget(rolling.get("maxSurge"), f"{path}.rollingUpdate.maxSurge", max_percent=None)
    unavailable = _budget(rolling.get("maxUnavailable"), f"{path}.rollingUpdate.maxUnavailable", max_percent=100)
    if surge is not None and unavailable is not None and surge.value == 0 and unavailable.value == 0:
        raise KServeError(
            f"{path}.rollingUpdate.maxUnavailable",
            "may not be 0 when maxSurge is 0: the rollout could never progress",
        )
    return UserStrategy(kind, surge, unavailable)


# The per-framework predictor fields KServe's defaulting webhook turns into ``model`` with that
# ``modelFormat``, in the order it looks at them (the first one found is converted).
FRAMEWORKS = (
    "sklearn",
    "tensorflow",
    "xgboost",
    "pytorch",
    "triton",
    "onnx",
    "huggingface",
    "pmml",
    "lightgbm",
    "paddle",
)
# Frameworks whose conversion sets protocolVersion v2 when none is written (for backward
# compatibility, KServe says); a model of format triton or vLLM gets v2 the same way.
_FRAMEWORKS_V2 = ("triton", "onnx", "huggingface")
_FORMATS_V2 = ("triton", "vLLM")
# The built-in explainer KServe still knows (``explainers.art`` of its ConfigMap).
ART_IMAGE = "kserve/art-explainer"
ART_VERSION = "latest"
# Model fields that are not container fields.
_MODEL_ONLY = ("modelFormat", "runtime", "runtimeVersion", "protocolVersion", "storageUri", "storage", "name")
KSERVE_CONTAINER = "kserve-container"
TRANSFORMER_CONTAINER = "transformer-container"
SCALE_METRICS = ("cpu", "memory", "concurrency", "rps")
HPA_METRICS = ("cpu", "memory")
KPA_METRICS = ("concurrency", "rps")
METRIC_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
AUTOSCALER_CLASSES = ("hpa", "external", "keda", "none")
ANNOTATION_AUTOSCALER_CLASS = "serving.kserve.io/autoscalerClass"
ANNOTATION_KNATIVE_CLASS = "autoscaling.knative.dev/class"
KNATIVE_HPA_CLASS = "hpa.autoscaling.knative.dev"


def _containers_as_written(raw: dict[str, Any], path: str, *, implementation: bool = True) -> list[dict[str, Any]]:
    """The containers as written; when they are the implementation (``implementation``), KServe's
    defaulting names a lone (or unnamed first) container kserve-container."""
    containers = raw.get("containers")
    if containers is None:
        return []
    if not isinstance(containers, list):
        raise KServeError(f"{path}.containers", "must be a list of containers")
    out = []
    for i, c in enumerate(containers):
        c = _mapping(c, f"{path}.containers[{i}]")
        out.append(dict(c))
    if implementation and out and (len(out) == 1 or not out[0].get("name")):
        out[0]["name"] = KSERVE_CONTAINER
    return out


def _default_frameworks(raw: dict[str, Any], path: str, kind: str) -> dict[str, Any]:
    """KServe's defaulting: the first per-framework field of a predictor becomes ``model`` with that
    format (replacing any ``model``); the others stay and are counted as implementations."""
    if kind != "predictor":
        return raw
    for fw in FRAMEWORKS:
        spec = raw.get(fw)
        if spec is None:
            continue
        spec = _mapping(spec, f"{path}.{fw}")
        if spec.get("name"):
            raise KServeError(f"{path}.{fw}.name", "the 'name' field is not allowed in standard predictor")
        model = {"modelFormat": {"name": fw}, **spec}
        if fw in _FRAMEWORKS_V2 and model.get("protocolVersion") is None:
            model["protocolVersion"] = "v2"
        return {**{k: v for k, v in raw.items() if k != fw}, "model": model}
    return raw


def _implementations(raw: dict[str, Any], kind: str, containers: list[dict[str, Any]]) -> list[str]:
    """What KServe counts as the component's implementations (``GetImplementations``): a model or
    framework, a built-in explainer, and each container named kserve-container (or, with nothing
    else, the first container)."""
    found = [fw for fw in FRAMEWORKS if kind == "predictor" and raw.get(fw) is not None]
    if kind == "predictor" and raw.get("model") is not None:
        found.append("model")
    if kind == "explainer" and raw.get("art") is not None:
        found.append("art")
    named = [c for c in containers if c.get("name") == KSERVE_CONTAINER]
    found += ["containers"] * len(named)
    if not found and containers:
        found.append("containers")
    return found


_ONE_OF = {
    "predictor": "model (or one of sklearn, tensorflow, xgboost, pytorch, triton, onnx, huggingface, pmml, "
    "lightgbm, paddle) or containers with a kserve-container",
    "transformer": "containers",
    "explainer": "art or containers",
}


def _model_container(
    model: dict[str, Any], path: str, namespace: str, isvc_name: str, runtimes, *, multi_node: bool
) -> tuple[dict[str, Any], str | None, str | None, Any]:
    """(the kserve-container, the runtime's name, why there is none, the runtime) of a ``model``."""
    fmt = _mapping(model.get("modelFormat"), f"{path}.modelFormat", required=True)
    name = fmt.get("name")
    if not isinstance(name, str) or not name:
        raise KServeError(f"{path}.modelFormat.name", "required")
    version = fmt.get("version")
    protocol = model.get("protocolVersion")
    if protocol is None and name in _FORMATS_V2:
        protocol = "v2"
    written_runtime = model.get("runtime")
    if written_runtime is not None and not isinstance(written_runtime, str):
        raise KServeError(f"{path}.runtime", "must be the name of a ServingRuntime")
    picked = select_runtime(
        runtimes,
        namespace,
        format_name=name,
        format_version=None if version is None else str(version),
        runtime=written_runtime,
        protocol=model.get("protocolVersion") if written_runtime else protocol,
        multi_node=multi_node,
    )
    fields = {k: v for k, v in model.items() if k not in _MODEL_ONLY}
    image = fields.get("image")
    if image is not None and (not isinstance(image, str) or not image):
        raise KServeError(f"{path}.image", "must be a non-empty image reference")
    if picked.runtime is None:
        container = {**fields, "name": KSERVE_CONTAINER, "image": image or ""}
    else:
        container = merged_container(picked.runtime.containers[0], fields, isvc_name)
        container["image"] = updated_image(container, model.get("runtimeVersion"), picked.runtime.server_type)
    if model.get("storageUri"):
        # The storage initializer's source, kept on the container so a revision's template records it.
        env = [e for e in container.get("env") or [] if e.get("name") != "STORAGE_URI"]
        container["env"] = [*env, {"name": "STORAGE_URI", "value": model["storageUri"]}]
    return container, picked.runtime.name if picked.runtime else None, picked.problem, picked.runtime


def _pod_containers(
    raw: dict[str, Any], path: str, kind: str, namespace: str, isvc_name: str, runtimes, *, multi_node: bool = False
) -> tuple[tuple[dict[str, Any], ...], int, str | None, str | None, Any]:
    """(the pod's containers, the index of the implementation's container, the runtime's name, why
    there is no runtime, the runtime) of one component, as KServe builds its pod."""
    built_in = any(raw.get(k) is not None for k in (*FRAMEWORKS, "model", "art"))
    containers = _containers_as_written(raw, path, implementation=not built_in)
    impls = _implementations(raw, kind, containers)
    if len(impls) != 1:
        what = f"found {', '.join(impls)}" if impls else "found none"
        raise KServeError(path, f"exactly one of {_ONE_OF[kind]} must be specified in the {kind} ({what})")
    for c in containers:
        if c.get("name") == TRANSFORMER_CONTAINER and any(
            e.get("name") == "STORAGE_URI" for e in c.get("env") or [] if isinstance(e, dict)
        ):
            raise KServeError(f"{path}.containers", "storage uri should not be specified in transformer container")
    if impls == ["model"]:
        container, runtime, problem, chosen = _model_container(
            _mapping(raw["model"], f"{path}.model"),
            f"{path}.model",
            namespace,
            isvc_name,
            runtimes,
            multi_node=multi_node,
        )
        # KServe's pod for a model: the runtime's container, then a collocated transformer-container
        # if there is one; other containers written beside a model are not run.
        sidecars = [c for c in containers if c.get("name") == TRANSFORMER_CONTAINER]
        return (container, *sidecars), 0, runtime, problem, chosen
    if impls == ["art"]:
        art = _mapping(raw["art"], f"{path}.art")
        version = art.get("runtimeVersion") or ART_VERSION
        container = {k: v for k, v in art.items() if k not in ("type", "config", "runtimeVersion", "storageUri")}
        args = [f"--model_name={isvc_name}", f"--predictor_host={isvc_name}-predictor.{namespace}"]
        args += [f"--{k}={v}" for k, v in sorted((art.get("config") or {}).items())]
        container.update(name=KSERVE_CONTAINER, image=f"{ART_IMAGE}:{version}", args=[*args, *(art.get("args") or [])])
        return (container,), 0, None, None, None
    for i, c in enumerate(containers):
        if not isinstance(c.get("image"), str) or not c.get("image"):
            raise KServeError(f"{path}.containers[{i}].image", "required")
        if not c.get("name"):
            # A pod's every container needs a name (the API server refuses the pod otherwise).
            raise KServeError(f"{path}.containers[{i}].name", "required")
    index = next((i for i, c in enumerate(containers) if c.get("name") == KSERVE_CONTAINER), 0)
    return tuple(containers), index, None, None, None


def _check_target(target: Any, path: str, *, values: bool) -> None:
    """A metric target: its type is one of the CRD's enum; with ``values`` (KEDA, KServe's
    ``validateScaleTarget``) the value its type needs is there."""
    target = _mapping(target, path, required=True)
    kind = target.get("type")
    if kind is not None and kind not in METRIC_TARGET_TYPES:
        raise KServeError(f"{path}.type", f"must be one of {', '.join(METRIC_TARGET_TYPES)}, got {kind!r}")
    if not values:
        return
    if kind == "Utilization":
        utilization = target.get("averageUtilization")
        if utilization is None:
            raise KServeError(f"{path}.averageUtilization", "required with type Utilization")
        _int(utilization, f"{path}.averageUtilization", default=None, minimum=1, maximum=100)
    elif kind == "AverageValue" and target.get("averageValue") is None:
        raise KServeError(f"{path}.averageValue", "required with type AverageValue")
    elif kind == "Value" and target.get("value") is None:
        raise KServeError(f"{path}.value", "required with type Value")


def _check_autoscaling(raw: dict[str, Any], path: str, mode: str, annotations: dict[str, Any]) -> None:
    """The autoscaling fields, as the CRD's schema and KServe's webhook check them
    (``validateAutoScalingCompExtension``): the enums, HPA's and KEDA's metric rules in Standard
    mode (by the ``serving.kserve.io/autoscalerClass`` annotation), KPA's in Knative mode."""
    metric, target = _scale_metric_and_target(raw, path)
    # KServe checks a metric's query and target values only for KEDA (Standard mode).
    keda = mode == STANDARD and annotations.get(ANNOTATION_AUTOSCALER_CLASS) == "keda"
    metrics = _mapping(raw.get("autoScaling"), f"{path}.autoScaling").get("metrics") or []
    if not isinstance(metrics, list):
        raise KServeError(f"{path}.autoScaling.metrics", "must be a list")
    for i, m in enumerate(metrics):
        _check_metric(m, f"{path}.autoScaling.metrics[{i}]", keda=keda)
    if mode == STANDARD:
        _check_standard_autoscaler(path, annotations.get(ANNOTATION_AUTOSCALER_CLASS), metric, target, metrics)
    elif annotations.get(ANNOTATION_KNATIVE_CLASS) != KNATIVE_HPA_CLASS:
        _check_knative_autoscaler(path, metric, target)


def _scale_metric_and_target(raw: dict[str, Any], path: str) -> tuple[Any, int | None]:
    """``scaleMetric`` and ``scaleMetricType`` within their enums; ``scaleTarget`` an int32 (None
    when not written). Example: ``{"scaleMetric": "rps", "scaleTarget": 5}`` -> ``("rps", 5)``."""
    metric = raw.get("scaleMetric")
    if metric is not None and metric not in SCALE_METRICS:
        raise KServeError(f"{path}.scaleMetric", f"must be one of {', '.join(SCALE_METRICS)}, got {metric!r}")
    metric_type = raw.get("scaleMetricType")
    if metric_type is not None and metric_type not in METRIC_TARGET_TYPES:
        raise KServeError(
            f"{path}.scaleMetricType", f"must be one of {', '.join(METRIC_TARGET_TYPES)}, got {metric_type!r}"
        )
    target = _int(raw.get("scaleTarget"), f"{path}.scaleTarget", default=None, minimum=-(2**31))
    return metric, target


def _check_metric(m: Any, mpath: str, *, keda: bool) -> None:
    """One entry of ``autoScaling.metrics``, by its ``type``: Resource, External or PodMetric."""
    m = _mapping(m, mpath)
    kind = m.get("type")
    if kind == "Resource":
        resource = _mapping(m.get("resource"), f"{mpath}.resource", required=True)
        if resource.get("name") not in ("cpu", "memory"):
            raise KServeError(f"{mpath}.resource.name", f"must be cpu or memory, got {resource.get('name')!r}")
        _check_target(resource.get("target"), f"{mpath}.resource.target", values=keda)
    elif kind == "External":
        _check_external_metric(m, f"{mpath}.external", keda=keda)
    elif kind == "PodMetric":
        _check_pod_metric(m, f"{mpath}.podmetric", keda=keda)
    else:
        raise KServeError(f"{mpath}.type", f"must be one of Resource, External, PodMetric, got {kind!r}")


def _check_external_metric(m: dict[str, Any], epath: str, *, keda: bool) -> None:
    """An External metric: its backend (prometheus or graphite), its authentication reference, and
    with KEDA its query and target value."""
    external = _mapping(m.get("external"), epath, required=True)
    metric_spec = _mapping(external.get("metric"), f"{epath}.metric", required=True)
    backend = metric_spec.get("backend")
    if backend is not None and backend not in ("prometheus", "graphite"):
        raise KServeError(f"{epath}.metric.backend", f"must be prometheus or graphite, got {backend!r}")
    if keda and not metric_spec.get("query"):
        raise KServeError(f"{epath}.metric.query", "the query should not be empty")
    auth = external.get("authenticationRef")
    if auth is not None:
        # KServe's ExtMetricAuthentication: {authenticationRef: {name: <TriggerAuthentication>}, authModes}.
        auth = _mapping(auth, f"{epath}.authenticationRef")
        ref = _mapping(auth.get("authenticationRef"), f"{epath}.authenticationRef.authenticationRef", required=True)
        if not isinstance(ref.get("name"), str) or not ref.get("name"):
            raise KServeError(f"{epath}.authenticationRef.authenticationRef.name", "required")
    target_spec = _mapping(external.get("target"), f"{epath}.target", required=True)
    if keda and target_spec.get("value") is None:
        raise KServeError(f"{epath}.target.value", "the target threshold value should not be empty")
    _check_target(target_spec, f"{epath}.target", values=keda)


def _check_pod_metric(m: dict[str, Any], ppath: str, *, keda: bool) -> None:
    """A PodMetric: its backend (opentelemetry), and with KEDA its query and target value."""
    pod = _mapping(m.get("podmetric"), ppath, required=True)
    metric_spec = _mapping(pod.get("metric"), f"{ppath}.metric", required=True)
    if metric_spec.get("backend") not in (None, "opentelemetry"):
        raise KServeError(f"{ppath}.metric.backend", f"must be opentelemetry, got {metric_spec.get('backend')!r}")
    if keda and not metric_spec.get("query"):
        raise KServeError(f"{ppath}.metric.query", "the query should not be empty")
    target_spec = _mapping(pod.get("target"), f"{ppath}.target", required=True)
    if keda and target_spec.get("value") is None:
        raise KServeError(f"{ppath}.target.value", "the target threshold value should not be empty")
    _check_target(target_spec, f"{ppath}.target", values=keda)


def _check_standard_autoscaler(path: str, autoscaler: Any, metric: Any, target: int | None, metrics: list[Any]) -> None:
    """Standard mode's rules by autoscaler class: the HPA scales on cpu or memory (a utilisation of
    1-100%, memory at least 1 MiB) from Resource metrics only; KEDA takes no scaleMetric."""
    if autoscaler == "hpa":
        if (metric or "cpu") not in HPA_METRICS:
            raise KServeError(f"{path}.scaleMetric", f"[{metric}] is not a supported metric with the HPA (cpu, memory)")
        if target is not None and (((metric or "cpu") == "cpu" and target < 1) or target > 100):
            raise KServeError(f"{path}.scaleTarget", "the target utilization percentage should be a [1-100] integer")
        if metric == "memory" and target is not None and target < 1:
            raise KServeError(f"{path}.scaleTarget", "the target memory should be greater than 1 MiB")
        for i, m in enumerate(metrics):
            if m.get("type") != "Resource":
                raise KServeError(
                    f"{path}.autoScaling.metrics[{i}].type",
                    f"invalid HPA metric source type {m.get('type')!r}: the HPA takes Resource metrics only",
                )
    elif autoscaler == "keda" and metric is not None:
        raise KServeError(f"{path}.scaleMetric", "ScaleMetric is not supported for KEDA")


def _check_knative_autoscaler(path: str, metric: Any, target: int | None) -> None:
    """Knative's own autoscaler (KPA) scales on concurrency or rps, rps of at least 1."""
    if (metric or "concurrency") not in KPA_METRICS:
        raise KServeError(
            f"{path}.scaleMetric",
            f"[{metric}] is not a supported metric with Knative's autoscaler (concurrency, rps)",
        )
    if metric == "rps" and target is not None and target < 1:
        raise KServeError(f"{path}.scaleTarget", "the target for rps should be greater than 1")


def gpu_count(container: dict[str, Any]) -> int:
    """The GPUs a container requests (its requests, else its limits), of any GPU resource type
    (``core.podresources``)."""
    return podresources.container_gpus(container, GPU_RESOURCES)


def _with_gpus(container: dict[str, Any], count: int, env: dict[str, str]) -> dict[str, Any]:
    """The container with ``count`` GPUs in its limits and requests (its own GPU resource type, else
    nvidia.com/gpu) and these environment variables, as KServe writes them on a multi-node pod."""
    out = dict(container)
    resources = {k: dict(v or {}) for k, v in (out.get("resources") or {}).items()}
    kind = next((r for part in resources.values() for r in part if r in GPU_RESOURCES), "nvidia.com/gpu")
    for part in ("limits", "requests"):
        resources.setdefault(part, {})[kind] = str(count)
    out["resources"] = resources
    names = set(env)
    out["env"] = [
        *(e for e in out.get("env") or [] if e.get("name") not in names),
        *({"name": k, "value": v} for k, v in env.items()),
    ]
    return out


def _multinode(
    raw: dict[str, Any],
    defaulted: dict[str, Any],
    path: str,
    containers: tuple[dict[str, Any], ...],
    runtime,
    annotations: dict[str, Any],
    isvc_name: str,
) -> tuple[tuple[dict[str, Any], ...], WorkerSpec, str | None]:
    """(the head's containers with their GPUs and sizes, the workers, why KServe's controller cannot
    size them) of a multi-node predictor: KServe's ``validateMultiNodeVariables`` and
    ``multiNodeProcess`` (see ``multinode``)."""
    wpath = f"{path}.workerSpec"
    wraw = _mapping(raw["workerSpec"], wpath)
    written = _containers_as_written(wraw, wpath, implementation=False)
    if len(written) > 1:
        raise KServeError(f"{wpath}.containers", "setting multiple containers in workerSpec is not allowed")
    pp = _int(wraw.get("pipelineParallelSize"), f"{wpath}.pipelineParallelSize", default=None, minimum=1)
    tp = _int(wraw.get("tensorParallelSize"), f"{wpath}.tensorParallelSize", default=None, minimum=1)
    model = defaulted.get("model")
    if isinstance(model, dict):
        for e in model.get("env") or []:
            if isinstance(e, dict) and e.get("name") in ("PIPELINE_PARALLEL_SIZE", "TENSOR_PARALLEL_SIZE"):
                raise KServeError(
                    f"{path}.model.env",
                    f"setting {e['name']} in environment variables is not allowed: use workerSpec's parallel sizes",
                )
        uri = model.get("storageUri")
        if not uri:
            raise KServeError(f"{path}.model.storageUri", "required for a multi-node predictor")
        if str(uri).split("://")[0] not in ("pvc", "oci"):
            raise KServeError(
                f"{path}.model.storageUri", f"a multi-node predictor supports only pvc and oci storage, got {uri!r}"
            )
        if annotations.get(ANNOTATION_AUTOSCALER_CLASS) != "none":
            raise KServeError(
                f"metadata.annotations[{ANNOTATION_AUTOSCALER_CLASS}]",
                "a multi-node predictor supports only the autoscaler class none",
            )
    problem = None
    runtime_worker = runtime.worker if runtime is not None else None
    if runtime is not None and runtime_worker is None:
        problem = "you cannot set WorkerSpec in the InferenceService if the ServingRuntime does not have a WorkerSpec"
    pp = pp or (runtime_worker or {}).get("pipelineParallelSize") or DEFAULT_PARALLEL_SIZE
    tp = tp or (runtime_worker or {}).get("tensorParallelSize") or DEFAULT_PARALLEL_SIZE
    fields = {k: v for k, v in (written[0] if written else {}).items() if k != "name"}
    runtime_containers = (runtime_worker or {}).get("containers") or []
    if runtime_containers:
        worker_container = merged_container(runtime_containers[0], fields, isvc_name)
    else:
        worker_container = {**containers[0], **fields}
    worker_container["name"] = WORKER_CONTAINER
    try:
        nodes = multinode(
            int(pp),
            int(tp),
            head_gpus=gpu_count(containers[0]),
            worker_gpus=gpu_count(worker_container),
            backend=(runtime.executor_backend if runtime is not None else "") or BACKEND_RAY,
        )
    except InsufficientGPUs as err:
        return containers, WorkerSpec(0, (worker_container,)), problem or str(err)
    sizes = {"PIPELINE_PARALLEL_SIZE": str(pp), "TENSOR_PARALLEL_SIZE": str(tp), "RAY_NODE_COUNT": str(nodes.nodes)}
    head = _with_gpus(containers[0], nodes.head_gpus, {**sizes, "REQUEST_GPU_COUNT": str(nodes.head_gpus)})
    worker_container = _with_gpus(
        worker_container, nodes.worker_gpus, {**sizes, "REQUEST_GPU_COUNT": str(nodes.worker_gpus)}
    )
    return (head, *containers[1:]), WorkerSpec(nodes.workers, (worker_container,), nodes), problem


def _deployment_replicas(min_replicas: int, written: bool, mode: str, annotations: dict[str, Any]) -> int:
    """The pods a Standard-mode Deployment keeps without load: ``minReplicas`` as written with the
    autoscaler class ``none`` (KServe sets the Deployment's replicas to it, 0 included); otherwise
    an HPA (or KEDA) keeps at least one (KServe's HPA takes ``max(minReplicas, 1)``)."""
    if mode == STANDARD and annotations.get(ANNOTATION_AUTOSCALER_CLASS) == "none" and written:
        return min_replicas
    return max(min_replicas, 1)


def _component(
    raw: Any,
    path: str,
    kind: str,
    mode: str,
    *,
    canary: bool = False,
    namespace: str = "default",
    isvc_name: str = "",
    runtimes=None,
    annotations: dict[str, Any] | None = None,
    warnings: list | None = None,
) -> Component:
    raw = _mapping(raw, path, required=True)
    annotations = annotations or {}
    runtimes = DEFAULT_RUNTIMES if runtimes is None else runtimes
    min_replicas = _int(raw.get("minReplicas"), f"{path}.minReplicas", default=1)
    max_replicas = _int(raw.get("maxReplicas"), f"{path}.maxReplicas", default=None)
    if max_replicas is not None and max_replicas and max_replicas < (min_replicas or 0):
        raise KServeError(f"{path}.maxReplicas", f"must be at least minReplicas ({min_replicas}), got {max_replicas}")
    percent = _int(raw.get("canaryTrafficPercent"), f"{path}.canaryTrafficPercent", default=None, maximum=100)
    if percent is not None and mode == STANDARD:
        # KServe's webhook accepts it in Standard mode and nothing reads it there.
        if warnings is not None:
            warnings.append(
                SpecWarning(
                    f"{path}.canaryTrafficPercent",
                    "applies to Knative mode only; KServe accepts it in Standard mode and ignores it: "
                    "use spec.canary[] for a Standard-mode canary (KServe 0.20)",
                )
            )
        percent = None
    _check_autoscaling(raw, path, mode, annotations)
    defaulted = _default_frameworks(raw, path, kind)
    multi_node = kind == "predictor" and not canary and raw.get("workerSpec") is not None
    containers, impl_index, runtime, problem, chosen = _pod_containers(
        defaulted, path, kind, namespace, isvc_name, runtimes, multi_node=multi_node
    )
    worker = None
    if raw.get("workerSpec") is not None:
        if kind != "predictor" or canary:
            raise KServeError(f"{path}.workerSpec", "only the stable predictor can be multi-node")
        containers, worker, worker_problem = _multinode(
            raw, defaulted, path, containers, chosen, annotations, isvc_name
        )
        problem = problem or worker_problem
    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not _DNS1035.match(name)):
        raise KServeError(f"{path}.name", f"must be a lowercase DNS label, got {name!r}")
    return Component(
        kind=kind,
        name=name,
        min_replicas=int(min_replicas or 0),
        max_replicas=max_replicas,
        canary_traffic_percent=percent,
        strategy=_user_strategy(raw.get("deploymentStrategy"), f"{path}.deploymentStrategy", mode),
        containers=containers,
        worker=worker,
        raw=raw,
        impl_index=impl_index,
        runtime=runtime,
        runtime_problem=problem,
        replicas=_deployment_replicas(int(min_replicas or 0), raw.get("minReplicas") is not None, mode, annotations),
    )


def _has_model(predictor: Component) -> bool:
    """KServe's canary check: the stable predictor has a model (a per-framework field is one), or
    its implementation names a storage URI (a kserve-container's STORAGE_URI)."""
    if any(predictor.raw.get(k) is not None for k in (*FRAMEWORKS, "model")):
        return True
    env = predictor.containers[predictor.impl_index].get("env") or []
    return any(isinstance(e, dict) and e.get("name") == "STORAGE_URI" for e in env)


def _canaries(raw: Any, stable: Component, mode: str, **context: Any) -> tuple[Canary, ...]:
    if raw is None:
        return ()
    path = "spec.canary"
    if not isinstance(raw, list):
        raise KServeError(path, "must be a list")
    if raw and mode != STANDARD:
        raise KServeError(path, "canary entries are only supported in Standard deployment mode (KServe 0.20)")
    if raw and not _has_model(stable):
        raise KServeError(
            path, "canary requires a stable predictor with a model (multi-model serving is not supported with canary)"
        )
    out: list[Canary] = []
    seen: set[str] = set()
    total = 0
    for i, entry in enumerate(raw):
        epath = f"{path}[{i}]"
        entry = _mapping(entry, epath)
        predictor_raw = _mapping(entry.get("predictor"), f"{epath}.predictor", required=True)
        name = predictor_raw.get("name")
        if not isinstance(name, str) or not name:
            raise KServeError(f"{epath}.predictor.name", "required")
        if name in seen:
            raise KServeError(f"{epath}.predictor.name", f"canary name {name!r} is used twice")
        if name == (stable.name or "predictor"):
            raise KServeError(f"{epath}.predictor.name", f"must differ from the stable predictor's name {name!r}")
        seen.add(name)
        if predictor_raw.get("workerSpec") is not None:
            raise KServeError(f"{epath}.predictor.workerSpec", "a canary cannot be multi-node")
        for key in AUTOSCALING_FIELDS:
            if predictor_raw.get(key) is not None:
                raise KServeError(f"{epath}.predictor.{key}", "a canary cannot carry autoscaling fields")
        percent = _int(entry.get("trafficPercent"), f"{epath}.trafficPercent", default=0, maximum=100) or 0
        total += percent
        comp = _component(predictor_raw, f"{epath}.predictor", "predictor", mode, canary=True, **context)
        if comp.min_replicas > stable.min_replicas:
            raise KServeError(
                f"{epath}.predictor.minReplicas",
                f"must not exceed the stable predictor's minReplicas ({stable.min_replicas}), got {comp.min_replicas}",
            )
        out.append(Canary(name, percent, comp))
    if total > 100:
        raise KServeError(path, f"traffic percentages add up to {total}%, more than 100%")
    return tuple(out)


def parse_inferenceservice(manifest: Any, config: DeployConfig, runtimes=None) -> InferenceService:
    """The InferenceService as KServe's webhooks admit it (defaults applied), with the pods KServe
    would build for it: ``runtimes`` are the ServingRuntimes it may use (default: those of a fresh
    KServe installation, ``runtimes.DEFAULT_RUNTIMES``). Raises ``KServeError`` naming the field."""
    if not isinstance(manifest, dict):
        raise KServeError("(manifest)", "must be an object")
    if manifest.get("apiVersion") != API_VERSION:
        raise KServeError("apiVersion", f"must be {API_VERSION}, got {manifest.get('apiVersion')!r}")
    if manifest.get("kind") != KIND:
        raise KServeError("kind", f"must be {KIND}, got {manifest.get('kind')!r}")
    meta = _mapping(manifest.get("metadata"), "metadata", required=True)
    name = meta.get("name")
    if not isinstance(name, str) or not _DNS1035.match(name) or len(name) > 45:
        raise KServeError("metadata.name", f"must be a DNS-1035 label of at most 45 characters, got {name!r}")
    namespace = meta.get("namespace") or "default"
    annotations = _mapping(meta.get("annotations"), "metadata.annotations")
    if config.error is not None:
        # KServe's webhook cannot read its ConfigMap either: it admits nothing until it is fixed.
        raise KServeError(
            config.error.field, f"{config.error.rule} (KServe admits no InferenceService until it is fixed)"
        )
    mode, warnings = deployment_mode_of(annotations, config, (manifest.get("status") or {}).get("deploymentMode"))
    spec = _mapping(manifest.get("spec"), "spec", required=True)

    def parsed(components: dict[str, Component], canaries: tuple[Canary, ...]) -> InferenceService:
        # ``warnings`` as it stands once the components and canaries were parsed (they add to it).
        return InferenceService(
            name=name,
            namespace=namespace,
            uid=str(meta.get("uid") or ""),
            generation=int(meta.get("generation") or 0),
            deployment_mode=mode,
            components=components,
            canaries=canaries,
            manifest=manifest,
            warnings=tuple(warnings),
        )

    if mode == MODELMESH:
        return parsed({}, ())
    autoscaler = annotations.get(ANNOTATION_AUTOSCALER_CLASS)
    if autoscaler is not None and autoscaler not in AUTOSCALER_CLASSES:
        raise KServeError(
            f"metadata.annotations[{ANNOTATION_AUTOSCALER_CLASS}]",
            f"[{autoscaler}] is not a supported autoscaler class type (one of {', '.join(AUTOSCALER_CLASSES)})",
        )
    context = {
        "namespace": namespace,
        "isvc_name": name,
        "runtimes": runtimes,
        "annotations": annotations,
        "warnings": warnings,
    }
    components: dict[str, Component] = {}
    for kind in COMPONENTS:
        if spec.get(kind) is not None or kind == "predictor":
            components[kind] = _component(spec.get(kind), f"spec.{kind}", kind, mode, **context)
    return parsed(components, _canaries(spec.get("canary"), components["predictor"], mode, **context))


def deployment_mode_of(
    annotations: dict[str, Any], config: DeployConfig, recorded: Any = None
) -> tuple[str, list[SpecWarning]]:
    """The mode KServe runs the InferenceService in (``GetDeploymentMode``): the one its status
    records once KServe has reconciled it (``recorded``; a later ConfigMap default changes nothing
    for it), else the annotation when it names a mode, current or legacy name, else the ConfigMap's
    default, with a warning when the annotation says something KServe ignores."""
    recorded_mode = current_mode_name(recorded)
    if recorded_mode is not None:
        return recorded_mode, []
    if ANNOTATION_DEPLOYMENT_MODE not in annotations:
        return config.default_deployment_mode, []
    raw = annotations[ANNOTATION_DEPLOYMENT_MODE]
    mode = current_mode_name(raw)
    if mode is not None:
        return mode, []
    path = f"metadata.annotations[{ANNOTATION_DEPLOYMENT_MODE}]"
    return config.default_deployment_mode, [
        SpecWarning(
            path,
            f"{raw!r} is not a deployment mode (Standard, Knative, ModelMesh or the legacy RawDeployment, "
            f"Serverless): KServe ignores it and runs the ConfigMap's default, {config.default_deployment_mode}",
        )
    ]


def check_mode_unchanged(old: dict[str, Any], new: dict[str, Any]) -> None:
    """KServe's webhook refuses an update whose annotation names another mode than the one the
    status records (``validateDeploymentMode``; legacy names are compared by their current name, as
    the defaulting webhook rewrites them first)."""
    recorded = current_mode_name((old.get("status") or {}).get("deploymentMode"))
    annotations = (new.get("metadata") or {}).get("annotations") or {}
    if recorded is None or ANNOTATION_DEPLOYMENT_MODE not in annotations:
        return
    raw = annotations[ANNOTATION_DEPLOYMENT_MODE]
    if (current_mode_name(raw) or raw) != recorded:
        raise KServeError(
            f"metadata.annotations[{ANNOTATION_DEPLOYMENT_MODE}]",
            f"deploymentMode cannot be changed from {recorded!r} to {raw!r} (KServe refuses the update)",
        )
