"""Operator controls as JSON merge patches of the ModelServing manifest.

The same functions serve the dashboard, the REST API, the CLI and scenario events: each takes the
current manifest and returns the merge patch to apply (``core.mergepatch.merge_patch`` applies one). They
refuse what does not apply with a ``ControlError`` that says why, and the result always passes
validation (a control never produces a spec the controller would reject).
"""

from __future__ import annotations

import json
from typing import Any

from . import naming
from .mergepatch import merge_patch
from .revisions import History, rollback_fields
from .spec import (
    ENTRY_TEMPLATE,
    GROUP_ROLLING,
    VERSIONED_SPEC_FIELDS,
    ValidationError,
    headline,
    parse_modelserving,
    role_containers,
    roles_as_written,
    versioned_fields,
)


class ControlError(ValueError):
    """The control does not apply to this ModelServing, or its arguments are wrong."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def validated(ms: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``patch``, once the ModelServing it would make parses; else a ``ControlError`` naming the field."""
    try:
        parse_modelserving(merge_patch(ms, patch))
    except ValidationError as err:
        raise ControlError(f"the change would make the ModelServing invalid: {err}", field=err.field) from None
    return patch


def pause(ms: dict[str, Any]) -> dict[str, Any]:
    if headline(ms).paused:
        raise ControlError("already paused")
    return {"spec": {"paused": True}}


def resume(ms: dict[str, Any]) -> dict[str, Any]:
    if not headline(ms).paused:
        raise ControlError("not paused")
    return {"spec": {"paused": False}}


def current_partition(ms: dict[str, Any]) -> int:
    """The partition of the active strategy as a count (the highest role partition at role level)."""
    return _partition_count(parse_modelserving(ms))


def _partition_count(parsed) -> int:
    if parsed.strategy.type == GROUP_ROLLING:
        budget = parsed.strategy.budgets.partition
        return budget.resolve(parsed.replicas, round_up=True) if budget else 0
    values = [r.budgets.partition.resolve(r.replicas, round_up=True) for r in parsed.roles if r.budgets.partition]
    return max(values, default=0)


def promote(ms: dict[str, Any], *, partition: int | None = None, full: bool = False) -> dict[str, Any]:
    """Lower the partition: to ``partition``, to 0 with ``full`` (which also resumes), or by one.

    Example: partition 3 -> promote() -> 2; promote(partition=0) -> 0; promote(full=True) -> 0 and
    ``paused: false``.
    """
    canary = _running_canary(ms)
    if canary is not None:
        return _promote_canary(ms, canary, partition=partition, full=full)
    if partition is not None and full:
        raise ControlError("give either partition or full, not both", field="partition")
    if partition is not None:
        if isinstance(partition, bool) or not isinstance(partition, int):
            raise ControlError(f"partition must be an integer, got {partition!r}", field="partition")
        if partition < 0:
            raise ControlError(f"partition must not be negative, got {partition}", field="partition")
    parsed = parse_modelserving(ms)
    now = _partition_count(parsed)
    if full:
        target = 0
    elif partition is not None:
        target = partition
        if target > now:
            raise ControlError(f"promote lowers the partition; {target} is above the current {now}", field="partition")
    else:
        if now == 0:
            raise ControlError("nothing to promote: the partition is already 0")
        target = now - 1
    patch: dict[str, Any]
    if parsed.strategy.type == GROUP_ROLLING:
        patch = {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"partition": target}}}}
    else:
        # Every role's partition comes down to the target, and none goes up: a promote never
        # un-promotes. Example: roles at 3 and 1, one step -> target 2 -> 2 and 1 (not 2 and 2).
        counts = {
            r.name: r.budgets.partition.resolve(r.replicas, round_up=True) for r in parsed.roles if r.budgets.partition
        }
        roles = roles_as_written(parsed.manifest)
        for role, read in zip(roles, parsed.roles, strict=True):
            if counts.get(read.name, 0) > target:
                role["partition"] = target
        patch = {"spec": {"template": {"roles": roles}}}
    if full and parsed.paused:
        patch["spec"]["paused"] = False
    return validated(ms, patch)


def abort(ms: dict[str, Any], revisions: list[dict[str, Any]]) -> dict[str, Any]:
    """Stop the rollout in progress and go back to its stable revision, paused (Argo Rollouts'
    abort: the canary scales back to the stable version and the rollout waits for a retry).

    The stable revision is the one the running canary compares with (``status.canary.stable``),
    else ``status.currentRevision``. The patch writes that revision's versioned fields into the
    spec (as a rollback to it would), sets ``spec.paused`` and records the abort in annotation
    ``abort``: the planner then takes every group back to the stable revision although the rollout
    is paused, and a canary of the aborted revision ends Aborted at its step. Resume is the retry.

    Example: canary of ``b2`` at step 2 of 5, 1 of 4 groups on ``b2``, stable ``a1`` -> the spec
    selects ``a1`` again, paused; group 3 is replaced on ``a1``; the canary says Aborted.
    """
    status = ms.get("status") or {}
    update, current = status.get("updateRevision"), status.get("currentRevision")
    canary = _running_canary(ms)
    stable = canary.get("stable") if canary is not None else current
    if not update or not stable or update == stable:
        raise ControlError("nothing to abort: no rollout is in progress (the update revision is the stable one)")
    data = History.from_objects(revisions).data_of(stable)
    if data is None:
        raise ControlError(f"the stable revision {stable} cannot be read: it cannot be gone back to")
    request = {"revision": update, "stable": stable}
    patch = {
        "metadata": {"annotations": {naming.ANNOTATION_ABORT: json.dumps(request, sort_keys=True)}},
        "spec": {**rollback_fields(ms, data), "paused": True},
    }
    return validated(ms, patch)


def _running_canary(ms: dict[str, Any]) -> dict[str, Any] | None:
    """The canary of the revision being rolled out, while its steps run (status.canary)."""
    status = ms.get("status") or {}
    canary = status.get("canary") or {}
    if not headline(ms).has_canary_steps or canary.get("phase") not in ("Running", "Paused"):
        return None
    return canary if canary.get("revision") == status.get("updateRevision") else None


def _promote_canary(ms: dict[str, Any], canary: dict[str, Any], *, partition: int | None, full: bool) -> dict[str, Any]:
    """With canary steps, promote moves through the steps: one step skips the step the canary is
    on (a pause, typically), ``full`` skips every remaining step (and resumes a paused rollout);
    either lifts a pause the analysis set (``status.canary.analysisPause``). The partition is the
    steps' to set, so a partition cannot be given."""
    if partition is not None:
        raise ControlError(
            "this rollout runs canary steps, which set the partition: promote one step or fully", field="partition"
        )
    request: dict[str, Any] = {"revision": canary["revision"]}
    if full:
        request["full"] = True
    else:
        request["step"] = int(canary.get("stepIndex") or 0)
    patch: dict[str, Any] = {
        "metadata": {"annotations": {naming.ANNOTATION_CANARY_PROMOTE: json.dumps(request, sort_keys=True)}}
    }
    if headline(ms).paused and (full or canary.get("analysisPause")):
        # Promote is the operator's decision after the analysis: it lifts the pause the analysis
        # set for want of evidence (the planner then restarts the count of Inconclusive windows).
        patch["spec"] = {"paused": False}
    return patch


def set_image(ms: dict[str, Any], *, role: str, image: str, container: str | None = None) -> dict[str, Any]:
    """Set one container's image in the role's entry and worker templates.

    The container named ``container`` in each template (the first one when no name is given).
    """
    if not isinstance(image, str) or not image.strip():
        raise ControlError("image is required", field="image")
    written = role_containers(ms)
    index = next((i for i, r in enumerate(written) if r.name == role), None)
    if index is None:
        names = ", ".join("?" if r.name is None else r.name for r in written)
        raise ControlError(f"role {role!r} does not exist (roles: {names})", field="role")
    target = written[index]
    roles = roles_as_written(ms)
    changed = False
    for key, containers in target.templates.items():
        chosen = target.container_index(key, container)
        if chosen is None:
            if key == ENTRY_TEMPLATE:
                raise ControlError(
                    f"role {role!r} has no container {container!r} in its entry template", field="container"
                )
            continue
        if containers[chosen][1] != image:
            roles[index][key]["spec"]["containers"][chosen]["image"] = image
            changed = True
    if not changed:
        raise ControlError(f"role {role!r} already runs {image}", field="image")
    return validated(ms, {"spec": {"template": {"roles": roles}}})


def rollback(ms: dict[str, Any], revisions: list[dict[str, Any]], *, to_revision: int) -> dict[str, Any]:
    """Write revision ``to_revision``'s versioned fields into the spec, keeping runtime fields."""
    if isinstance(to_revision, bool) or not isinstance(to_revision, int) or to_revision <= 0:
        raise ControlError(f"toRevision must be a positive revision number, got {to_revision!r}", field="toRevision")
    history = History.from_objects(revisions)
    target = history.by_number(to_revision)
    if target is None:
        numbers = ", ".join(str(r.number) for r in history.revisions) or "none"
        raise ControlError(f"revision {to_revision} does not exist (revisions: {numbers})", field="toRevision")
    if target.data is None:
        raise ControlError(
            f"revision {to_revision} cannot be read ({target.error}); it cannot be rolled back to", field="toRevision"
        )
    restored = rollback_fields(ms, target.data)
    current = versioned_fields(ms)
    if all(restored[key] == current.get(key) for key in VERSIONED_SPEC_FIELDS):
        raise ControlError(f"the spec already matches revision {to_revision}", field="toRevision")
    return validated(ms, {"spec": restored})
