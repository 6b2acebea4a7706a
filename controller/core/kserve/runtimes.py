"""ServingRuntimes: which container serves a predictor's ``model``, picked as KServe picks it.

A ``model`` names a format (``modelFormat: {name: sklearn}``) and maybe a runtime; KServe turns it
into the pod's ``kserve-container`` by taking the container of a ServingRuntime (or
ClusterServingRuntime) and laying the model's own container fields over it (its image, env,
resources...; its args come after the runtime's). The runtime is:

- ``model.runtime`` when given (it must exist, be enabled, support the format, and the protocol
  version when the model names one);
- else the first runtime that supports the format with ``autoSelect``, the model's protocol version
  (``v1`` unless it says otherwise) and the model's kind (multi-node predictors need a runtime with
  a ``workerSpec``, the others one without): namespace runtimes before cluster ones, each group by
  the format's ``priority``, highest first. Format names are compared exactly (``vLLM`` is not
  ``vllm``), as KServe compares them.

No runtime found is not a webhook refusal: KServe admits the InferenceService and its controller
then reports the predictor as failed ("no runtime found to support predictor with model type").

``DEFAULT_RUNTIMES`` is the set a fresh KServe installation has (its ``config/runtimes``): the
embedded cluster runs with it, and with any ServingRuntime objects created beside it. Example:
``modelFormat: sklearn`` -> ``kserve-sklearnserver`` (image ``kserve/sklearnserver:latest``);
with ``protocolVersion: v2`` -> ``kserve-mlserver`` (priority 2 beats 1).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

KIND_CLUSTER = "ClusterServingRuntime"
ANNOTATION_SERVER_TYPE = "serving.kserve.io/server-type"
# Server types whose GPU build is the same image with a "-gpu" tag suffix, and the one whose CPU
# build is a sibling repository "<image>-cpu" (KServe's UpdateImageTag).
GPU_TAG_SERVER_TYPES = ("tensorflow-serving", "torchserve", "huggingfaceserver")
CPU_REPOSITORY_SERVER_TYPE = "vllmserver"
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "intel.com/gpu", "habana.ai/gaudi")
KIND_NAMESPACED = "ServingRuntime"
DEFAULT_PROTOCOL = "v1"


@dataclass(frozen=True, slots=True)
class SupportedFormat:
    name: str
    version: str | None = None
    auto_select: bool = False
    priority: int | None = None


@dataclass(frozen=True, slots=True)
class ServingRuntime:
    name: str
    formats: tuple[SupportedFormat, ...]
    containers: tuple[dict[str, Any], ...]
    protocol_versions: tuple[str, ...] = ()
    cluster: bool = True
    namespace: str | None = None
    disabled: bool = False
    multi_model: bool = False
    # Its annotation serving.kserve.io/server-type: which image variants KServe picks for it.
    server_type: str = ""
    # Its annotation multinode/executor-backend: how a multi-node predictor is sized (ray or mp).
    executor_backend: str = ""
    # The runtime's workerSpec (multi-node): its parallel sizes and worker container.
    worker: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def multi_node(self) -> bool:
        return self.worker is not None

    def supports_protocol(self, protocol: str | None) -> bool:
        return not protocol or not self.protocol_versions or protocol in self.protocol_versions

    def priority(self, format_name: str) -> int | None:
        return next((f.priority for f in self.formats if f.name == format_name), None)

    def supports(self, name: str, version: str | None, *, explicit: bool) -> bool:
        """KServe's ``RuntimeSupportsModel``: the model's format (and version, when it names one)
        is among the runtime's, counting only ``autoSelect`` formats unless the model names the
        runtime itself."""
        labels = set()
        for f in self.formats:
            if explicit or f.auto_select:
                labels.add(f.name)
                if f.version is not None:
                    labels.add(f"{f.name}:{f.version}")
        return (f"{name}:{version}" if version is not None else name) in labels


def _runtime(
    name: str,
    image: str,
    formats: list[tuple[str, str | None, bool | None, int | None]],
    protocols: tuple[str, ...] = ("v1", "v2"),
    *,
    args: tuple[str, ...] = (),
    worker: dict[str, Any] | None = None,
    multi_model: bool = False,
    server_type: str = "",
) -> ServingRuntime:
    container: dict[str, Any] = {"name": "kserve-container", "image": image}
    if args:
        container["args"] = list(args)
    return ServingRuntime(
        name=name,
        formats=tuple(SupportedFormat(n, v, bool(a), p) for n, v, a, p in formats),
        containers=(container,),
        protocol_versions=protocols,
        worker=worker,
        multi_model=multi_model,
        server_type=server_type or name.removeprefix("kserve-"),
    )


_MODEL_ARGS = ("--model_name={{.Name}}", "--model_dir=/mnt/models", "--http_port=8080")

# The ClusterServingRuntimes of a fresh KServe installation (names, formats with their version,
# autoSelect and priority, protocols, and the images its kustomization sets).
DEFAULT_RUNTIMES: tuple[ServingRuntime, ...] = (
    _runtime(
        "kserve-tensorflow-serving",
        "tensorflow/serving:2.6.2",
        [("tensorflow", "1", True, 2), ("tensorflow", "2", True, 2)],
        ("v1", "grpc-v1"),
        args=("--model_name={{.Name}}", "--port=9000", "--rest_api_port=8080", "--model_base_path=/mnt/models"),
        server_type="tensorflow-serving",
    ),
    _runtime("kserve-sklearnserver", "kserve/sklearnserver:latest", [("sklearn", "1", True, 1)], args=_MODEL_ARGS),
    _runtime(
        "kserve-predictiveserver",
        "kserve/predictiveserver:latest",
        [("sklearn", "1", False, 3), ("xgboost", "2", False, 3), ("lightgbm", "4", False, 3)],
        args=_MODEL_ARGS,
    ),
    _runtime(
        "kserve-mlserver",
        "docker.io/seldonio/mlserver:1.7.1",
        [
            ("sklearn", "0", True, 2),
            ("sklearn", "1", True, 2),
            ("xgboost", "1", True, 2),
            ("xgboost", "2", True, 2),
            ("lightgbm", "3", True, 2),
            ("lightgbm", "4", True, 2),
            ("mlflow", "1", True, 1),
            ("mlflow", "2", True, 1),
        ],
        ("v2",),
    ),
    _runtime("kserve-xgbserver", "kserve/xgbserver:latest", [("xgboost", "2", True, 1)], args=_MODEL_ARGS),
    _runtime(
        "kserve-tritonserver",
        "nvcr.io/nvidia/tritonserver:23.05-py3",
        [
            ("tensorrt", "8", True, 1),
            ("tensorflow", "1", True, 1),
            ("tensorflow", "2", True, 1),
            ("onnx", "1", True, 1),
            ("pytorch", "1", None, None),
            ("triton", "2", True, 1),
        ],
        ("v2", "grpc-v2"),
        args=("tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080"),
    ),
    _runtime(
        "kserve-pmmlserver",
        "kserve/pmmlserver:latest",
        [("pmml", "3", True, 1), ("pmml", "4", True, 1)],
        args=_MODEL_ARGS,
    ),
    _runtime("kserve-paddleserver", "kserve/paddleserver:latest", [("paddle", "2", True, 1)], args=_MODEL_ARGS),
    _runtime("kserve-lgbserver", "kserve/lgbserver:latest", [("lightgbm", "4", True, 1)], args=_MODEL_ARGS),
    _runtime(
        "kserve-torchserve",
        "pytorch/torchserve-kfs:0.9.0",
        [("pytorch", "1", True, 2)],
        ("v1", "v2", "grpc-v2"),
        args=("torchserve", "--start", "--model-store=/mnt/models/model-store"),
    ),
    _runtime(
        "kserve-huggingfaceserver",
        "kserve/huggingfaceserver:latest",
        [("huggingface", "1", True, 1)],
        ("v2", "v1"),
        args=("--model_name={{.Name}}",),
    ),
    _runtime(
        "kserve-huggingfaceserver-multinode",
        "kserve/huggingfaceserver:latest-gpu",
        [("huggingface", "1", True, 2)],
        ("v2", "v1"),
        args=("--model_name={{.Name}}",),
        server_type="huggingfaceserver",
        worker={
            "pipelineParallelSize": 1,
            "tensorParallelSize": 1,
            "containers": [{"name": "worker-container", "image": "kserve/huggingfaceserver:latest-gpu"}],
        },
    ),
    _runtime(
        "kserve-autogluonserver", "kserve/autogluonserver:latest", [("autogluon", "1", True, 1)], args=_MODEL_ARGS
    ),
    _runtime(
        "kserve-vllmserver",
        "vllm/vllm-openai:latest",
        [("vLLM", "1", True, 1)],
        (),
        args=("--port=8080", "--served-model-name={{.Name}}", "--model=/mnt/models"),
    ),
)


def runtime_from_object(obj: dict[str, Any]) -> ServingRuntime | None:
    """A ServingRuntime or ClusterServingRuntime object as a ``ServingRuntime`` (None when it has no
    name or no container)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    containers = spec.get("containers") or []
    if not meta.get("name") or not isinstance(containers, list) or not containers:
        return None
    formats = []
    for f in spec.get("supportedModelFormats") or []:
        if isinstance(f, dict) and f.get("name"):
            version = f.get("version")
            formats.append(
                SupportedFormat(
                    str(f["name"]),
                    None if version is None else str(version),
                    bool(f.get("autoSelect")),
                    f.get("priority") if isinstance(f.get("priority"), int) else None,
                )
            )
    cluster = obj.get("kind") == KIND_CLUSTER
    return ServingRuntime(
        name=str(meta["name"]),
        formats=tuple(formats),
        containers=tuple(copy.deepcopy(c) for c in containers if isinstance(c, dict)),
        protocol_versions=tuple(spec.get("protocolVersions") or ()),
        cluster=cluster,
        namespace=None if cluster else meta.get("namespace") or "default",
        disabled=bool(spec.get("disabled")),
        multi_model=bool(spec.get("multiModel")),
        server_type=str((meta.get("annotations") or {}).get(ANNOTATION_SERVER_TYPE) or ""),
        executor_backend=str((meta.get("annotations") or {}).get("multinode/executor-backend") or ""),
        worker=copy.deepcopy(spec["workerSpec"]) if isinstance(spec.get("workerSpec"), dict) else None,
    )


def installed_runtimes(cluster_objects: list[dict[str, Any]], namespaced_objects: list[dict[str, Any]]):
    """The runtimes KServe may pick from: those of a fresh installation (``DEFAULT_RUNTIMES``), a
    ClusterServingRuntime object of the same name replacing one, and the ServingRuntime objects."""
    created = [r for r in (runtime_from_object(o) for o in [*cluster_objects, *namespaced_objects]) if r is not None]
    replaced = {r.name for r in created if r.cluster}
    return (*(r for r in DEFAULT_RUNTIMES if r.name not in replaced), *created)


@dataclass(frozen=True, slots=True)
class Selection:
    runtime: ServingRuntime | None
    problem: str | None  # why there is none (KServe's controller reports it on the predictor)


def select_runtime(
    runtimes: tuple[ServingRuntime, ...],
    namespace: str,
    *,
    format_name: str,
    format_version: str | None,
    runtime: str | None,
    protocol: str | None,
    multi_node: bool,
) -> Selection:
    """The runtime KServe uses for a model (see the module docstring)."""
    visible = [r for r in runtimes if r.cluster or r.namespace == namespace]
    if runtime is not None:
        # A namespace runtime of that name first, then a cluster one (KServe's GetServingRuntime).
        named = [r for r in visible if r.name == runtime]
        named.sort(key=lambda r: r.cluster)
        if not named:
            return Selection(None, f"runtime {runtime!r} not found (waiting for it to become available)")
        chosen = named[0]
        if chosen.disabled:
            return Selection(None, f"specified runtime {runtime} is disabled")
        if protocol is not None and not chosen.supports_protocol(protocol):
            return Selection(None, f"specified runtime {runtime} does not support protocol version {protocol}")
        if not chosen.supports(format_name, format_version, explicit=True):
            return Selection(None, f"specified runtime {runtime} does not support format {format_name}")
        return Selection(chosen, None)
    wanted = protocol or DEFAULT_PROTOCOL
    candidates = [
        r
        for r in visible
        if not r.disabled
        and not r.multi_model
        and r.multi_node == multi_node
        and r.supports(format_name, format_version, explicit=False)
        and r.supports_protocol(wanted)
    ]

    def by_priority(group: list[ServingRuntime]) -> list[ServingRuntime]:
        # Higher priority first; a runtime without one after those with one; ties keep their order.
        return sorted(group, key=lambda r: (r.priority(format_name) is None, -(r.priority(format_name) or 0)))

    ordered = by_priority([r for r in candidates if not r.cluster]) + by_priority([r for r in candidates if r.cluster])
    if not ordered:
        label = format_name + (f":{format_version}" if format_version else "")
        return Selection(None, f"no runtime found to support predictor with model type {label}")
    return Selection(ordered[0], None)


def merged_container(runtime_container: dict[str, Any], model_fields: dict[str, Any], isvc_name: str) -> dict[str, Any]:
    """The runtime's container with the model's fields laid over it (KServe's
    ``MergeRuntimeContainers``): the model's value wins field by field, env entries by name, and
    the model's args come after the runtime's; ``{{.Name}}`` becomes the InferenceService's name."""
    out = copy.deepcopy(runtime_container)
    for key, value in model_fields.items():
        if key == "args":
            out["args"] = [*(out.get("args") or []), *value]
        elif key == "env":
            env = {e.get("name"): e for e in out.get("env") or []}
            for e in value or []:
                env[e.get("name")] = e
            out["env"] = list(env.values())
        elif key == "resources" and isinstance(value, dict):
            resources = dict(out.get("resources") or {})
            for part, amounts in value.items():
                resources[part] = {**(resources.get(part) or {}), **(amounts or {})}
            out["resources"] = resources
        else:
            out[key] = copy.deepcopy(value)
    for key in ("args", "command"):
        if out.get(key):
            out[key] = [a.replace("{{.Name}}", isvc_name) if isinstance(a, str) else a for a in out[key]]
    out["name"] = "kserve-container"
    return out


_TAG = re.compile(r":[\w.\-]*$")


def gpu_enabled(container: dict[str, Any]) -> bool:
    resources = container.get("resources") or {}
    for part in ("limits", "requests"):
        for name, amount in (resources.get(part) or {}).items():
            if name in GPU_RESOURCES and str(amount) not in ("0", ""):
                return True
    return False


def updated_image(container: dict[str, Any], runtime_version: str | None, server_type: str) -> str:
    """The image KServe runs for a model's merged container (``UpdateImageTag``): ``runtimeVersion``
    replaces the tag (``tensorflow/serving:2.6.2`` with ``1.14.0`` -> ``tensorflow/serving:1.14.0``);
    without it, a GPU container of TF Serving, TorchServe or the Hugging Face server gets its
    ``-gpu`` tag, and a vLLM container without a GPU its ``-cpu`` repository. Digests are kept."""
    image = str(container.get("image") or "")
    if "@sha256:" in image:
        return image
    if runtime_version:
        return _TAG.sub(f":{runtime_version}", image) if _TAG.search(image) else f"{image}:{runtime_version}"
    match = _TAG.search(image)
    if not match or not server_type:
        return image
    if gpu_enabled(container):
        if server_type in GPU_TAG_SERVER_TYPES and not image.endswith("-gpu"):
            return image + "-gpu"
    elif server_type == CPU_REPOSITORY_SERVER_TYPE and not image[: match.start()].endswith("-cpu"):
        return image[: match.start()] + "-cpu" + match.group(0)
    return image
