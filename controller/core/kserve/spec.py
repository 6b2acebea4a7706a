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
RollingUpdate, malformed int-or-percent values, both budgets 0, ``spec.canary`` outside Standard
mode, canary names that repeat or equal the stable predictor's, traffic over 100%, a canary with
a worker spec or autoscaling fields, a canary ``minReplicas`` above the stable one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..intorpercent import IntOrPercent, IntOrPercentError
from .config import KNATIVE, MODELMESH, STANDARD, DeployConfig, current_mode_name
from .errors import KServeError
from .strategy import UserStrategy

API_VERSION = "serving.kserve.io/v1beta1"
KIND = "InferenceService"
ANNOTATION_DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode"
COMPONENTS = ("predictor", "transformer", "explainer")
# Fields of a component that configure autoscaling (not allowed on a Standard-mode canary).
AUTOSCALING_FIELDS = ("maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "autoScaling")
DEFAULT_PIPELINE_PARALLEL_SIZE = 2  # KServe's default for a multi-node (Ray) predictor

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """A multi-node predictor: the head is the predictor's pod, the workers ``RAY_NODE_COUNT - 1``
    more (``pipelineParallelSize`` nodes in all)."""

    replicas: int
    containers: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Component:
    kind: str  # predictor | transformer | explainer
    name: str | None  # predictor.name (the stable predictor's name for spec.canary promotion)
    min_replicas: int
    max_replicas: int | None
    canary_traffic_percent: int | None
    strategy: UserStrategy | None
    containers: tuple[dict[str, Any], ...]
    worker: WorkerSpec | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def image(self) -> str:
        return str(self.containers[0].get("image") or "")


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
    if kind != "RollingUpdate":
        raise KServeError(f"{path}.type", f"must be RollingUpdate, got {kind!r}")
    rolling = _mapping(raw.get("rollingUpdate"), f"{path}.rollingUpdate")
    surge = _budget(rolling.get("maxSurge"), f"{path}.rollingUpdate.maxSurge", max_percent=None)
    unavailable = _budget(rolling.get("maxUnavailable"), f"{path}.rollingUpdate.maxUnavailable", max_percent=100)
    if surge is not None and unavailable is not None and surge.value == 0 and unavailable.value == 0:
        raise KServeError(
            f"{path}.rollingUpdate.maxUnavailable",
            "may not be 0 when maxSurge is 0: the rollout could never progress",
        )
    return UserStrategy(kind, surge, unavailable)


def _containers(raw: dict[str, Any], path: str, kind: str) -> tuple[dict[str, Any], ...]:
    """The component's containers: its ``containers`` list, or the ``model`` (a model spec is a
    container too: its image, or the serving runtime's image for its model format)."""
    containers = raw.get("containers")
    model = raw.get("model")
    if containers is not None:
        if not isinstance(containers, list) or not containers:
            raise KServeError(f"{path}.containers", "must list at least one container")
        out = []
        for i, c in enumerate(containers):
            c = _mapping(c, f"{path}.containers[{i}]")
            if not isinstance(c.get("image"), str) or not c.get("image"):
                raise KServeError(f"{path}.containers[{i}].image", "required")
            out.append({**c, "name": c.get("name") or ("kserve-container" if i == 0 else f"kserve-container-{i}")})
        return tuple(out)
    if model is not None:
        model = _mapping(model, f"{path}.model")
        fmt = (_mapping(model.get("modelFormat"), f"{path}.model.modelFormat").get("name")) or ""
        image = model.get("image")
        if image is None:
            if not fmt:
                raise KServeError(f"{path}.model.modelFormat.name", "required when model.image is not given")
            image = f"kserve/{fmt}server:latest"
        if not isinstance(image, str) or not image:
            raise KServeError(f"{path}.model.image", "must be a non-empty image reference")
        container = {
            k: v for k, v in model.items() if k not in ("modelFormat", "runtime", "storageUri", "protocolVersion")
        }
        container.update(name="kserve-container", image=image)
        if model.get("storageUri"):
            env = [e for e in container.get("env") or [] if e.get("name") != "STORAGE_URI"]
            container["env"] = [*env, {"name": "STORAGE_URI", "value": model["storageUri"]}]
        return (container,)
    raise KServeError(path, f"the {kind} needs either model or containers")


def _component(raw: Any, path: str, kind: str, mode: str, *, canary: bool = False) -> Component:
    raw = _mapping(raw, path, required=True)
    min_replicas = _int(raw.get("minReplicas"), f"{path}.minReplicas", default=1)
    max_replicas = _int(raw.get("maxReplicas"), f"{path}.maxReplicas", default=None)
    if max_replicas is not None and max_replicas and max_replicas < (min_replicas or 0):
        raise KServeError(f"{path}.maxReplicas", f"must be at least minReplicas ({min_replicas}), got {max_replicas}")
    percent = _int(raw.get("canaryTrafficPercent"), f"{path}.canaryTrafficPercent", default=None, maximum=100)
    if percent is not None and mode == STANDARD:
        raise KServeError(
            f"{path}.canaryTrafficPercent",
            "applies to Knative mode only; in Standard mode use spec.canary[] (KServe 0.20)",
        )
    containers = _containers(raw, path, kind)
    worker = None
    if raw.get("workerSpec") is not None:
        wpath = f"{path}.workerSpec"
        if kind != "predictor" or canary:
            raise KServeError(wpath, "only the stable predictor can be multi-node")
        wraw = _mapping(raw["workerSpec"], wpath)
        pp = _int(
            wraw.get("pipelineParallelSize"),
            f"{wpath}.pipelineParallelSize",
            default=DEFAULT_PIPELINE_PARALLEL_SIZE,
            minimum=2,
        )
        _int(wraw.get("tensorParallelSize"), f"{wpath}.tensorParallelSize", default=1, minimum=1)
        # Workers run the head's containers unless the worker spec names its own.
        wcontainers = _containers(wraw, wpath, "worker") if wraw.get("containers") else containers
        worker = WorkerSpec(int(pp or DEFAULT_PIPELINE_PARALLEL_SIZE) - 1, wcontainers)
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
    )


def _canaries(raw: Any, stable: Component, mode: str) -> tuple[Canary, ...]:
    if raw is None:
        return ()
    path = "spec.canary"
    if not isinstance(raw, list):
        raise KServeError(path, "must be a list")
    if raw and mode != STANDARD:
        raise KServeError(path, "canary entries are only supported in Standard deployment mode (KServe 0.20)")
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
        comp = _component(predictor_raw, f"{epath}.predictor", "predictor", mode, canary=True)
        if comp.min_replicas > stable.min_replicas:
            raise KServeError(
                f"{epath}.predictor.minReplicas",
                f"must not exceed the stable predictor's minReplicas ({stable.min_replicas}), got {comp.min_replicas}",
            )
        out.append(Canary(name, percent, comp))
    if total > 100:
        raise KServeError(path, f"traffic percentages add up to {total}%, more than 100%")
    return tuple(out)


def parse_inferenceservice(manifest: Any, config: DeployConfig) -> InferenceService:
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
    if mode == MODELMESH:
        return InferenceService(
            name=name,
            namespace=namespace,
            uid=str(meta.get("uid") or ""),
            generation=int(meta.get("generation") or 0),
            deployment_mode=mode,
            components={},
            canaries=(),
            manifest=manifest,
            warnings=tuple(warnings),
        )
    components: dict[str, Component] = {}
    for kind in COMPONENTS:
        if spec.get(kind) is not None or kind == "predictor":
            components[kind] = _component(spec.get(kind), f"spec.{kind}", kind, mode)
    return InferenceService(
        name=name,
        namespace=namespace,
        uid=str(meta.get("uid") or ""),
        generation=int(meta.get("generation") or 0),
        deployment_mode=mode,
        components=components,
        canaries=_canaries(spec.get("canary"), components["predictor"], mode),
        manifest=manifest,
        warnings=tuple(warnings),
    )


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
