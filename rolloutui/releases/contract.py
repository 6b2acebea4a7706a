"""The release records' contract, checked in one place (docs/releases.md, "Records").

Pure Python (no Django): the REST API, the CLI, the admin forms and the service functions all run
these checks, so a bad value is refused with the same words everywhere, as a ``ControlError`` naming
the field in the API's spelling (``runtimeImage``, ``preprocessing.checksum``).

Worked examples:

- ``runtime_image("vllm/vllm-openai@sha256:" + 64 * "a")`` is accepted; ``runtime_image("vllm/vllm-openai:v0.9.1")``
  is refused: a tag can be moved to other bytes, a digest cannot, so a release pinned by tag would
  not say what it runs.
- ``checksum("AB" * 32)`` -> ``"sha256:abab..."`` (a bare 64-digit hex is the same SHA-256, stored with
  its algorithm); ``checksum("md5:...")`` is refused.
- ``quantity("500m")``, ``quantity("64Gi")`` and ``quantity(8)`` are Kubernetes quantities; ``"8 GB"`` is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controller.core.controls import ControlError

# A DNS label: a model name is part of the label value ``<model>.<version>`` and of URLs.
MODEL_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# A version is a URL segment and part of a label value: letters, digits, '.', '_' and '-'.
VERSION_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
ENVIRONMENT_NAME = MODEL_NAME
K8S_NAME = re.compile(r"[a-z0-9]([-.a-z0-9]*[a-z0-9])?")
LABEL_VALUE_MAX = 63

SHA256 = re.compile(r"(?:sha256:)?([0-9a-fA-F]{64})")
# name[:tag]@sha256:<64 hex>: the repository path (optionally with a registry host and port), an
# optional tag (informative only: the digest decides what runs), and the digest.
_REPOSITORY = r"[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
DIGEST_IMAGE = re.compile(rf"(?P<repository>{_REPOSITORY})(?::(?P<tag>{_TAG}))?@(?P<digest>sha256:[0-9a-f]{{64}})")
URI = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")

BATCHING_KEYS = ("maxBatchSize", "maxConcurrentSequences")
TIMEOUT_KEYS = ("requestSeconds", "loadSeconds")
RESOURCE_KEYS = ("cpu", "memory", "gpus")

KIND_MODELSERVING = "ModelServing"
KIND_INFERENCESERVICE = "InferenceService"
TARGET_KINDS = (KIND_MODELSERVING, KIND_INFERENCESERVICE)


def _fail(field: str, message: str) -> ControlError:
    return ControlError(f"{field} {message}", field=field)


def text(value: Any, field: str, *, required: bool = True, max_length: int = 253) -> str:
    """A trimmed string; "" when optional and not given."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise _fail(field, "is required")
        return ""
    if not isinstance(value, str):
        raise _fail(field, f"must be a string, got {type(value).__name__}")
    value = value.strip()
    if len(value) > max_length:
        raise _fail(field, f"must be at most {max_length} characters")
    return value


def named(value: Any, field: str, pattern: re.Pattern[str], what: str, *, max_length: int = 63) -> str:
    value = text(value, field, max_length=max_length)
    if not pattern.fullmatch(value):
        raise _fail(field, f"must be {what}, got {value!r}")
    return value


def model_name(value: Any, field: str = "model") -> str:
    return named(value, field, MODEL_NAME, "lower-case letters, digits and '-' (a DNS label)")


def version_name(value: Any, field: str = "version") -> str:
    return named(value, field, VERSION_NAME, "letters, digits, '.', '_' and '-', starting and ending alphanumeric")


def model_version_label(model: str, version: str) -> str:
    """The value of the label ``serving.rolloutui.io/model-version``: ``<model>.<version>``."""
    return f"{model}.{version}"


def checksum(value: Any, field: str, *, required: bool = True) -> str:
    """``sha256:<64 lower-case hex>``; a bare 64-digit hex is accepted as the same SHA-256."""
    raw = text(value, field, required=required, max_length=80)
    if not raw:
        return ""
    found = SHA256.fullmatch(raw)
    if not found:
        raise _fail(field, f"must be a SHA-256 checksum: sha256:<64 hex digits>, got {raw!r}")
    return "sha256:" + found.group(1).lower()


def runtime_image(value: Any, field: str = "runtimeImage") -> str:
    """An image reference pinned by digest: ``name@sha256:<64 hex>`` (a tag beside it is allowed)."""
    image = text(value, field, max_length=1024)
    if DIGEST_IMAGE.fullmatch(image):
        return image
    if "@" not in image:
        raise _fail(
            field,
            f"must be pinned by digest (name@sha256:<64 hex digits>), got {image!r}: a tag alone can be moved to "
            "other bytes, so the release would not say what it runs",
        )
    _, _, digest = image.rpartition("@")
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise _fail(field, f"has a malformed digest {digest!r}: expected sha256:<64 lower-case hex digits>")
    raise _fail(field, f"is not a valid image reference: {image!r} (expected registry/repository[:tag]@sha256:...)")


def uri(value: Any, field: str) -> str:
    raw = text(value, field, max_length=2048)
    if not URI.fullmatch(raw):
        raise _fail(field, f"must be a URI with a scheme (s3://, gs://, hf://, pvc://, https://...), got {raw!r}")
    return raw


def _mapping(value: Any, field: str, allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(field, f"must be an object, got {type(value).__name__}")
    if allowed is not None:
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ControlError(
                f"{field}.{unknown[0]} is not a known field (allowed: {', '.join(allowed)})",
                field=f"{field}.{unknown[0]}",
            )
    return dict(value)


def _integer(value: Any, field: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, f"must be an integer, got {value!r}")
    if value < minimum:
        raise _fail(field, f"must be {minimum} or more, got {value}")
    return value


def _positive_number(value: Any, field: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _fail(field, f"must be a number above 0, got {value!r}")
    return value


def quantity(value: Any, field: str) -> str:
    """A Kubernetes quantity ("500m", "64Gi", "8"); numbers are accepted and kept as strings."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(field, f"must be a Kubernetes quantity such as '8', '500m' or '64Gi', got {value!r}")
    raw = str(value).strip()
    if not QUANTITY.fullmatch(raw):
        raise _fail(field, f"must be a Kubernetes quantity such as '8', '500m' or '64Gi', got {raw!r}")
    return raw


def resources(value: Any, field: str = "resources") -> dict[str, Any]:
    """``{"cpu": "8", "memory": "64Gi", "gpus": 1}``, each optional."""
    raw = _mapping(value, field, RESOURCE_KEYS)
    out: dict[str, Any] = {}
    for key in ("cpu", "memory"):
        if raw.get(key) is not None:
            out[key] = quantity(raw[key], f"{field}.{key}")
    if raw.get("gpus") is not None:
        out["gpus"] = _integer(raw["gpus"], f"{field}.gpus", minimum=0)
    return out


def batching(value: Any, field: str = "batching") -> dict[str, int]:
    raw = _mapping(value, field, BATCHING_KEYS)
    return {k: _integer(raw[k], f"{field}.{k}", minimum=1) for k in BATCHING_KEYS if raw.get(k) is not None}


def timeouts(value: Any, field: str = "timeouts") -> dict[str, float | int]:
    raw = _mapping(value, field, TIMEOUT_KEYS)
    return {k: _positive_number(raw[k], f"{field}.{k}") for k in TIMEOUT_KEYS if raw.get(k) is not None}


def preprocessing(value: Any, field: str = "preprocessing") -> dict[str, str]:
    """``{"ref": "hf://org/tokenizer@rev", "checksum": "sha256:..."}``: the tokenizer or preprocessing
    reference and its checksum. Empty when not given."""
    raw = _mapping(value, field, ("ref", "checksum"))
    if not raw:
        return {}
    out = {"ref": text(raw.get("ref"), f"{field}.ref", max_length=2048)}
    digest = checksum(raw.get("checksum"), f"{field}.checksum", required=False)
    if digest:
        out["checksum"] = digest
    return out


def source(value: Any, field: str = "source") -> dict[str, str]:
    raw = _mapping(value, field, ("trainingJob", "dataVersion"))
    return {k: text(raw[k], f"{field}.{k}", max_length=512) for k in ("trainingJob", "dataVersion") if raw.get(k)}


def labels(value: Any, field: str = "labels") -> dict[str, str]:
    raw = _mapping(value, field)
    out = {}
    for key, val in raw.items():
        if not isinstance(key, str) or not key or len(key) > 253:
            raise _fail(field, f"keys must be non-empty strings of at most 253 characters, got {key!r}")
        out[key] = text(val, f"{field}.{key}", max_length=253, required=False)
    return out


def config_overrides(value: Any, field: str = "config") -> dict[str, Any]:
    """A release's batching/timeout overrides: ``{"batching": {...}, "timeouts": {...}}``."""
    raw = _mapping(value, field, ("batching", "timeouts"))
    out: dict[str, Any] = {}
    if raw.get("batching"):
        out["batching"] = batching(raw["batching"], f"{field}.batching")
    if raw.get("timeouts"):
        out["timeouts"] = timeouts(raw["timeouts"], f"{field}.timeouts")
    return out


def resource_profile(value: Any, field: str) -> dict[str, Any]:
    """``{"resources": {...}, "replicas": n, "roles": {"prefill": {"resources": {...}, "replicas": n}}}``:
    what every target role gets, with per-role overrides. ``replicas`` is the role's instance count per
    ServingGroup (a runtime field: it changes no revision, and a rollback to a release restores it)."""
    raw = _mapping(value, field, ("resources", "replicas", "roles"))
    out: dict[str, Any] = {}
    if raw.get("resources"):
        out["resources"] = resources(raw["resources"], f"{field}.resources")
    if raw.get("replicas") is not None:
        out["replicas"] = _integer(raw["replicas"], f"{field}.replicas", minimum=1)
    roles = _mapping(raw.get("roles"), f"{field}.roles")
    if roles:
        out["roles"] = {}
        for role, spec in roles.items():
            rpath = f"{field}.roles.{role}"
            spec = _mapping(spec, rpath, ("resources", "replicas"))
            entry: dict[str, Any] = {}
            if spec.get("resources"):
                entry["resources"] = resources(spec["resources"], f"{rpath}.resources")
            if spec.get("replicas") is not None:
                entry["replicas"] = _integer(spec["replicas"], f"{rpath}.replicas", minimum=1)
            out["roles"][role] = entry
    return out


def resource_profiles(value: Any, field: str = "resourceProfiles") -> dict[str, dict[str, Any]]:
    raw = _mapping(value, field)
    out = {}
    for name, profile in raw.items():
        named(name, f"{field}.{name}", MODEL_NAME, "a DNS label such as gpu-small")
        out[name] = resource_profile(profile, f"{field}.{name}")
    return out


def target(value: Any, field: str) -> dict[str, Any]:
    """One deployment target of an environment:

    - ``{"kind": "ModelServing", "namespace", "name", "roles": [...], "container"?}``: the roles that
      run the model (their entry and worker templates get the release) and the container (default:
      each template's first);
    - ``{"kind": "InferenceService", "namespace", "name", "component": "predictor"}``: the component
      gets the release (``rolloutui.services.releases.deploy.DEPLOYERS``).
    """
    raw = _mapping(value, field, ("kind", "namespace", "name", "roles", "container", "component"))
    kind = raw.get("kind") or KIND_MODELSERVING
    if kind not in TARGET_KINDS:
        raise _fail(f"{field}.kind", f"must be one of {', '.join(TARGET_KINDS)}, got {kind!r}")
    out: dict[str, Any] = {
        "kind": kind,
        "namespace": named(raw.get("namespace"), f"{field}.namespace", MODEL_NAME, "a namespace name"),
        "name": named(raw.get("name"), f"{field}.name", K8S_NAME, "a Kubernetes object name", max_length=253),
    }
    if kind == KIND_MODELSERVING:
        roles = raw.get("roles")
        if not isinstance(roles, list) or not roles:
            raise _fail(f"{field}.roles", 'must list the roles that run the model, e.g. ["prefill", "decode"]')
        names = [text(r, f"{field}.roles[{i}]") for i, r in enumerate(roles)]
        if len(set(names)) != len(names):
            raise _fail(f"{field}.roles", "lists a role twice")
        out["roles"] = names
        out["container"] = text(raw.get("container"), f"{field}.container", required=False)
        if raw.get("component"):
            raise _fail(f"{field}.component", "applies to an InferenceService target only")
    else:
        out["component"] = text(raw.get("component") or "predictor", f"{field}.component", max_length=63)
        if raw.get("roles"):
            raise _fail(f"{field}.roles", "applies to a ModelServing target only")
    return out


# -- A whole ModelVersion -----------------------------------------------------------------------------

# API field -> (checker, model attribute). The order is the order of the API and the admin.
MODEL_VERSION_FIELDS: dict[str, tuple[Callable[[Any, str], Any], str]] = {
    "model": (model_name, "model"),
    "version": (version_name, "version"),
    "artifactUri": (uri, "artifact_uri"),
    "artifactChecksum": (lambda v, f: checksum(v, f), "artifact_checksum"),
    "format": (lambda v, f: text(v, f, max_length=64), "format"),
    "frameworkVersion": (lambda v, f: text(v, f, required=False, max_length=64), "framework_version"),
    "preprocessing": (preprocessing, "preprocessing"),
    "inputSchemaVersion": (lambda v, f: text(v, f, max_length=64), "input_schema_version"),
    "outputSchemaVersion": (lambda v, f: text(v, f, max_length=64), "output_schema_version"),
    "runtimeImage": (runtime_image, "runtime_image"),
    "resources": (resources, "resources"),
    "batching": (batching, "batching"),
    "timeouts": (timeouts, "timeouts"),
    "source": (source, "source"),
    "evaluationId": (lambda v, f: text(v, f, required=False, max_length=128), "evaluation_id"),
    "labels": (labels, "labels"),
}


def model_version(values: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of a ModelVersion checked: API field name -> clean value. Unknown keys are refused
    (a typo such as ``runtimeImg`` must not be silently dropped)."""
    if not isinstance(values, Mapping):
        raise ControlError("a ModelVersion is an object of fields", field="detail")
    unknown = sorted(set(values) - set(MODEL_VERSION_FIELDS))
    if unknown:
        raise ControlError(
            f"{unknown[0]} is not a ModelVersion field (fields: {', '.join(MODEL_VERSION_FIELDS)})", field=unknown[0]
        )
    out = {name: check(values.get(name), name) for name, (check, _) in MODEL_VERSION_FIELDS.items()}
    label = model_version_label(out["model"], out["version"])
    if len(label) > LABEL_VALUE_MAX:
        raise ControlError(
            f"version: model and version together ({label!r}) must fit a label value of {LABEL_VALUE_MAX} characters",
            field="version",
        )
    return out


__all__ = [
    "KIND_INFERENCESERVICE",
    "KIND_MODELSERVING",
    "MODEL_VERSION_FIELDS",
    "checksum",
    "config_overrides",
    "model_name",
    "model_version",
    "model_version_label",
    "resource_profile",
    "resource_profiles",
    "runtime_image",
    "target",
    "version_name",
]
