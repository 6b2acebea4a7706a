"""Promote and roll back a Standard-mode canary (``spec.canary[]``) without losing capacity.

KServe does each in one change of the InferenceService, and both cost serving pods:

- a promotion renames the predictor to the canary, so the canary's Deployment (say 1 pod of a
  4-replica predictor at 25%) becomes the predictor and is scaled up while the old predictor's
  pods are deleted at once: one pod serves everything until the new ones are Ready;
- a rollback removes the canary entry: its pods go at once, while the stable predictor, which had
  given the canary its replicas, is only starting the missing ones.

So the product hands over in two steps, and never lets the Ready predictor pods fall below
``replicas - maxUnavailable``:

promote
    1. ``scale``: the canary's entry asks for the predictor's replica count (``minReplicas``) and
       the stable predictor's traffic share. KServe weighs a canary only once it reports it Ready
       (all its pods available), so the traffic moves only when the full count serves, and only
       then does the stable predictor give its replicas up.
    2. ``switch``: KServe's promotion (``controls.promote``), once the canary is Ready with the full
       count. The canary's Deployment already runs every pod: the switch starts none.
rollback
    1. ``scale``: the stable predictor gets its full count back while the canary still serves: its
       ``minReplicas`` is raised by the replicas it gave the canary, and the canary's own count is
       pinned (its default share would grow with the stable count). Skipped when the canary is not
       Ready: KServe has not taken its share then.
    2. ``remove``: the canary's entry goes (``controls.rollback``) and the predictor's
       ``minReplicas`` is restored, once the stable Deployment has its full count available.

The handover in progress is an annotation on the InferenceService (``ANNOTATION``), so whoever
looks next carries it on: the simulated run after every change, the live app on its periodic
passes. ``advance`` gives the next step's patch once KServe has done the current one; ``describe``
gives the steps for the page and the trace. Serverless mode needs none of this (each Knative
revision keeps its own ``minReplicas`` pods), so there the controls stay single patches.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from .. import naming
from ..controls import ControlError
from . import apps
from . import controls as single
from .config import DeployConfig
from .materialize import canary_replicas, predictor_deployment_name
from .spec import InferenceService

Obj = dict[str, Any]

ANNOTATION = naming.PREFIX + "canary-handover"
PROMOTE = "promote"
ROLLBACK = "rollback"
STEP_SCALE = "scale"
STEP_SWITCH = "switch"
STEP_REMOVE = "remove"
STEPS = {PROMOTE: (STEP_SCALE, STEP_SWITCH), ROLLBACK: (STEP_SCALE, STEP_REMOVE)}


@dataclass(frozen=True, slots=True)
class Handover:
    action: str  # promote | rollback
    canary: str
    step: str  # scale (the only step that waits; the last one is a single patch)
    replicas: int  # the stable predictor's replica count the handover keeps
    # The predictor's own minReplicas/maxReplicas as the user wrote them (None: unset), restored
    # by the rollback's last step.
    min_replicas: int | None = None
    max_replicas: int | None = None
    raised_max: bool = False

    def to_annotation(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


def read(isvc: Obj) -> Handover | None:
    """The handover in progress, or None (also for an annotation this version cannot read: a
    handover nobody can carry on is better dropped than guessed)."""
    raw = apps.annotations(isvc).get(ANNOTATION)
    if not raw:
        return None
    try:
        data = json.loads(raw)
        handover = Handover(**data)
    except (TypeError, ValueError):
        return None
    if handover.action not in STEPS or handover.step != STEP_SCALE:
        return None
    return handover


def _annotation_patch(handover: Handover | None) -> Obj:
    return {"metadata": {"annotations": {ANNOTATION: handover.to_annotation() if handover else None}}}


def _with(patch: Obj, extra: Obj) -> Obj:
    return {**patch, "metadata": {**(patch.get("metadata") or {}), **extra["metadata"]}}


def _canary_ready(isvc: Obj, name: str) -> bool:
    for c in (isvc.get("status") or {}).get("canaryStatuses") or []:
        if c.get("name") == name:
            return bool(c.get("ready"))
    return False


def _refuse_overlap(isvc: Obj, action: str, canary: str) -> None:
    ongoing = read(isvc)
    if ongoing is None:
        return
    if ongoing.action == action and ongoing.canary == canary:
        raise ControlError(f"the {action} of canary {canary} is in progress already (step {ongoing.step})")
    # A rollback of the canary being promoted is the way out of a promote that cannot finish (no
    # room for the full count): allowed. Anything else would change the counts the handover keeps.
    if not (action == ROLLBACK and ongoing.action == PROMOTE and ongoing.canary == canary):
        raise ControlError(
            f"the {ongoing.action} of canary {ongoing.canary} is in progress (step {ongoing.step}); "
            f"roll it back or wait for it to finish"
        )


def _entries_with(isvc: Obj, name: str, **fields: Any) -> list[Obj]:
    """``spec.canary`` with the entry of canary ``name`` changed (a merge patch replaces a list
    whole, so the patch carries every entry)."""
    out = []
    for entry in (isvc.get("spec") or {}).get("canary") or []:
        predictor = dict(entry.get("predictor") or {})
        if predictor.get("name") == name:
            entry = dict(entry)
            if "trafficPercent" in fields:
                entry["trafficPercent"] = fields["trafficPercent"]
            if "minReplicas" in fields:
                predictor["minReplicas"] = fields["minReplicas"]
            entry["predictor"] = predictor
        out.append(entry)
    return out


def _pick(current: InferenceService, canary: str | None) -> str:
    return single._pick_canary(current, canary)


def begin_promote(isvc: Obj, config: DeployConfig, *, canary: str | None = None) -> Obj:
    """The patch that starts promoting ``canary``: its first step in Standard mode, KServe's own
    promotion in Serverless mode. Refuses what ``controls.promote`` refuses, and a second handover
    while one is in progress."""
    single.promote(isvc, config, canary=canary)  # the same refusals, in the same words
    current = single.parsed(isvc, config)
    if not current.standard:
        return single.promote(isvc, config, canary=canary)
    name = _pick(current, canary)
    _refuse_overlap(isvc, PROMOTE, name)
    full = current.predictor.min_replicas
    others = sum(c.traffic_percent for c in current.canaries if c.name != name)
    handover = Handover(PROMOTE, name, STEP_SCALE, full)
    patch = {"spec": {"canary": _entries_with(isvc, name, minReplicas=full, trafficPercent=100 - others)}}
    return single._validated(isvc, config, _with(patch, _annotation_patch(handover)))


def begin_rollback(isvc: Obj, config: DeployConfig, *, canary: str | None = None, component: str = "predictor") -> Obj:
    """The patch that starts rolling ``canary`` back: its first step in Standard mode when the
    stable predictor gave the canary replicas, else the removal itself; Serverless mode pins the
    traffic back (``controls.rollback``)."""
    final = single.rollback(isvc, config, canary=canary, component=component)
    current = single.parsed(isvc, config)
    if not current.standard:
        return final
    name = _pick(current, canary)
    _refuse_overlap(isvc, ROLLBACK, name)
    entry = next(c for c in current.canaries if c.name == name)
    full = current.predictor.min_replicas
    # KServe takes a canary's replicas from the stable predictor only while the canary is Ready.
    given = canary_replicas(entry, full) if _canary_ready(isvc, name) else 0
    if given == 0:
        # Nothing to give back: removing the canary costs the stable predictor no pod. A promote
        # of this canary in progress ends with it.
        return _with(final, _annotation_patch(None)) if read(isvc) else final
    raw = (isvc.get("spec") or {}).get("predictor") or {}
    predictor: Obj = {"minReplicas": full + given}
    raise_max = bool(raw.get("maxReplicas")) and int(raw["maxReplicas"]) < full + given
    if raise_max:
        predictor["maxReplicas"] = full + given  # KServe refuses a maxReplicas below minReplicas
    handover = Handover(
        ROLLBACK,
        name,
        STEP_SCALE,
        full,
        min_replicas=raw.get("minReplicas"),
        max_replicas=raw.get("maxReplicas"),
        raised_max=raise_max,
    )
    # A promote of this canary in progress ends here: the rollback's annotation replaces it.
    patch = {"spec": {"predictor": predictor, "canary": _entries_with(isvc, name, minReplicas=given)}}
    return single._validated(isvc, config, _with(patch, _annotation_patch(handover)))


def _deployment(deployments: list[Obj], name: str) -> Obj | None:
    return next((d for d in deployments if apps.name(d) == name), None)


def _progress(isvc: Obj, current: InferenceService, handover: Handover, deployments: list[Obj]) -> tuple[bool, str]:
    """(whether the scale step is done, what it waits for in an operator's words)."""
    status = isvc.get("status") or {}
    if status.get("observedGeneration") != apps.meta(isvc).get("generation"):
        return False, "KServe has not applied the change yet"
    if handover.action == PROMOTE:
        name = f"{current.name}-{handover.canary}-predictor"
        d = _deployment(deployments, name)
        available = apps.status_count(d, "availableReplicas") if d else 0
        ready = _canary_ready(isvc, handover.canary)
        words = f"canary {handover.canary}: {available} of {handover.replicas} pods available"
        if available >= handover.replicas and ready:
            return True, words
        return False, words + ("" if available < handover.replicas else "; waiting for KServe to report it Ready")
    name = predictor_deployment_name(current.name, current.predictor)
    d = _deployment(deployments, name)
    available = apps.status_count(d, "availableReplicas") if d else 0
    return available >= handover.replicas, f"stable predictor: {available} of {handover.replicas} pods available"


def advance(isvc: Obj, deployments: list[Obj], config: DeployConfig) -> tuple[Obj | None, str | None]:
    """(the patch of the next step, its name), or (None, None) while the current step waits or
    there is no handover. A handover whose canary is gone (removed by hand) ends with a patch that
    only drops the annotation (step ``ended``)."""
    handover = read(isvc)
    if handover is None:
        if apps.annotations(isvc).get(ANNOTATION):
            return _annotation_patch(None), "ended"
        return None, None
    try:
        current = single.parsed(isvc, config)
    except ControlError:
        return None, None  # KServe refuses the spec: nothing moves until a user fixes it
    if not current.standard or handover.canary not in {c.name for c in current.canaries}:
        return _annotation_patch(None), "ended"
    done, _ = _progress(isvc, current, handover, deployments)
    if not done:
        return None, None
    if handover.action == PROMOTE:
        patch = single.promote(isvc, config, canary=handover.canary)
        return _with(patch, _annotation_patch(None)), STEP_SWITCH
    patch = single.rollback(isvc, config, canary=handover.canary)
    predictor: Obj = {"minReplicas": handover.min_replicas}
    if handover.raised_max:
        predictor["maxReplicas"] = handover.max_replicas
    patch = {**patch, "spec": {**patch["spec"], "predictor": predictor}}
    return single._validated(isvc, config, _with(patch, _annotation_patch(None))), STEP_REMOVE


STEP_WORDS = {
    (PROMOTE, STEP_SCALE): "scale canary {canary} to {replicas} pods; it takes the stable share once all are Ready",
    (PROMOTE, STEP_SWITCH): "canary {canary} becomes the predictor; the old predictor is removed",
    (ROLLBACK, STEP_SCALE): "scale the stable predictor back to {replicas} pods while canary {canary} still serves",
    (ROLLBACK, STEP_REMOVE): "remove canary {canary}; all traffic back on the stable predictor",
}


def describe(isvc: Obj, deployments: list[Obj], current: InferenceService | None) -> Obj | None:
    """The handover in progress for the page and the trace: ``{action, canary, replicas, steps:
    [{step, title, state (active|pending), waiting}]}``, or None."""
    handover = read(isvc)
    if handover is None or current is None:
        return None
    _, waiting = _progress(isvc, current, handover, deployments)
    steps = []
    for step in STEPS[handover.action]:
        item: Obj = {
            "step": step,
            "title": STEP_WORDS[(handover.action, step)].format(canary=handover.canary, replicas=handover.replicas),
            "state": "active" if step == handover.step else "pending",
        }
        if step == handover.step:
            item["waiting"] = waiting
        steps.append(item)
    return {"action": handover.action, "canary": handover.canary, "replicas": handover.replicas, "steps": steps}
