"""Scaling a ModelServing: the ``scale`` control's merge patch, the opt-in autoscale setting kept in
an annotation, and the autoscaler's decision. Pure: no framework, no cluster, no clock.

- ``scale(ms, replicas=N)``: ``{"spec": {"replicas": N}}``, validated like every control. The
  planner does the rest: new groups are created like any missing group, groups at ordinals beyond
  ``replicas`` are drained and deleted like any delete (``serving.rolloutui.io/draining`` first).
  Scale to zero is refused unless asked for explicitly (``allow_zero``): never a default.
- ``autoscale_of(ms)``: the autoscale setting (``naming.ANNOTATION_AUTOSCALE``, JSON
  ``{"minReplicas", "maxReplicas"}``) or None when it is off. ``enable_autoscale`` and
  ``disable_autoscale`` are the merge patches of the ``autoscale`` control.
- ``decide(...)``: what the autoscaler does with one recommendation (a table test in
  ``tests/core/test_autoscale_decision.py``). Worked example: 2 groups run, 5 are recommended,
  bounds 1..4, the last change 600 s ago with a 300 s cooldown -> 4 ("5 recommended, capped at the
  maximum 4").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import naming
from .controls import ControlError, validated
from .spec import headline

# The most ServingGroups a control or the autoscaler sets (a typo such as 10000 for 10 is refused,
# not rolled out). 1,000 groups is the largest ModelServing the benchmarks measure.
MAX_REPLICAS = 1000
# The autoscaler's bounds: at least one group (scale to zero is never automatic).
MIN_AUTOSCALE_REPLICAS = 1


def _integer(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(f"{field} must be an integer, got {value!r}", field=field)
    return value


def check_replicas(replicas: Any, *, allow_zero: bool = False, field: str = "replicas") -> int:
    """``replicas`` as a ServingGroup count: an integer from 0 (only with ``allow_zero``) to
    ``MAX_REPLICAS``; a ``ControlError`` naming ``field`` otherwise."""
    replicas = _integer(replicas, field)
    if replicas < 0:
        raise ControlError(f"{field} must not be negative, got {replicas}", field=field)
    if replicas > MAX_REPLICAS:
        raise ControlError(f"{field} must be {MAX_REPLICAS} or less, got {replicas}", field=field)
    if replicas == 0 and not allow_zero:
        raise ControlError(
            f"{field} 0 stops every ServingGroup (scale to zero): give allowZero to confirm", field=field
        )
    return replicas


def scale(ms: dict[str, Any], *, replicas: Any, allow_zero: bool = False) -> dict[str, Any]:
    """Set ``spec.replicas`` (the number of ServingGroups). Example: 4 -> scale(replicas=2) ->
    ``{"spec": {"replicas": 2}}``: groups 2 and 3 are drained, then deleted."""
    replicas = check_replicas(replicas, allow_zero=allow_zero)
    current = headline(ms).replicas
    if replicas == current:
        raise ControlError(f"already at {current} ServingGroup{'s' if current != 1 else ''}", field="replicas")
    return validated(ms, {"spec": {"replicas": replicas}})


@dataclass(frozen=True, slots=True)
class Autoscale:
    """The bounds the autoscaler keeps ``spec.replicas`` in."""

    min_replicas: int
    max_replicas: int

    def to_json(self) -> dict[str, int]:
        return {"minReplicas": self.min_replicas, "maxReplicas": self.max_replicas}

    def encode(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


def check_bounds(min_replicas: Any, max_replicas: Any) -> Autoscale:
    """Autoscale bounds: ``MIN_AUTOSCALE_REPLICAS`` <= min <= max <= ``MAX_REPLICAS``; a
    ``ControlError`` naming ``minReplicas`` or ``maxReplicas`` otherwise."""
    if max_replicas is None:
        raise ControlError("maxReplicas is required to turn autoscale on", field="maxReplicas")
    low = _integer(MIN_AUTOSCALE_REPLICAS if min_replicas is None else min_replicas, "minReplicas")
    high = _integer(max_replicas, "maxReplicas")
    if low < MIN_AUTOSCALE_REPLICAS:
        raise ControlError(
            f"minReplicas must be {MIN_AUTOSCALE_REPLICAS} or more (the autoscaler never scales to zero), got {low}",
            field="minReplicas",
        )
    if high > MAX_REPLICAS:
        raise ControlError(f"maxReplicas must be {MAX_REPLICAS} or less, got {high}", field="maxReplicas")
    if high < low:
        raise ControlError(f"maxReplicas must be at least minReplicas ({low}), got {high}", field="maxReplicas")
    return Autoscale(low, high)


def autoscale_of(ms: dict[str, Any]) -> Autoscale | None:
    """The ModelServing's autoscale setting, None when off. A malformed annotation (written by hand)
    is a ``ControlError`` on field ``autoscale`` saying what is wrong."""
    annotations = ((ms.get("metadata") or {}).get("annotations")) or {}
    text = annotations.get(naming.ANNOTATION_AUTOSCALE)
    if text is None:
        return None
    try:
        raw = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise ControlError(
            f"annotation {naming.ANNOTATION_AUTOSCALE} must be a JSON object "
            f'{{"minReplicas": N, "maxReplicas": M}}, got {text!r}',
            field="autoscale",
        )
    try:
        return check_bounds(raw.get("minReplicas"), raw.get("maxReplicas"))
    except ControlError as err:
        raise ControlError(f"annotation {naming.ANNOTATION_AUTOSCALE}: {err}", field="autoscale") from None


def enable_autoscale(ms: dict[str, Any], *, min_replicas: Any = None, max_replicas: Any) -> dict[str, Any]:
    """Turn autoscale on (or change its bounds): the annotation. ``min_replicas`` defaults to 1."""
    bounds = check_bounds(min_replicas, max_replicas)
    try:
        now = autoscale_of(ms)
    except ControlError:
        now = None  # a malformed setting is replaced
    if now == bounds:
        raise ControlError(
            f"autoscale is already on with minReplicas {bounds.min_replicas} and maxReplicas {bounds.max_replicas}",
            field="maxReplicas",
        )
    return {"metadata": {"annotations": {naming.ANNOTATION_AUTOSCALE: bounds.encode()}}}


def disable_autoscale(ms: dict[str, Any]) -> dict[str, Any]:
    """Turn autoscale off: remove the annotation (``spec.replicas`` stays where it is)."""
    annotations = ((ms.get("metadata") or {}).get("annotations")) or {}
    if naming.ANNOTATION_AUTOSCALE not in annotations:
        raise ControlError("autoscale is not on", field="disable")
    return {"metadata": {"annotations": {naming.ANNOTATION_AUTOSCALE: None}}}


@dataclass(frozen=True, slots=True)
class Decision:
    """The autoscaler's answer: the new replica count (None: no change) and why, in words."""

    replicas: int | None
    reason: str


def _groups(n: int) -> str:
    return f"{n} ServingGroup{'s' if n != 1 else ''}"


def decide(
    *,
    current: int,
    recommended: int | None,
    why: str,
    bounds: Autoscale,
    since_last_change: float | None,
    cooldown: float,
    busy: str | None = None,
) -> Decision:
    """What the autoscaler does now.

    ``current``: spec.replicas; ``recommended``/``why``: the capacity recommendation (None: there
    is none, ``why`` says why); ``bounds``: the autoscale setting; ``since_last_change``: seconds
    since the last change of the replica count (None: never); ``cooldown``: the seconds to wait
    after a change; ``busy``: why the ModelServing must not be scaled now (a rollout in progress),
    None when it may be.

    In order: busy -> no change; no recommendation -> no change; the target is the recommendation
    kept within the bounds; at the target -> no change; within the cooldown -> no change; else the
    target, with the figures in the reason.
    """
    if busy:
        return Decision(None, f"No change: {busy}.")
    if recommended is None:
        return Decision(None, f"No change: no recommendation ({why}).")
    target = min(max(recommended, bounds.min_replicas), bounds.max_replicas)
    if target > recommended:
        how = f"{recommended} recommended, raised to the minimum {bounds.min_replicas}"
    elif target < recommended:
        how = f"{recommended} recommended, capped at the maximum {bounds.max_replicas}"
    else:
        how = f"{recommended} recommended, within {bounds.min_replicas}..{bounds.max_replicas}"
    if target == current:
        return Decision(None, f"No change: {_groups(current)} run, as wanted ({how}).")
    if since_last_change is not None and since_last_change < cooldown:
        return Decision(
            None,
            f"No change: the replica count changed {round(since_last_change)} s ago, within the "
            f"{round(cooldown)} s cooldown ({how}; {current} -> {target} once it passes).",
        )
    verb = "scale up" if target > current else "scale down (the groups beyond it drain like any delete)"
    return Decision(target, f"Autoscale {current} -> {target}, {verb}: {how}. {why}")


__all__ = [
    "MAX_REPLICAS",
    "MIN_AUTOSCALE_REPLICAS",
    "Autoscale",
    "Decision",
    "autoscale_of",
    "check_bounds",
    "check_replicas",
    "decide",
    "disable_autoscale",
    "enable_autoscale",
    "scale",
]
