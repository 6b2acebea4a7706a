"""Deploy a release, roll back to a release, promote a release to production.

Place in the flow: the action registry (``rolloutui.services.actions``) routes ``deploy``,
``rollback-release`` and ``promote-release`` here from the API, the CLI and the pages. Each:

1. checks the permission (``rolloutui.operate_modelserving`` in the release's namespace, and for a
   promotion in the destination's too), the reason and the approval rule
   (an environment that requires approval takes only an Approved version; a rollback may restore a
   version that was approved and later deprecated);
2. writes the release's whole content (image, model, schema, config, resources: see
   ``templates``) into the target roles' entry and worker templates in one merge patch through the
   cluster port, with the ModelServing's resourceVersion as precondition (re-read and rebuilt on a
   conflict, like ``services.controls``), and the change-cause annotation naming the release, e.g.
   ``deploy r31 (v12) to production by alice: p99 fixed``;
3. in the same database transaction: the release becomes Deploying with the controller revision
   it produced (hash and number, computed like ``services.controls``), and the release that was
   live on the target becomes Superseded (a deploy or a promotion) or RolledBack (a rollback);
4. writes an ``AuditRecord`` (also when refused) naming the ModelServing, with the controller
   revisions from/to and the releases from/to in ``details``, and enqueues a reconcile.

The controller's passes then move the release to Serving or Failed (``status.after_reconcile``).
``DEPLOYERS`` maps a target kind to the function that writes a release into it: a ModelServing's
roles, or an InferenceService component (``templates.component_patch``; KServe rolls it out).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.kserve.errors import KServeError
from controller.core.kserve.spec import parse_inferenceservice
from controller.core.mergepatch import merge_patch
from controller.core.ports import Conflict, NotFound
from controller.runtime import enqueue
from controller.runtime import kserve as runtime_kserve
from rolloutui.releases import contract
from rolloutui.releases.models import DeploymentRevision, Environment, ModelVersion

from .. import controls, masking
from ..cluster import get_cluster
from ..controls import audited, check_permission, check_reason, check_source, username
from . import records, templates

log = logging.getLogger(__name__)

MAX_ATTEMPTS = controls.MAX_ATTEMPTS


def check_approval(env: Environment, mv: ModelVersion, *, restoring: bool = False) -> None:
    """``ControlError`` on field ``modelVersion`` when ``mv`` may not go to ``env``.

    - a Deprecated version takes no new release (a rollback may restore one);
    - an environment that requires approval takes only an Approved version (a rollback: one that
      was approved, even if deprecated since).
    """
    if mv.status == ModelVersion.Status.DEPRECATED and not restoring:
        raise ControlError(f"{mv.key} is deprecated; it takes no new release", field="modelVersion")
    if env.requires_approval:
        ok = mv.was_approved if restoring else mv.status == ModelVersion.Status.APPROVED
        if not ok:
            raise ControlError(
                f"environment {env.name} requires an approved model version, and {mv.key} is {mv.status}: "
                "someone with the approve permission (releases.approve_modelversion) must approve it first",
                field="modelVersion",
            )


# -- Writers per target kind ------------------------------------------------------------------------------


def _write_modelserving(dr: DeploymentRevision, cause: str) -> dict[str, Any]:
    """Write ``dr`` into its ModelServing. Returns {"before", "after", "generation", "patch"} (revisions
    as ``controls._revision_of`` gives them: number, hash, becomes)."""
    cluster = get_cluster()
    content = release_content(dr)
    namespace, name = dr.target.namespace, dr.target.name
    for attempt in range(MAX_ATTEMPTS):
        try:
            ms = cluster.get_modelserving(namespace, name)
        except NotFound:
            raise ControlError(f"target ModelServing {namespace}/{name} does not exist", field="target") from None
        revisions = cluster.list_revisions(namespace, name)
        before = controls._revision_of(ms, revisions)
        patch = templates.patch_for(ms, content, roles=list(dr.roles), container=dr.container)
        patch["metadata"] = {"annotations": {naming.ANNOTATION_CHANGE_CAUSE: cause}}
        rv = (ms.get("metadata") or {}).get("resourceVersion")
        try:
            new = cluster.patch_modelserving(namespace, name, patch, resource_version=rv)
            break
        except Conflict:
            log.info("release r%s of %s/%s lost a race (attempt %d); re-reading", dr.number, namespace, name, attempt)
            continue
    else:
        raise Conflict(f"modelserving {namespace}/{name} kept changing; release not written after {MAX_ATTEMPTS} tries")
    after = controls._revision_of(new, revisions)
    return {
        "before": before,
        "after": after,
        "generation": (new.get("metadata") or {}).get("generation"),
        "patch": patch,
        "applied": templates.snapshot(new, roles=list(dr.roles), container=dr.container),
    }


def release_content(dr: DeploymentRevision) -> templates.ReleaseContent:
    """What ``dr`` writes: its version, profile and config; a rollback (``dr.restores``) also brings
    back the replicas and resources the restored release had when it was deployed."""
    content = templates.content_of(
        dr.model_version.contract_values(), roles=list(dr.roles), config=dr.config, profile=dr.profile
    )
    if dr.restores_id and dr.restores.applied:
        content = content.restoring(dr.restores.applied)
    return content


def _write_inferenceservice(dr: DeploymentRevision, cause: str) -> dict[str, Any]:
    """Write ``dr`` into its InferenceService component (``templates.component_patch``: image,
    storageUri and the MODEL_* env, resources, the model-version label) with the InferenceService's
    resourceVersion as precondition; KServe then rolls it out. Its "revision" is the
    InferenceService's generation (``{"number": generation}``): KServe's own revisions (ReplicaSets,
    Knative revisions) follow from it."""
    cluster = get_cluster()
    if not runtime_kserve.supported(cluster):
        raise ControlError(f"target {dr.target.ref}: {runtime_kserve.NOT_SUPPORTED}", field="target")
    component = dr.target.component or "predictor"
    content = templates.content_of(
        dr.model_version.contract_values(), roles=[component], config=dr.config, profile=dr.profile
    )
    namespace, name = dr.target.namespace, dr.target.name
    for attempt in range(MAX_ATTEMPTS):
        try:
            isvc = cluster.get_object(runtime_kserve.KIND, namespace, name)
        except NotFound:
            raise ControlError(f"target InferenceService {namespace}/{name} does not exist", field="target") from None
        patch = templates.component_patch(isvc, content, component=component, container=dr.container)
        try:
            parse_inferenceservice(merge_patch(isvc, patch), runtime_kserve.deploy_config(cluster))
        except KServeError as err:
            raise ControlError(f"KServe would refuse the release: {err}", field=err.field) from None
        patch["metadata"] = {"annotations": {naming.ANNOTATION_CHANGE_CAUSE: cause}}
        rv = (isvc.get("metadata") or {}).get("resourceVersion")
        try:
            new = cluster.patch_object(runtime_kserve.KIND, namespace, name, patch, resource_version=rv)
            break
        except Conflict:
            log.info("release r%s of %s/%s lost a race (attempt %d); re-reading", dr.number, namespace, name, attempt)
    else:
        raise Conflict(
            f"inferenceservice {namespace}/{name} kept changing; release not written after {MAX_ATTEMPTS} tries"
        )
    generation = (new.get("metadata") or {}).get("generation")
    written = (new.get("spec") or {}).get(component) or {}
    return {
        "before": {"number": (isvc.get("metadata") or {}).get("generation"), "hash": None},
        "after": {"number": generation, "hash": None},
        "generation": generation,
        "patch": patch,
        "applied": {"component": component, "minReplicas": written.get("minReplicas")},
    }


# Target kind -> writer(dr, change cause) -> {"before", "after", "generation", "patch"}.
DEPLOYERS: dict[str, Callable[[DeploymentRevision, str], dict[str, Any]]] = {
    contract.KIND_MODELSERVING: _write_modelserving,
    contract.KIND_INFERENCESERVICE: _write_inferenceservice,
}


# -- The three actions ------------------------------------------------------------------------------------


def deploy(user, namespace: str, name: str, number: int, *, reason: str, source: str):
    """Start Pending release ``r<number>`` of ``namespace/name``. Returns the ``AuditRecord``."""

    def prepare(_control):
        dr = records.get_release(namespace, name, number)
        if dr.status != DeploymentRevision.Status.PENDING:
            raise ControlError(
                f"r{dr.number} is {dr.status}: only a Pending release can be deployed (roll back to it instead)",
                field="number",
            )
        check_approval(dr.environment, dr.model_version)
        return dr

    return _release_action(
        user,
        "deploy",
        namespace,
        name,
        reason=reason,
        source=source,
        prepare=prepare,
        replaced=DeploymentRevision.Status.SUPERSEDED,
        cause=_deploy_cause,
    )


def _deploy_cause(dr: DeploymentRevision, who: str, why: str) -> str:
    return f"deploy r{dr.number} ({dr.model_version.version}) to {dr.environment.name} by {who}: {why}"


def create_and_deploy(user, values: Mapping[str, Any], *, source: str):
    """Plan a release (``records.create_release``'s ``values``) and, with ``"deploy": true``, deploy it
    in the same action. Returns ``(DeploymentRevision, AuditRecord)``.

    The plan and the deploy share one transaction, as a rollback or a promotion plans its release:
    a deploy refused for approval, permission or bad input (or that the cluster refuses) leaves no
    Pending release behind, only the audit record of the refused deploy. Without ``deploy`` (or
    false) it plans only, as ``records.create_release``."""
    values = dict(values) if isinstance(values, Mapping) else {}
    now = values.pop("deploy", False)
    if not isinstance(now, bool):
        details = {"values": {**values, "deploy": now}}
        with audited(
            user, action="deploy", namespace="", name="", reason=values.get("reason"), source=source, details=details
        ):
            raise ControlError("deploy must be true or false", field="deploy")
    if not now:
        return records.create_release(user, values, source=source)
    planned: list[DeploymentRevision] = []

    def prepare(control):
        def located(target) -> None:  # a refusal from here on names the ModelServing
            control.namespace, control.name = target.namespace, target.name

        dr = records.plan_from_values(user, values, located=located)
        planned.append(dr)
        check_approval(dr.environment, dr.model_version)
        return dr

    record = _release_action(
        user,
        "deploy",
        "",
        "",
        reason=values.get("reason"),
        source=source,
        prepare=prepare,
        replaced=DeploymentRevision.Status.SUPERSEDED,
        cause=_deploy_cause,
        args={k: values.get(k) for k in ("environment", "modelVersion", "target", "resourceProfile", "config")},
    )
    return DeploymentRevision.objects.get(pk=planned[-1].pk), record


def rollback_release(user, namespace: str, name: str, number: int, *, reason: str, source: str):
    """Restore release ``r<number>``: its model, image, config, schema and resources come back
    together as a new release (``restores`` = r<number>); the live one becomes RolledBack."""

    def prepare(_control):
        old = records.get_release(namespace, name, number)
        if old.status == DeploymentRevision.Status.PENDING:
            raise ControlError(
                f"r{old.number} was never deployed: deploy it instead of rolling back to it", field="number"
            )
        live = records.active_release(old.target)
        if live is not None and live.pk == old.pk:
            raise ControlError(f"r{old.number} is the live release already ({old.status})", field="number")
        check_approval(old.environment, old.model_version, restoring=True)
        return records.plan_release(
            user,
            environment=old.environment,
            model_version=old.model_version,
            target=old.target,
            reason=check_reason(reason),
            restores=old,
        )

    return _release_action(
        user,
        "rollback_release",
        namespace,
        name,
        reason=reason,
        source=source,
        prepare=prepare,
        replaced=DeploymentRevision.Status.ROLLED_BACK,
        cause=lambda dr, who, why: (
            f"roll back to r{dr.restores.number} as r{dr.number} ({dr.model_version.version}) in "
            f"{dr.environment.name} by {who}: {why}"
        ),
    )


def promotion_destination(source: Environment) -> Environment:
    """Where a promotion from ``source`` goes when none is named: the first environment ranked
    after it (staging -> production); with no such rank, the one called ``production``."""
    later = Environment.objects.filter(rank__gt=source.rank).order_by("rank", "name").first()
    return later or records.get_environment("production")


def promote_release(
    user,
    namespace: str,
    name: str,
    number: int,
    *,
    environment: str | None = None,
    target: str | None = None,
    resource_profile: str | None = None,
    reason: str,
    source: str,
):
    """Promote ``r<number>`` (Serving, e.g. in staging) to ``environment`` (default: the next
    environment by rank, ``promotion_destination``), never to one ranked before the release's own:
    a new release of the same version and config on that environment's target, deployed at once.
    The resource profile is the given one, else the one of the same name if the environment has it."""

    def prepare(_control):
        src = records.get_release(namespace, name, number)
        if src.status != DeploymentRevision.Status.SERVING:
            raise ControlError(
                f"r{src.number} is {src.status}: only a release that is Serving can be promoted", field="number"
            )
        env = records.get_environment(environment) if environment else promotion_destination(src.environment)
        if env.pk == src.environment_id:
            raise ControlError(f"r{src.number} is in {env.name} already", field="environment")
        if env.rank < src.environment.rank:
            # A promotion carries a release forward (staging -> production); sending a production
            # release back down would deploy to staging under the name of a promotion.
            raise ControlError(
                f"environment {env.name} (rank {env.rank}) comes before {src.environment.name} "
                f"(rank {src.environment.rank}): a promotion goes only to a later environment; "
                f"plan a release in {env.name} instead",
                field="environment",
            )
        dest = records.target_in(env, target)
        check_approval(env, src.model_version)
        profile = resource_profile or ""
        if not profile and src.resource_profile in (env.resource_profiles or {}):
            profile = src.resource_profile
        return records.plan_release(
            user,
            environment=env,
            model_version=src.model_version,
            target=dest,
            resource_profile=profile,
            config=src.config,
            reason=check_reason(reason),
            promoted_from=src,
        )

    return _release_action(
        user,
        "promote_release",
        namespace,
        name,
        reason=reason,
        source=source,
        prepare=prepare,
        replaced=DeploymentRevision.Status.SUPERSEDED,
        cause=lambda dr, who, why: (
            f"promote r{dr.promoted_from.number} ({dr.model_version.version}) from "
            f"{dr.promoted_from.environment.name} to {dr.environment.name} as r{dr.number} by {who}: {why}"
        ),
        args={"environment": environment, "target": target, "resourceProfile": resource_profile},
    )


def _release_action(
    user,
    action: str,
    namespace: str,
    name: str,
    *,
    reason: Any,
    source: str,
    prepare: Callable[[Any], DeploymentRevision],  # (the audited control) -> the release to write
    replaced: str,
    cause: Callable[[DeploymentRevision, str, str], str],
    args: dict[str, Any] | None = None,
):
    details: dict[str, Any] = {"args": {k: v for k, v in (args or {}).items() if v is not None}}
    with audited(
        user, action=action, namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        if namespace:  # else a release planned here: its target is known once ``prepare`` ran
            check_permission(user, controls.PERMISSION, namespace=namespace)
        why = check_reason(reason)
        with transaction.atomic():
            dr = prepare(control)
            # Where the release goes (a promotion goes to another environment's ModelServing): the
            # user must operate there too; a refusal rolls back what ``prepare`` planned.
            control.namespace, control.name = dr.target.namespace, dr.target.name
            if dr.target.namespace != namespace:
                check_permission(user, controls.PERMISSION, namespace=dr.target.namespace)
            live = records.active_release(dr.target)
            details["release"] = {"number": dr.number, "version": dr.model_version.key, "env": dr.environment.name}
            details["replaces"] = (
                {"number": live.number, "version": live.model_version.key, "status": live.status} if live else None
            )
            writer = DEPLOYERS.get(dr.target.kind)
            if writer is None:
                raise ControlError(f"no deployer for target kind {dr.target.kind}", field="target")
            written = writer(dr, cause(dr, username(user), why))
            after = written["after"]
            control.from_revision = controls._label(written["before"])
            control.to_revision = controls._label(after)
            if live is not None and live.pk != dr.pk:
                note = (
                    f"rolled back to r{dr.restores.number} by {username(user)}: {why}"
                    if replaced == DeploymentRevision.Status.ROLLED_BACK
                    else f"replaced by r{dr.number} ({dr.model_version.version})"
                )
                if live.status == DeploymentRevision.Status.FAILED:
                    # Superseded and RolledBack describe a release that had worked; a failed one keeps
                    # its failure (and its reason), and its history says what took its place.
                    event = {"status": live.status, "at": timezone.now().isoformat(), "by": username(user)}
                    live.events = [*live.events, {**event, "reason": note}]
                    live.save(update_fields=["events"])
                else:
                    live.move(replaced, reason=note, by=username(user))
                    live.save()
            dr.move(DeploymentRevision.Status.DEPLOYING, reason=why, by=username(user))
            dr.deployed_at = timezone.now()
            dr.deployed_by_name = username(user)
            dr.controller_revision = after.get("hash") or ""
            dr.controller_revision_number = after.get("becomes") or after.get("number")
            dr.generation = written.get("generation")
            dr.applied = written.get("applied") or {}
            dr.save()
        details.update(fromRevision=written["before"], toRevision=after, patch=written["patch"])
    if dr.target.kind == contract.KIND_MODELSERVING:
        enqueue.reconcile_soon(dr.target.namespace, dr.target.name)
    return control.record


# -- What a release would change (the dialogs) -------------------------------------------------------------


def release_change(namespace: str, name: str, number: int, *, user=None) -> dict[str, Any]:
    """What deploying (or restoring) ``r<number>`` would change on its target now, per layer (model,
    image, config, resources, schema), read from the live templates: nothing is applied.

    ``{"release": {...}, "live": {...} | null, "layers": [{"layer", "changes": [{"role", "field",
    "from", "to"}]}], "changed": ["image", ...]}``. Raises ``NotFound``. For a ``user`` who may not
    operate in the namespace the values of the ``MODEL_*`` variables are masked as in a manifest
    (the credentials of ``MODEL_URI``); None is a trusted caller."""
    dr = records.get_release(namespace, name, number)
    live = records.active_release(dr.target)
    out: dict[str, Any] = {
        "release": records.release_json(dr),
        "live": records.release_summary(live) if live else None,
        "layers": [],
        "changed": [],
    }
    if dr.target.kind != contract.KIND_MODELSERVING:
        out["note"] = "InferenceService targets: the layered comparison arrives with KServe support"
        return out
    ms = get_cluster().get_modelserving(dr.target.namespace, dr.target.name)
    content = release_content(dr)
    if dr.status != DeploymentRevision.Status.PENDING and dr.applied:
        content = content.restoring(dr.applied)  # restoring dr: it comes back as it was deployed
    diff = templates.change_of(ms, content, roles=list(dr.roles), container=dr.container)
    if not masking.reveals(user, dr.target.namespace):
        diff["model"] = [
            {
                **c,
                "from": masking.mask_env_value(c["field"], c["from"]),
                "to": masking.mask_env_value(c["field"], c["to"]),
            }
            for c in diff["model"]
        ]
    out["layers"] = [{"layer": layer, "changes": diff[layer]} for layer in templates.LAYERS]
    out["changed"] = [layer for layer in templates.LAYERS if diff[layer]]
    return out


__all__ = [
    "DEPLOYERS",
    "check_approval",
    "create_and_deploy",
    "deploy",
    "promote_release",
    "promotion_destination",
    "release_change",
    "rollback_release",
]
