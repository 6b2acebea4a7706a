"""Operator controls of a KServe InferenceService: the only implementation of them (issue 13).

Declared once in the action registry (``services.actions``, target ``INFERENCESERVICE``), from which
the API routes (``POST /api/inferenceservices/{ns}/{name}/<action>``), the ``manage.py rollout``
subcommands and the InferenceService page's buttons are generated. Each control, like the
ModelServing ones (``services.controls``):

1. checks the permission ``rolloutui.operate_modelserving`` in the namespace and the reason;
2. builds the change with the pure core (``controller.core.kserve.controls``): what a KServe user
   would change, never a fight with KServe's controller. ``set-image``, ``canary``, ``promote`` and
   ``rollback`` are JSON merge patches of the InferenceService (with the change-cause annotation),
   applied with its resourceVersion as a precondition and rebuilt from a fresh read on ``Conflict``.
   A Standard-mode ``promote`` or ``rollback`` patches only its first step: the product hands the
   traffic over in steps that keep the predictor's capacity (``controller.core.kserve.handover``),
   the next ones taken by the periodic passes (``controller.runtime.kserve.passes.advance_handovers``);
   ``pause``/``resume`` patch its Deployments' ``spec.paused`` as ``kubectl rollout pause`` does
   (Standard mode only: Knative owns a Serverless InferenceService's Deployments);
3. writes an ``AuditRecord`` (also when refused or failed) whose ``from``/``to`` are the
   InferenceService's generations and whose details keep the spec before and after: the page's
   revision history shows their diff (``history``).

``availability`` says, for the page, which controls the current mode and spec allow and why not
the others, with the same core functions (so the button's reason is the refusal's text).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.kserve import apps, handover
from controller.core.kserve import controls as core
from controller.core.kserve.config import CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE
from controller.core.mergepatch import copy_json, diff
from controller.core.ports import Conflict, NotFound
from controller.runtime.kserve import state as runtime_kserve
from controller.runtime.publish import publish_inferenceservice
from controller.runtime.simulator import ScenarioError, get_simulator, preview_inferenceservice

from ...models import AuditRecord
from .. import masking
from ..cluster import get_cluster
from ..controls import MAX_ATTEMPTS, audited, check_permission, check_reason, check_source, username

log = logging.getLogger(__name__)

KIND = runtime_kserve.KIND
DEPLOYMENT = "Deployment"
# The audit actions of these controls (AuditRecord.action): the history reads them back.
# A cluster whose nodes the adapter does not list is previewed on this many 8-GPU nodes.
PREVIEW_NODES = 8
PREVIEW_GPUS_PER_NODE = 8
AUDIT_ACTIONS = (
    "isvc_set_image",
    "isvc_canary",
    "isvc_promote",
    "isvc_rollback",
    "isvc_pause",
    "isvc_resume",
)


def _cluster():
    cluster = get_cluster()
    if not runtime_kserve.supported(cluster):
        raise ControlError(runtime_kserve.NOT_SUPPORTED)
    return cluster


def _with_cause(patch: dict[str, Any], cause: str) -> dict[str, Any]:
    meta = patch.get("metadata") or {}
    annotations = {**(meta.get("annotations") or {}), naming.ANNOTATION_CHANGE_CAUSE: cause}
    return {**patch, "metadata": {**meta, "annotations": annotations}}


def _generation(obj: dict[str, Any] | None) -> str:
    value = ((obj or {}).get("metadata") or {}).get("generation")
    return "" if value is None else str(value)


def _control(
    user,
    namespace: str,
    name: str,
    action: str,
    reason: Any,
    source: str,
    build: Callable[[dict[str, Any], Any], dict[str, Any]],
    args: dict[str, Any],
) -> AuditRecord:
    """Patch the InferenceService with ``build(isvc, config)`` and audit it as ``action``. On a
    target of an environment that requires approval an image no approved model version carries is
    refused (``releases.approval``)."""
    from controller.core.mergepatch import merge_patch
    from rolloutui.releases import contract as release_contract

    from ..releases.approval import BYPASS_PERMISSION, check_direct_change

    details: dict[str, Any] = {"args": args}
    with audited(
        user, action=action, namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        check_permission(user, namespace=namespace)
        reason = check_reason(reason)
        cluster = _cluster()
        for attempt in range(MAX_ATTEMPTS):
            before = cluster.get_object(KIND, namespace, name)
            control.from_revision = _generation(before)
            patch = build(before, runtime_kserve.deploy_config(cluster))
            bypassed = check_direct_change(
                user, namespace, name, before, merge_patch(before, patch), kind=release_contract.KIND_INFERENCESERVICE
            )
            if bypassed:
                details["approvalBypassed"] = {"images": bypassed, "permission": BYPASS_PERMISSION}
            patch = _with_cause(patch, f"{username(user)} via {source}: {action}: {reason}")
            rv = (before.get("metadata") or {}).get("resourceVersion")
            try:
                after = cluster.patch_object(KIND, namespace, name, patch, resource_version=rv)
                break
            except Conflict:
                log.info("%s of %s/%s lost a race (attempt %d); re-reading", action, namespace, name, attempt + 1)
        else:
            raise Conflict(
                f"inferenceservice {namespace}/{name} kept changing; {action} not applied after {MAX_ATTEMPTS} attempts"
            )
        control.to_revision = _generation(after)
        details.update(
            patch=patch,
            specBefore=copy_json(before.get("spec") or {}),
            specAfter=copy_json(after.get("spec") or {}),
            generation=(after.get("metadata") or {}).get("generation"),
        )
    publish_inferenceservice(namespace, name)  # its open pages, now rather than at the next tick
    return control.record


def set_image(
    user,
    namespace: str,
    name: str,
    *,
    image: str,
    component: str | None = None,
    container: str | None = None,
    reason: str,
    source: str,
) -> AuditRecord:
    component = component or "predictor"
    return _control(
        user,
        namespace,
        name,
        "isvc_set_image",
        reason,
        source,
        lambda isvc, config: core.set_image(isvc, config, image=image, component=component, container=container),
        {"component": component, "image": image, "container": container},
    )


def start_canary(
    user,
    namespace: str,
    name: str,
    *,
    percent: int,
    image: str | None = None,
    canary: str | None = None,
    reason: str,
    source: str,
) -> AuditRecord:
    return _control(
        user,
        namespace,
        name,
        "isvc_canary",
        reason,
        source,
        lambda isvc, config: core.start_canary(isvc, config, percent=percent, image=image, name=canary),
        {"percent": percent, "image": image, "canary": canary},
    )


def promote(user, namespace: str, name: str, *, canary: str | None = None, reason: str, source: str) -> AuditRecord:
    return _control(
        user,
        namespace,
        name,
        "isvc_promote",
        reason,
        source,
        lambda isvc, config: handover.begin_promote(isvc, config, canary=canary),
        {"canary": canary},
    )


def rollback(
    user,
    namespace: str,
    name: str,
    *,
    canary: str | None = None,
    component: str | None = None,
    reason: str,
    source: str,
) -> AuditRecord:
    component = component or "predictor"
    return _control(
        user,
        namespace,
        name,
        "isvc_rollback",
        reason,
        source,
        lambda isvc, config: handover.begin_rollback(isvc, config, canary=canary, component=component),
        {"canary": canary, "component": component},
    )


def _pause_control(user, namespace: str, name: str, *, paused: bool, reason: Any, source: str) -> AuditRecord:
    """``kubectl rollout pause`` (or ``resume``) of every Deployment of the InferenceService."""
    action = "isvc_pause" if paused else "isvc_resume"
    details: dict[str, Any] = {"args": {}}
    with audited(
        user, action=action, namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        check_permission(user, namespace=namespace)
        reason = check_reason(reason)
        cluster = _cluster()
        # The InferenceService itself is not changed: its generation stays (before = after).
        isvc = cluster.get_object(KIND, namespace, name)
        control.from_revision = control.to_revision = _generation(isvc)
        core.check_pausable(isvc, runtime_kserve.deploy_config(cluster))
        patch = core.pause_patch() if paused else core.resume_patch()
        deployments = cluster.list_objects(DEPLOYMENT, namespace, owner=name)
        changed = [apps.name(d) for d in deployments if bool((d.get("spec") or {}).get("paused")) != paused]
        if not changed:
            already = "paused" if paused else "not paused"
            raise ControlError(f"every Deployment of {namespace}/{name} is {already} already")
        for dname in changed:
            cluster.patch_object(DEPLOYMENT, namespace, dname, patch)
        details.update(deployments=changed, patch=patch)
    publish_inferenceservice(namespace, name)
    return control.record


def pause(user, namespace: str, name: str, *, reason: str, source: str) -> AuditRecord:
    return _pause_control(user, namespace, name, paused=True, reason=reason, source=source)


def resume(user, namespace: str, name: str, *, reason: str, source: str) -> AuditRecord:
    return _pause_control(user, namespace, name, paused=False, reason=reason, source=source)


# -- Preview: what a new image would do to the predictor's capacity ----------------------------------


def preview(
    user, namespace: str, name: str, *, image: str, component: str | None = None, container: str | None = None
) -> dict[str, Any]:
    """The predictor's Ready pods while ``image`` would roll out (``simcluster.kserve.preview``), on a simulated
    copy of the InferenceService on nodes like the cluster's: nothing is applied. Needs the operate
    permission in the namespace (what is previewed is a control's change). The change is the one
    ``set-image`` would make (the same core builder), refused with the same words."""
    check_permission(user, namespace=namespace)
    cluster = _cluster()
    isvc = cluster.get_object(KIND, namespace, name)
    config = runtime_kserve.deploy_config(cluster)
    patch = core.set_image(isvc, config, image=image, component=component or "predictor", container=container)
    try:
        config_map = cluster.get_object("ConfigMap", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME)
        deploy = (config_map.get("data") or {}).get("deploy")
    except NotFound:
        deploy = None
    # The copy has the embedded cluster's nodes; on Kubernetes (no simulator) a default shape.
    simulator = get_simulator()
    nodes = [n for n in simulator.list_nodes() if n.gpus] if simulator is not None else []
    try:
        return preview_inferenceservice(
            isvc,
            patch,
            deploy=deploy,
            nodes=len(nodes) or PREVIEW_NODES,
            gpus_per_node=max((n.gpus for n in nodes), default=PREVIEW_GPUS_PER_NODE),
        )
    except ScenarioError as err:
        raise ControlError(f"KServe would refuse the change: {err.rule}", field=err.field) from None


# -- For the page: what the mode allows, and the history ---------------------------------------------


def _reason(check: Callable[[], Any]) -> str | None:
    try:
        check()
    except ControlError as err:
        return str(err)
    return None


def availability(isvc: dict[str, Any], deployments: list[dict[str, Any]], config) -> dict[str, str | None]:
    """Audit action -> None when the control applies now, else why not (the refusal's own words)
    ("pause applies to Standard mode only: ...", "there is no canary ...")."""
    paused = [bool((d.get("spec") or {}).get("paused")) for d in deployments]

    def pausable(want: bool) -> None:
        core.check_pausable(isvc, config)
        if not deployments:
            raise ControlError("KServe has not created its Deployments yet")
        if all(p == want for p in paused):
            raise ControlError("every Deployment is paused already" if want else "no Deployment is paused")

    return {
        "isvc_set_image": _reason(lambda: core.parsed(isvc, config)),
        "isvc_canary": _reason(lambda: core.parsed(isvc, config)),
        "isvc_promote": _reason(lambda: handover.begin_promote(isvc, config)),
        "isvc_rollback": _reason(lambda: handover.begin_rollback(isvc, config)),
        "isvc_pause": _reason(lambda: pausable(True)),
        "isvc_resume": _reason(lambda: pausable(False)),
    }


def get_state(namespace: str, name: str, *, user=None) -> dict[str, Any]:
    """The InferenceService's state (``state.get_state``) with ``controls``: which
    controls apply now (``availability``), and the manifest's spec. Secret-looking values are
    masked unless ``user`` may operate in the namespace (``masking``, as for a ModelServing's
    manifest). Raises ``NotFound``."""
    cluster = get_cluster()
    state = runtime_kserve.inferenceservice_state(namespace, name, cluster=cluster)
    isvc = cluster.get_object(KIND, namespace, name)
    deployments = cluster.list_objects(DEPLOYMENT, namespace, owner=name)
    state["controls"] = availability(isvc, deployments, runtime_kserve.deploy_config(cluster))
    state["manifest"] = {"generation": _generation(isvc), "spec": copy_json(isvc.get("spec") or {})}
    return masking.mask_for(user, namespace, state)


def history(namespace: str, name: str, *, limit: int = 50, user=None) -> list[dict[str, Any]]:
    """The InferenceService's changes made through the product, newest first: who, when, why, the
    generations and the diff of its spec (a JSON merge patch from the spec before to the one after).
    Refused attempts are included with their error (they changed nothing: no diff). Masked like
    ``get_state`` for a ``user`` who may not operate in the namespace."""
    if not AuditRecord.objects.filter(namespace=namespace, name=name).exists():
        try:
            get_cluster().get_object(KIND, namespace, name)
        except (NotFound, AttributeError):
            raise NotFound(f"inferenceservice {namespace}/{name} not found") from None
    rows = AuditRecord.objects.filter(namespace=namespace, name=name, action__in=AUDIT_ACTIONS).order_by("-id")
    out = []
    for record in rows[:limit]:
        details = record.details or {}
        before, after = details.get("specBefore"), details.get("specAfter")
        out.append(
            {
                "id": record.id,
                "time": record.created_at.isoformat(),
                "actor": record.actor_name,
                "source": record.source,
                "action": record.action,
                "reason": record.reason,
                "result": record.result,
                "error": record.error,
                "fromGeneration": record.from_revision,
                "toGeneration": record.to_revision,
                "args": details.get("args") or {},
                "deployments": details.get("deployments"),
                "specDiff": diff(before, after) if isinstance(before, dict) and isinstance(after, dict) else None,
            }
        )
    return masking.mask_for(user, namespace, out)


__all__ = [
    "AUDIT_ACTIONS",
    "availability",
    "get_state",
    "history",
    "pause",
    "preview",
    "promote",
    "resume",
    "rollback",
    "set_image",
    "start_canary",
]
