"""KV cache format advice: a ModelServing whose request path hands the KV cache between images that
write different formats (``controller.core.kvformats``), for manifest validation, apply, set-image
and the Paths panel.

The formats come from the embedded simulated cluster's image profiles (``kvFormat``); a Kubernetes
cluster declares none, so there the advice is always empty. Advice never refuses anything: an
operator may mean to break the path (to see it break), and the Paths panel counts what happens.
"""

from __future__ import annotations

from typing import Any

from controller.core.kvformats import KvBreak, kv_break
from controller.core.spec import ModelServing, ValidationError, parse_modelserving
from controller.runtime.simulator import get_simulator


def _kv_format_of():
    simulator = get_simulator()
    if simulator is None:
        return None
    config = simulator.config
    return lambda image: config.image(image).kv_format


def break_of(parsed: ModelServing) -> KvBreak | None:
    """The parsed ModelServing's path break (``core.kvformats.kv_break``), or None."""
    kv_format_of = _kv_format_of()
    if kv_format_of is None or not parsed.traffic.path:
        return None
    return kv_break(parsed.traffic.path, {role.name: role.entry_template for role in parsed.roles}, kv_format_of)


def warnings_of(parsed: ModelServing) -> list[dict[str, Any]]:
    """``[{"path": "spec.traffic.path", "message": ...}]`` for the parsed ModelServing (empty when
    its path's formats agree, or nothing declares one)."""
    found = break_of(parsed)
    return [] if found is None else [{"path": found.field, "message": found.message()}]


def warnings_of_stored(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """``warnings_of`` for a stored ModelServing object (parsed here); none for one whose spec
    does not parse (what is wrong with it is said elsewhere)."""
    try:
        return warnings_of(parse_modelserving(obj))
    except ValidationError:
        return []
