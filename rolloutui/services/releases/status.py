"""The release status machine after deploy: Deploying -> Serving | Failed (| Superseded).

Place in the flow: the controller's runtime calls ``after_reconcile(namespace, name, view)`` after
every reconcile pass (it is listed in ``settings.ROLLOUTUI_POST_RECONCILE_HOOKS``; the runtime
imports it by name, so the controller never imports the dashboard). ``judge`` decides from the pass's
state view alone (pure), so a missed call changes nothing: the next pass (at the latest the 30 s
resync) judges the same facts again.

Why a hook rather than a periodic Celery task reading every Deploying release's state: the pass has
just built the state, so judging it costs one indexed query and no extra cluster read, and a status
changes within the pass that saw the change instead of a polling period later.

The rules (docs/releases.md; gate names from ``controller.core.gates``):

- **Serving**: the rollout converged on the release's controller revision (current = update =
  it) and every role instance runs it and is at gate ``Serving``.
- **Failed**, with the reason, when the rollout stops on it: an instance of its revision failed a
  gate (``gateFailed``: crash, image pull, failed verification), the condition ``Progressing`` is
  False with reason ``ProgressDeadlineExceeded``, or the phase is Blocked for a reason that will not
  pass by itself (unschedulable, unreadable revision, refused spec, deadlock).
- **Superseded**: the ModelServing's update revision became another one without a release (for
  example a set-image from the detail page); the release no longer describes what rolls out.

A state read before the deploy was written (its ``generation`` is below the release's) says
nothing about the release and is skipped. Until the controller reports gates (states built before
``gate`` existed), an instance counts as Serving when Ready and as failed when its state is Failed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from controller.core.plan import KIND_DEADLOCK, KIND_REFUSED, KIND_REVISION, KIND_UNSCHEDULABLE
from rolloutui.releases import contract
from rolloutui.releases.models import DeploymentRevision

log = logging.getLogger(__name__)

GATE_SERVING = "Serving"
# Blocked reasons that do not pass by themselves (as the reconcile's own "stuck" event list).
STUCK_KINDS = frozenset({KIND_UNSCHEDULABLE, KIND_REVISION, KIND_REFUSED, KIND_DEADLOCK})
DEADLINE_REASON = "ProgressDeadlineExceeded"

Status = DeploymentRevision.Status


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str


def _where(inst: Mapping[str, Any]) -> str:
    return f"group {inst.get('group')} {inst.get('role')}-{inst.get('ordinal')}"


def instance_serving(inst: Mapping[str, Any]) -> bool:
    if "gate" in inst:
        return inst.get("gate") == GATE_SERVING and not inst.get("gateFailed")
    return inst.get("state") == "Ready"


def instance_failure(inst: Mapping[str, Any]) -> str | None:
    """Why this instance cannot serve, or None."""
    if "gate" in inst:
        failed = inst.get("gateFailed")
        if not failed:
            return None
        waiting = inst.get("gateWaiting") or {}
        detail = waiting.get("reason")
        return f"{_where(inst)} failed at gate {failed}" + (f": {detail}" if detail else "")
    if inst.get("state") == "Failed":
        return f"{_where(inst)} failed (state Failed)"
    return None


def serving_tally(view: Mapping[str, Any], revision: str) -> dict[str, int]:
    """``{"instances", "serving", "failed"}`` of ``revision``: the state's ``servingRevisions`` entry
    when the controller reports gates, else counted from the instances the same way."""
    reported = (view.get("servingRevisions") or {}).get(revision)
    if reported is not None:
        return {k: int(reported.get(k) or 0) for k in ("instances", "serving", "failed")}
    mine = [i for i in view.get("instances") or [] if i.get("revision") == revision]
    return {
        "instances": len(mine),
        "serving": sum(1 for i in mine if instance_serving(i)),
        "failed": sum(1 for i in mine if instance_failure(i)),
    }


def _revision_label(view: Mapping[str, Any], rev_hash: str) -> str:
    """``revision #3 (hash fece0a13d7)``: the number as it is now and the hash, which a later
    rollback's renumbering does not change."""
    for r in view.get("revisions") or []:
        if r.get("hash") == rev_hash:
            return f"revision #{r.get('number')} (hash {rev_hash})"
    return f"revision {rev_hash}"


def judge(*, revision: str, generation: int | None, view: Mapping[str, Any], status: str = Status.DEPLOYING):
    """The status a release of controller revision ``revision`` takes from ``view``, or None (no
    change). ``status`` is its status now: a Serving release only ever becomes Superseded here."""
    if not revision or not view.get("updateRevision"):
        return None
    if generation is not None and int(view.get("generation") or 0) < int(generation):
        return None  # a state from before the deploy
    update = view["updateRevision"]
    if update != revision:
        return Verdict(
            Status.SUPERSEDED,
            # Said in the past tense: the reason stays on the release long after that rollout ended.
            f"replaced by {_revision_label(view, update)}, which no release wrote",
        )
    if status != Status.DEPLOYING:
        return None
    instances = [i for i in view.get("instances") or [] if i.get("state") != "Deleting"]
    for inst in instances:
        if inst.get("revision") == revision:
            why = instance_failure(inst)
            if why:
                return Verdict(Status.FAILED, why)
    for cond in view.get("conditions") or []:
        if (
            cond.get("type") == "Progressing"
            and cond.get("status") == "False"
            and cond.get("reason") == DEADLINE_REASON
        ):
            return Verdict(Status.FAILED, f"{DEADLINE_REASON}: {cond.get('message') or 'no progress'}")
    if view.get("phase") == "Blocked":
        stuck = [w for w in view.get("waiting") or [] if w.get("kind") in STUCK_KINDS]
        if stuck:
            first = stuck[0]
            groups = [g for g in first.get("groups") or [] if g is not None]
            where = f" (groups {', '.join(map(str, groups))})" if groups else ""
            return Verdict(Status.FAILED, f"blocked: {first.get('reason')}{where}")
    tally = serving_tally(view, revision)
    if (
        view.get("converged")
        and view.get("currentRevision") == revision
        and tally["instances"] > 0
        and tally["instances"] == len(instances)
        and tally["serving"] == tally["instances"]
        and tally["failed"] == 0
    ):
        return Verdict(Status.SERVING, f"all {tally['instances']} instances passed every gate")
    return None


def after_reconcile(namespace: str, name: str, view: Mapping[str, Any] | None) -> None:
    """The post-reconcile hook: judge the releases of this ModelServing that are Deploying or Serving."""
    if not view or view.get("deleted"):
        return
    rows = DeploymentRevision.objects.filter(
        status__in=(Status.DEPLOYING, Status.SERVING),
        target__kind=contract.KIND_MODELSERVING,
        target__namespace=namespace,
        target__name=name,
    ).values_list("pk", "controller_revision", "generation", "status")
    for pk, revision, generation, status in list(rows):
        verdict = judge(revision=revision, generation=generation, view=view, status=status)
        if verdict is None:
            continue
        with transaction.atomic():
            dr = DeploymentRevision.objects.select_for_update().filter(pk=pk, status=status).first()
            if dr is None:  # moved meanwhile (a deploy superseded it)
                continue
            dr.move(verdict.status, reason=verdict.reason, by="controller")
            dr.save(update_fields=["status", "status_reason", "status_changed_at", "events"])
        log.info("release r%s of %s/%s: %s -> %s (%s)", dr.number, namespace, name, status, dr.status, verdict.reason)


# -- Releases that target an InferenceService component (issue 13) ----------------------------------------


def judge_inferenceservice(
    *, generation: int | None, component: str, image: str, view: Mapping[str, Any], status: str = Status.DEPLOYING
):
    """The status a release written into ``component`` (generation ``generation``, running
    ``image``) takes from the InferenceService's state (``controller.core.kserve.view``), or None.

    - nothing until KServe observed the release's generation;
    - Superseded: the component now runs another image, which no release wrote;
    - Failed: KServe refuses the spec, a Deployment of the component passed its progress deadline,
      or one of its pods failed a gate (crash loop, unschedulable);
    - Serving: converged, and every pod of the component passed every gate.
    """
    observed = view.get("observedGeneration")
    if generation is not None and (observed is None or int(observed) < int(generation)):
        return None
    running = ((((view.get("spec") or {}).get("components") or {}).get(component)) or {}).get("image")
    if image and running and running != image:
        return Verdict(Status.SUPERSEDED, f"the {component} now runs {running}, which no release wrote")
    if status != Status.DEPLOYING:
        return None
    error = view.get("error")
    if error:
        return Verdict(Status.FAILED, f"KServe refuses the spec: {error.get('field')}: {error.get('rule')}")
    for d in view.get("deployments") or []:
        if d.get("component") == component and d.get("progressDeadlineExceeded"):
            return Verdict(Status.FAILED, f"{DEADLINE_REASON}: Deployment {d.get('name')}")
    pods = [i for i in view.get("instances") or [] if i.get("component") == component and i.get("state") != "Deleting"]
    for pod in pods:
        if pod.get("gateFailed"):
            return Verdict(Status.FAILED, f"pod {pod.get('pod')} failed at gate {pod.get('gateFailed')}")
    if view.get("converged") and pods and all(instance_serving(p) for p in pods):
        return Verdict(Status.SERVING, f"all {len(pods)} pods of the {component} passed every gate")
    return None


def judge_inferenceservice_releases() -> int:
    """The resync hook (``ROLLOUTUI_RESYNC_HOOKS``): judge every release that targets an
    InferenceService and is Deploying or Serving, from its InferenceService's state now. Returns
    how many moved. (ModelServing releases are judged after each reconcile pass instead.)"""
    from controller.core.ports import NotFound

    from ..kserve.state import get_state

    rows = DeploymentRevision.objects.filter(
        status__in=(Status.DEPLOYING, Status.SERVING), target__kind=contract.KIND_INFERENCESERVICE
    ).select_related("target", "model_version")
    moved = 0
    views: dict[tuple[str, str], Mapping[str, Any] | None] = {}
    for dr in list(rows):
        key = (dr.target.namespace, dr.target.name)
        if key not in views:
            try:
                views[key] = get_state(*key)
            except NotFound:
                views[key] = None
        view = views[key]
        if view is None:
            continue
        verdict = judge_inferenceservice(
            generation=dr.generation,
            component=dr.target.component or "predictor",
            image=dr.model_version.runtime_image,
            view=view,
            status=dr.status,
        )
        if verdict is None:
            continue
        with transaction.atomic():
            fresh = DeploymentRevision.objects.select_for_update().filter(pk=dr.pk, status=dr.status).first()
            if fresh is None:
                continue
            fresh.move(verdict.status, reason=verdict.reason, by="controller")
            fresh.save(update_fields=["status", "status_reason", "status_changed_at", "events"])
        moved += 1
        log.info("release r%s of %s/%s: %s -> %s (%s)", dr.number, *key, dr.status, verdict.status, verdict.reason)
    return moved


__all__ = [
    "Verdict",
    "after_reconcile",
    "instance_failure",
    "instance_serving",
    "judge",
    "judge_inferenceservice",
    "judge_inferenceservice_releases",
    "serving_tally",
]
