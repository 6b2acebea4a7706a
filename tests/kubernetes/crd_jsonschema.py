"""The ModelServing CRD's openAPIV3Schema as JSON Schema (for the manifest tests and the API double)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "deploy" / "crd" / "modelservings.serving.rolloutui.io.yaml"


def crd() -> dict[str, Any]:
    return yaml.safe_load(CRD_FILE.read_text())


def crd_schema() -> dict[str, Any]:
    return crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def to_json_schema(node: Any, *, strict: bool = False) -> Any:
    """OpenAPI v3 (Kubernetes flavour) -> JSON Schema. ``strict``: flag fields the API server would
    prune (unknown to the schema) as errors, so a sample cannot lose fields silently."""
    if isinstance(node, list):
        return [to_json_schema(n, strict=strict) for n in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: to_json_schema(v, strict=strict)
        for k, v in node.items()
        if k != "properties" and not k.startswith("x-kubernetes-") and k not in ("nullable", "format")
    }
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if "properties" in node:
        out["properties"] = {k: to_json_schema(v, strict=strict) for k, v in node["properties"].items()}
        if strict and not node.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in node:
            out["additionalProperties"] = False
    return out


@functools.cache
def validator(strict: bool) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(to_json_schema(crd_schema(), strict=strict))


def schema_errors(obj: dict[str, Any], *, strict: bool = False) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(strict).iter_errors(obj)]
