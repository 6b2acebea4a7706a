"""The ModelServing CRD's openAPIV3Schema as JSON Schema (for the manifest tests and the API double)."""

from __future__ import annotations

import functools
import json
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
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True  # the API server refuses a duplicate in a set list
    # OpenAPI 3.0 flags minimum/maximum as exclusive with a boolean; JSON Schema 2020-12 gives the
    # bound itself (read as a number, True would be a bound of 1).
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(flag), bool):
            if out.pop(flag) and bound in out:
                out[flag] = out.pop(bound)
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


# ------------------------------------------------------------------ what the API server does on a write


def prune(value: Any, node: dict[str, Any] | None, path: str = "", *, root: bool = True) -> tuple[Any, list[str]]:
    """``value`` without the fields the structural schema does not specify (the API server drops
    them before validation and storage), and the paths it dropped, e.g. ``["spec.replica"]``.

    Kept: everything under ``x-kubernetes-preserve-unknown-fields: true`` (plus what its
    ``properties`` say about known fields), map values under ``additionalProperties``, and at the
    root ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta, handled by the server itself).
    """
    node = node or {}
    removed: list[str] = []
    if isinstance(value, dict) and (node.get("type") == "object" or "properties" in node or root):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        out = {}
        for key, child in value.items():
            where = f"{path}.{key}" if path else key
            if root and key in ("apiVersion", "kind", "metadata"):
                out[key] = child
            elif key in props:
                out[key], more = prune(child, props[key], where, root=False)
                removed += more
            elif isinstance(extra, dict):
                out[key], more = prune(child, extra, where, root=False)
                removed += more
            elif preserve or extra is True:
                out[key] = child
            else:
                removed.append(where)
        return out, removed
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        out_list = []
        for index, item in enumerate(value):
            kept, more = prune(item, node["items"], f"{path}[{index}]", root=False)
            out_list.append(kept)
            removed += more
        return out_list, removed
    return value, removed


def _field(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def schema_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    """The API server's ``details.causes`` for a schema-invalid object: reason, message, field."""
    causes = []
    for error in sorted(validator(False).iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        field = _field(error.absolute_path)
        if error.validator == "required":
            missing = error.message.split("'")[1]
            causes.append(
                {"reason": "FieldValueRequired", "message": "Required value", "field": f"{field}.{missing}".strip(".")}
            )
        elif error.validator == "enum":
            supported = ", ".join(json.dumps(v) for v in error.validator_value)
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "message": f"Unsupported value: {json.dumps(error.instance)}: supported values: {supported}",
                    "field": field,
                }
            )
        else:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {json.dumps(error.instance)}: {error.message}",
                    "field": field,
                }
            )
    return causes


def cel_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    """Causes for the CRD's x-kubernetes-validations rules that ``obj`` breaks (evaluated with
    cel-python; the API server runs them only on objects that passed the schema)."""
    import celpy

    causes = []
    for field, rule, value in _rules_with_values(crd_schema(), obj, ""):
        if not bool(_program(rule["rule"]).evaluate({"self": celpy.json_to_cel(value)})):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "object": {rule["message"]}',
                    "field": field,
                }
            )
    return causes


@functools.cache
def _program(rule: str) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(rule))


def _rules_with_values(node: dict[str, Any], value: Any, field: str):
    for rule in node.get("x-kubernetes-validations") or []:
        yield field or "<root>", rule, value
    if isinstance(value, dict):
        for key, child in (node.get("properties") or {}).items():
            if key in value:
                yield from _rules_with_values(child, value[key], f"{field}.{key}" if field else key)
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        for index, item in enumerate(value):
            yield from _rules_with_values(node["items"], item, f"{field}[{index}]")


def modelserving_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    return schema_causes(obj) or cel_causes(obj)
