"""Opt-in autoscaling: the autoscaler's periodic pass, and what the Capacity panel says of it.

Nothing scales by itself unless an operator turns it on for one ModelServing (the ``autoscale``
control: bounds ``minReplicas``, default 1 and never 0, to ``maxReplicas``, kept in the annotation
``serving.rolloutui.io/autoscale``). Then, every ``ROLLOUTUI_AUTOSCALE_SECONDS`` (Celery beat's
``rolloutui.tasks.autoscale``, in the worker, never in the web process), ``run_once`` takes each
ModelServing with autoscale on and:

1. computes its capacity recommendation (``services.capacity.capacity``: the same figures and
   reason the panel shows);
2. decides with the pure ``controller.core.scaling.decide``: nothing while a rollout is in progress
   or the rollout is paused, nothing without a recommendation, the recommendation kept within the
   bounds, nothing within ``ROLLOUTUI_AUTOSCALE_COOLDOWN_SECONDS`` of the last change of the
   replica count (a scale by anyone, as the audit trail records it: wall-clock seconds);
3. applies a change through ``services.controls.scale`` with source ``autoscaler`` (no user): the
   same patch, conflict retry, reconcile and audit record as an operator's scale, with the
   decision's reason and ``details.figures`` (the recommendation, the bounds, the cooldown).

A scale-down drains the groups beyond the count like any delete (the planner's doing).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.utils import timezone

from controller.core import scaling
from controller.core.controls import ControlError
from controller.core.ports import ClusterError
from controller.core.spec import headline

from ..models import AuditRecord
from . import capacity as capacity_service
from . import controls
from .cluster import get_cluster

log = logging.getLogger(__name__)

SOURCE = AuditRecord.Source.AUTOSCALER


def cooldown_seconds() -> float:
    return float(getattr(settings, "ROLLOUTUI_AUTOSCALE_COOLDOWN_SECONDS", 300))


def label(bounds: scaling.Autoscale | None) -> str:
    """The recommendation's label on the Capacity panel: advice only unless autoscale is on."""
    if bounds is None:
        return capacity_service.RECOMMENDATION_LABEL
    return f"recommendation, applied by the autoscaler within {bounds.min_replicas}..{bounds.max_replicas}"


def describe(ms: dict[str, Any]) -> dict[str, Any]:
    """The autoscale setting as the API and the page show it:
    ``{"enabled", "minReplicas", "maxReplicas", "cooldownSeconds", "error"}`` (``error``: why a
    hand-written annotation is not understood; autoscale is then off)."""
    try:
        bounds = scaling.autoscale_of(ms)
        error = None
    except ControlError as err:
        bounds, error = None, str(err)
    return {
        "enabled": bounds is not None,
        "minReplicas": bounds.min_replicas if bounds else None,
        "maxReplicas": bounds.max_replicas if bounds else None,
        "cooldownSeconds": cooldown_seconds(),
        "error": error,
    }


def capacity(namespace: str, name: str) -> dict[str, Any]:
    """``services.capacity.capacity`` with the autoscale setting (``autoscale``) and the
    recommendation labelled by it. Raises ``NotFound`` for an unknown ModelServing."""
    body = capacity_service.capacity(namespace, name)
    ms = get_cluster().get_modelserving(namespace, name)
    body["autoscale"] = describe(ms)
    try:
        bounds = scaling.autoscale_of(ms)
    except ControlError:
        bounds = None
    body["recommendation"] = {**body["recommendation"], "label": label(bounds)}
    return body


def seconds_since_last_scale(namespace: str, name: str) -> float | None:
    """Wall-clock seconds since the replica count last changed through the ``scale`` control (by
    anyone), None when it never did."""
    last = (
        AuditRecord.objects.filter(namespace=namespace, name=name, action="scale", result=AuditRecord.Result.OK)
        .order_by("-created_at", "-id")
        .values_list("created_at", flat=True)
        .first()
    )
    return None if last is None else max(0.0, (timezone.now() - last).total_seconds())


def busy(ms: dict[str, Any]) -> str | None:
    """Why ``ms`` must not be scaled now, or None: a paused rollout, a change the controller has not
    observed yet, or a rollout (or an earlier scale) that has not converged."""
    meta, status = ms.get("metadata") or {}, ms.get("status") or {}
    if headline(ms).paused:
        return "the rollout is paused"
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    if generation is not None and observed != generation:
        return "the controller has not observed the last change yet"
    if not status.get("converged"):
        phase = status.get("phase") or "Pending"
        return f"a rollout is in progress (phase {phase}): it is not scaled until it converges"
    return None


def step(ms: dict[str, Any], *, cooldown: float | None = None) -> dict[str, Any] | None:
    """One ModelServing's autoscale pass: ``{"namespace", "name", "from", "replicas", "reason"}``
    (``replicas`` None: no change), or None when autoscale is off for it."""
    meta = ms.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
    try:
        bounds = scaling.autoscale_of(ms)
    except ControlError as err:
        log.warning("autoscale of %s/%s skipped: %s", namespace, name, err)
        return None
    if bounds is None:
        return None
    cooldown = cooldown_seconds() if cooldown is None else cooldown
    current = headline(ms).replicas
    held = busy(ms)
    rec: dict[str, Any] = {"replicas": None, "reason": "not computed"}
    if held is None:
        rec = capacity_service.capacity(namespace, name)["recommendation"]
    since = seconds_since_last_scale(namespace, name)
    decision = scaling.decide(
        current=current,
        recommended=rec.get("replicas"),
        why=str(rec.get("reason") or ""),
        bounds=bounds,
        since_last_change=since,
        cooldown=cooldown,
        busy=held,
    )
    outcome = {"namespace": namespace, "name": name, "from": current, "replicas": None, "reason": decision.reason}
    if decision.replicas is None:
        return outcome
    figures = {
        "recommendation": rec,
        "autoscale": bounds.to_json(),
        "cooldownSeconds": cooldown,
        "secondsSinceLastScale": None if since is None else round(since, 1),
    }
    controls.scale(
        None, namespace, name, replicas=decision.replicas, reason=decision.reason, source=SOURCE, figures=figures
    )
    outcome["replicas"] = decision.replicas
    return outcome


def run_once(*, cooldown: float | None = None) -> list[dict[str, Any]]:
    """One autoscaler pass over every ModelServing with autoscale on (the Celery task's body).
    A ModelServing that fails (gone meanwhile, a refused patch: audited by the scale) is logged and
    the pass goes on with the others."""
    out: list[dict[str, Any]] = []
    for ms in get_cluster().list_modelservings():
        try:
            done = step(ms, cooldown=cooldown)
        except (ClusterError, ControlError, controls.ControlDenied) as err:
            meta = ms.get("metadata") or {}
            log.warning("autoscale of %s/%s failed: %s", meta.get("namespace"), meta.get("name"), err)
            continue
        if done is not None:
            out.append(done)
    return out


__all__ = ["busy", "capacity", "describe", "label", "run_once", "seconds_since_last_scale", "step"]
