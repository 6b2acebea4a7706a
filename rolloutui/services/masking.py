"""Masking of secret-looking environment values for users who may only view.

Place in the flow: ``services.state.get_manifest`` and ``revision_diff`` pass what they return
through ``mask_tree`` / ``mask_changes`` unless the user may operate in the namespace (an operator
edits the manifest and must see it whole).

What is masked, in any ``env`` list of a container (at any depth):

- the ``value`` of a variable whose name contains KEY, TOKEN, SECRET or PASSWORD (any case, e.g.
  ``HF_TOKEN``, ``api_key``, ``DB_PASSWORD``): ``{"name": "HF_TOKEN", "value": "hf_abc"}`` ->
  ``{"name": "HF_TOKEN", "value": "<masked>"}``;
- every ``valueFrom`` (it names the Secret or ConfigMap and key the value comes from);
- every ``envFrom`` source (a whole Secret or ConfigMap).

The variable's name stays visible, so a viewer still sees that it exists and that it changed.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "<masked>"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
# A diff path segment naming an env variable: ``...containers[engine].env[HF_TOKEN].value``.
_ENV_SEGMENT = re.compile(r"\.env\[(?P<name>[^\]]*)\](?P<rest>.*)$")


def secret_name(name: Any) -> bool:
    return isinstance(name, str) and bool(SECRET_NAME.search(name))


def _mask_env_entry(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    out = dict(entry)
    if "valueFrom" in out:
        out["valueFrom"] = MASK
    if "value" in out and secret_name(out.get("name")):
        out["value"] = MASK
    return out


def mask_tree(value: Any) -> Any:
    """A copy of ``value`` with every secret-looking env value masked (see the module docstring)."""
    if isinstance(value, list):
        return [mask_tree(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "env" and isinstance(item, list):
            out[key] = [mask_tree(_mask_env_entry(e)) for e in item]
        elif key == "envFrom" and isinstance(item, list):
            out[key] = [MASK for _ in item]
        else:
            out[key] = mask_tree(item)
    return out


def _mask_side(value: Any, name: str, rest: str) -> Any:
    """One side of a change under ``env[name]``: ``rest`` is the path below the variable."""
    if value is None:
        return None
    if rest == "":  # the whole variable was added or removed
        return _mask_env_entry(value)
    if rest.startswith(".valueFrom") or rest.startswith(".value") and secret_name(name):
        return MASK
    return value


def mask_changes(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``core.revisions.diff`` output with secret-looking values masked on both sides."""
    out = []
    for change in changes:
        path = change.get("path") or ""
        match = _ENV_SEGMENT.search(path)
        item = dict(change)
        if match:
            name, rest = match["name"], match["rest"]
            item["from"] = _mask_side(change.get("from"), name, rest)
            item["to"] = _mask_side(change.get("to"), name, rest)
        elif path.endswith(".env"):  # the whole list added, removed or replaced
            item["from"] = mask_tree({"env": change.get("from")})["env"]
            item["to"] = mask_tree({"env": change.get("to")})["env"]
        elif path.endswith(".envFrom") or ".envFrom[" in path:
            item["from"] = None if change.get("from") is None else MASK
            item["to"] = None if change.get("to") is None else MASK
        else:
            item["from"] = mask_tree(change.get("from"))
            item["to"] = mask_tree(change.get("to"))
        out.append(item)
    return out


__all__ = ["MASK", "mask_changes", "mask_tree", "secret_name"]
