"""Operator controls of an InferenceService, as JSON merge patches of what a user would change.

The product does not fight KServe's controller: every control changes what a user of KServe would
change (the InferenceService's spec, or a Deployment's ``spec.paused`` as ``kubectl rollout
pause`` does), and KServe does the rest. Each function takes the current manifest (and the
``inferenceservice-config`` settings that decide its mode) and returns the merge patch; it refuses
what does not apply with a ``ControlError`` saying why, and never returns a patch KServe's webhook
would refuse.

- ``set_image``: a component's image (its ``model.image``, or a container's ``image``);
- ``start_canary``: Knative: ``canaryTrafficPercent`` (with the new image: a new revision
  gets that share); Standard: a ``spec.canary[]`` entry (KServe 0.20) running the new image;
- ``promote``: Knative: remove ``canaryTrafficPercent`` (the latest revision takes 100%);
  Standard: the canary becomes the predictor (its name and spec; the stable predictor's replicas,
  autoscaling and strategy stay) and its entry goes: its Deployment is kept, nothing restarts;
- ``rollback``: Knative: ``canaryTrafficPercent: 0`` (all traffic back to the last rolled-out
  revision, the new one stays deployed); Standard: the canary entry is removed;
  ``rollback_to_template``: a component back to the pod template of an earlier revision;
- ``pause_patch``/``resume_patch``: the Deployment patches (Standard mode only: Knative owns a
  Knative InferenceService's Deployments).
"""

from __future__ import annotations

from typing import Any

from ..controls import ControlError
from ..mergepatch import diff, merge_patch
from .config import DeployConfig
from .errors import KServeError
from .spec import (
    COMPONENTS,
    FRAMEWORKS,
    KSERVE_CONTAINER,
    MODELMESH_REASON,
    InferenceService,
    check_mode_unchanged,
    parse_inferenceservice,
)

Obj = dict[str, Any]
# A Standard-mode canary's own fields; everything else of the predictor stays on promotion.
TEMPLATE_FIELDS = ("model", "containers", "name")


def _managed(current: InferenceService) -> InferenceService:
    if not current.managed:
        raise ControlError(f"not managed by RolloutUI: {MODELMESH_REASON}")
    return current


def parsed(isvc: Obj, config: DeployConfig) -> InferenceService:
    """The InferenceService as KServe reads it; refused when it is invalid or not RolloutUI's to
    control (ModelMesh)."""
    try:
        current = parse_inferenceservice(isvc, config)
    except KServeError as err:
        raise ControlError(f"the InferenceService is invalid: {err}", field=err.field) from None
    return _managed(current)


def _validated(isvc: Obj, config: DeployConfig, patch: Obj) -> Obj:
    try:
        after = merge_patch(isvc, patch)
        check_mode_unchanged(isvc, after)
        candidate = parse_inferenceservice(after, config)
    except KServeError as err:
        raise ControlError(f"KServe would refuse the change: {err}", field=err.field) from None
    _managed(candidate)
    return patch


def _component(isvc: Obj, component: str) -> Obj:
    raw = (isvc.get("spec") or {}).get(component)
    if component not in COMPONENTS or not isinstance(raw, dict):
        present = [c for c in COMPONENTS if (isvc.get("spec") or {}).get(c)]
        raise ControlError(f"no component {component!r} (it has {', '.join(present)})", field="component")
    return raw


def image_patch(raw: Obj, image: str, container: str | None = None) -> Obj:
    """The part of a component's merge patch that runs ``image``: the model's (or the
    per-framework field's, which KServe turns into the model), else the implementation's container
    (the one named kserve-container, else the first), or the named ``container``."""
    framework = next((fw for fw in FRAMEWORKS if isinstance(raw.get(fw), dict)), None)
    built_in = framework or next((k for k in ("model", "art") if raw.get(k) is not None), None)
    if built_in is not None and container is None:
        return {built_in: {"image": image}}
    if raw.get("containers"):
        containers = [dict(c) for c in raw["containers"]]
        names = [c.get("name") for c in containers]
        index = names.index(KSERVE_CONTAINER) if KSERVE_CONTAINER in names else 0
        if container is not None:
            if container not in names:
                raise ControlError(
                    f"no container {container!r} (it has {', '.join(map(str, names))})", field="container"
                )
            index = names.index(container)
        containers[index]["image"] = image
        return {"containers": containers}
    if container is not None:
        raise ControlError("this component has a model, not containers: give no container", field="container")
    return {"model": {"image": image}}


def set_image(
    isvc: Obj, config: DeployConfig, *, image: str, component: str = "predictor", container: str | None = None
) -> Obj:
    if not image:
        raise ControlError("image: required", field="image")
    raw = _component(isvc, component)
    patch = {"spec": {component: image_patch(raw, image, container)}}
    if merge_patch(isvc, patch) == isvc:
        raise ControlError(f"{component} already runs {image}", field="image")
    return _validated(isvc, config, patch)


def start_canary(
    isvc: Obj, config: DeployConfig, *, percent: int, image: str | None = None, name: str | None = None
) -> Obj:
    """Knative: ``canaryTrafficPercent`` on the predictor (and the new image, which makes the
    revision that gets it). Standard: a ``spec.canary[]`` entry named ``name`` (default
    ``canary``) running ``image`` with ``percent`` of the traffic."""
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise ControlError(f"percent: must be an integer from 0 to 100, got {percent!r}", field="percent")
    current = parsed(isvc, config)
    predictor = _component(isvc, "predictor")
    if not current.standard:
        patch_predictor: Obj = {"canaryTrafficPercent": percent}
        if image:
            patch_predictor.update(image_patch(predictor, image))
        return _validated(isvc, config, {"spec": {"predictor": patch_predictor}})
    if not image:
        raise ControlError("image: a Standard-mode canary runs a new image; give one", field="image")
    name = name or "canary"
    entry_predictor = {k: v for k, v in predictor.items() if k in ("model", "containers")}
    entry_predictor = merge_patch(entry_predictor, image_patch(entry_predictor, image))
    entry_predictor["name"] = name
    canaries = list((isvc.get("spec") or {}).get("canary") or [])
    if any(((c.get("predictor") or {}).get("name")) == name for c in canaries):
        raise ControlError(f"a canary named {name!r} exists already", field="name")
    canaries.append({"predictor": entry_predictor, "trafficPercent": percent})
    return _validated(isvc, config, {"spec": {"canary": canaries}})


def _pick_canary(current: InferenceService, name: str | None) -> str:
    names = [c.name for c in current.canaries]
    if not names:
        raise ControlError("there is no canary (spec.canary is empty)")
    if name is None:
        if len(names) > 1:
            raise ControlError(f"name the canary: one of {', '.join(names)}", field="canary")
        return names[0]
    if name not in names:
        raise ControlError(f"no canary {name!r} (there are: {', '.join(names)})", field="canary")
    return name


def promote(isvc: Obj, config: DeployConfig, *, canary: str | None = None) -> Obj:
    current = parsed(isvc, config)
    spec = isvc.get("spec") or {}
    if not current.standard:
        with_canary = [k for k, c in current.components.items() if c.canary_traffic_percent is not None]
        if not with_canary:
            raise ControlError("there is no canary: no component sets canaryTrafficPercent")
        return _validated(isvc, config, {"spec": {k: {"canaryTrafficPercent": None} for k in with_canary}})
    name = _pick_canary(current, canary)
    entries = list(spec.get("canary") or [])
    entry = next(c for c in entries if (c.get("predictor") or {}).get("name") == name)
    stable = spec.get("predictor") or {}
    promoted = {k: v for k, v in stable.items() if k not in TEMPLATE_FIELDS}
    promoted.update({k: v for k, v in (entry.get("predictor") or {}).items() if k != "minReplicas"})
    rest = [c for c in entries if c is not entry]
    patch = {"spec": {"predictor": diff(stable, promoted), "canary": rest or None}}
    return _validated(isvc, config, patch)


def rollback(isvc: Obj, config: DeployConfig, *, canary: str | None = None, component: str = "predictor") -> Obj:
    """Back to the stable version: Knative ``canaryTrafficPercent: 0``; Standard: the canary
    entry removed."""
    current = parsed(isvc, config)
    if not current.standard:
        comp = current.components.get(component)
        if comp is None:
            raise ControlError(f"no component {component!r}", field="component")
        if comp.canary_traffic_percent == 0:
            raise ControlError(f"{component}: traffic is already pinned to the last rolled-out revision")
        return _validated(isvc, config, {"spec": {component: {"canaryTrafficPercent": 0}}})
    name = _pick_canary(current, canary)
    rest = [c for c in (isvc.get("spec") or {}).get("canary") or [] if (c.get("predictor") or {}).get("name") != name]
    return _validated(isvc, config, {"spec": {"canary": rest or None}})


def rollback_to_template(isvc: Obj, config: DeployConfig, *, component: str, template: Obj) -> Obj:
    """A component back to the pod template an earlier revision ran (its ReplicaSet's or Knative
    revision's): the containers' images, or the model's image and storage URI."""
    raw = _component(isvc, component)
    containers = ((template.get("spec") or {}).get("containers")) or []
    if not containers:
        raise ControlError("that revision has no containers")
    if raw.get("containers"):
        by_name = {c.get("name"): c.get("image") for c in containers}
        new = [
            {**c, "image": by_name.get(c.get("name") or "kserve-container", c.get("image"))} for c in raw["containers"]
        ]
        patch: Obj = {"spec": {component: {"containers": new}}}
    else:
        model: Obj = {"image": containers[0].get("image")}
        uri = next((e.get("value") for e in containers[0].get("env") or [] if e.get("name") == "STORAGE_URI"), None)
        if uri:
            model["storageUri"] = uri
        patch = {"spec": {component: {"model": model}}}
    if merge_patch(isvc, patch) == isvc:
        raise ControlError(f"{component} already runs that revision")
    return _validated(isvc, config, patch)


def check_pausable(isvc: Obj, config: DeployConfig) -> InferenceService:
    current = parsed(isvc, config)
    if not current.standard:
        raise ControlError(
            "pause applies to Standard mode only: in Knative mode Knative owns the revisions' Deployments "
            "(each change is a new revision; hold it back with canaryTrafficPercent: 0)"
        )
    return current


def pause_patch() -> Obj:
    """The Deployment patch of ``kubectl rollout pause`` (KServe leaves ``spec.paused`` alone)."""
    return {"spec": {"paused": True}}


def resume_patch() -> Obj:
    return {"spec": {"paused": None}}
