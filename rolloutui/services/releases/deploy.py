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
from controller.runtime.kserve import state as runtime_kserve
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


def _write_modelserving(
    dr: DeploymentRevision, cause: str, content: templates.ReleaseContent | None = None
) -> dict[str, Any]:
    """Write ``dr`` (or ``content``, a layer rollback's mix) into its ModelServing. Returns {"before",
    "after", "generation", "patch"} (revisions as ``controls._revision_of`` gives them: number, hash,
    becomes)."""
    cluster = get_cluster()
    content = content if content is not None else release_content(dr)
    namespace, name = dr.target.namespace, dr.target.name
    for attempt in range(MAX_ATTEMPTS):
        try:
            ms = cluster.get_modelserving(namespace, name)
        except NotFound:
            raise ControlError(f"target ModelServing {namespace}/{name} does not exist", field="target") from None
        revisions = cluster.list_revisions(namespace, name)
        before = controls._revision_of(ms, revisions, recorded_only=True)
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


def _write_inferenceservice(
    dr: DeploymentRevision, cause: str, content: templates.ReleaseContent | None = None
) -> dict[str, Any]:
    """Write ``dr`` into its InferenceService component (``templates.component_patch``: image,
    storageUri and the MODEL_* env, resources, the model-version label) with the InferenceService's
    resourceVersion as precondition; KServe then rolls it out. Its "revision" is the
    InferenceService's generation (``{"number": generation}``): KServe's own revisions (ReplicaSets,
    Knative revisions) follow from it."""
    cluster = get_cluster()
    if not runtime_kserve.supported(cluster):
        raise ControlError(f"target {dr.target.ref}: {runtime_kserve.NOT_SUPPORTED}", field="target")
    component = dr.target.component or "predictor"
    if content is None:
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


# Target kind -> writer(dr, change cause[, content]) -> {"before", "after", "generation", "patch"}.
DEPLOYERS: dict[str, Callable[..., dict[str, Any]]] = {
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
    content = target_content(dr)
    if dr.status != DeploymentRevision.Status.PENDING and dr.applied and dr.target.kind == contract.KIND_MODELSERVING:
        content = content.restoring(dr.applied)  # restoring dr: it comes back as it was deployed
    diff = _change_on_target(dr, content)
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
    if live is not None and live.pk == dr.pk:
        # The live release: which of its layers can go back to the previous release's value alone.
        out["layerRollback"] = layer_rollback_options(dr, user=user)
    return out


def target_content(dr: DeploymentRevision) -> templates.ReleaseContent:
    """What ``dr`` writes into its target: a ModelServing's roles, or an InferenceService component."""
    if dr.target.kind == contract.KIND_MODELSERVING:
        return release_content(dr)
    component = dr.target.component or "predictor"
    return templates.content_of(
        dr.model_version.contract_values(), roles=[component], config=dr.config, profile=dr.profile
    )


def _change_on_target(dr: DeploymentRevision, content: templates.ReleaseContent) -> dict[str, list[dict[str, Any]]]:
    """The layered diff writing ``content`` into ``dr``'s target would make now (nothing applied)."""
    cluster = get_cluster()
    if dr.target.kind == contract.KIND_MODELSERVING:
        ms = cluster.get_modelserving(dr.target.namespace, dr.target.name)
        return templates.change_of(ms, content, roles=list(dr.roles), container=dr.container)
    if not runtime_kserve.supported(cluster):
        raise ControlError(f"target {dr.target.ref}: {runtime_kserve.NOT_SUPPORTED}", field="target")
    isvc = cluster.get_object(runtime_kserve.KIND, dr.target.namespace, dr.target.name)
    return templates.component_change_of(
        isvc, content, component=dr.target.component or "predictor", container=dr.container
    )


# -- Rollback by layer (one layer of the live release back to the previous release's value) ---------------


def previous_release(dr: DeploymentRevision) -> DeploymentRevision | None:
    """The release deployed on ``dr``'s target before ``dr`` (the one it replaced), or None."""
    return (
        DeploymentRevision.objects.filter(target=dr.target, deployed_at__isnull=False, number__lt=dr.number)
        .select_related("model_version", "environment", "target")
        .order_by("-deployed_at", "-number")
        .first()
    )


def _layer_content(dr: DeploymentRevision, prev: DeploymentRevision, layer: str) -> templates.ReleaseContent:
    live = target_content(dr)
    old = target_content(prev)
    if dr.target.kind == contract.KIND_MODELSERVING:
        if dr.applied:
            live = live.restoring(dr.applied)
        if prev.applied:
            old = old.restoring(prev.applied)
    return templates.mix_layer(live, old, layer)


def layer_rollback_options(dr: DeploymentRevision, *, user=None) -> dict[str, Any]:
    """For the live release ``dr``: the previous release and, per layer that can roll back alone
    (``templates.ROLLBACK_LAYERS``), what rolling it back would change now. ``{"previous": {...} |
    null, "layers": [{"layer", "changes": [...]}]}``; a layer whose value is the previous release's
    already has no changes."""
    prev = previous_release(dr)
    if prev is None:
        return {"previous": None, "layers": []}
    out = []
    for layer in templates.ROLLBACK_LAYERS:
        diff = _change_on_target(dr, _layer_content(dr, prev, layer))
        changes = [c for name in templates.LAYERS for c in diff[name]]
        if layer == "model" and not masking.reveals(user, dr.target.namespace):
            changes = [
                {
                    **c,
                    "from": masking.mask_env_value(c["field"], c["from"]),
                    "to": masking.mask_env_value(c["field"], c["to"]),
                }
                for c in changes
            ]
        out.append({"layer": layer, "changes": changes})
    return {"previous": records.release_summary(prev), "layers": out}


def rollback_layer(user, namespace: str, name: str, number: int, *, layer: str, reason: str, source: str):
    """Roll ONE layer (``model``, ``image``, ``config`` or ``resources``) of the live release
    ``r<number>`` back to the value of the release deployed before it, keeping the others, as one
    merge patch of the target (a ModelServing's roles or an InferenceService component). Same
    permission (operate in the namespace), reason and approval rule as a rollback to a release (the
    previous release's version must have been approved where the environment requires it). The
    release stays live and records the change in its history; it follows the controller revision
    the patch produced. Returns the ``AuditRecord``."""
    details: dict[str, Any] = {"args": {"layer": layer}}
    with audited(
        user, action="rollback_layer", namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        check_permission(user, controls.PERMISSION, namespace=namespace)
        why = check_reason(reason)
        if layer not in templates.ROLLBACK_LAYERS:
            raise ControlError(f"layer must be one of {', '.join(templates.ROLLBACK_LAYERS)}", field="layer")
        with transaction.atomic():
            dr = records.get_release(namespace, name, number)
            control.namespace, control.name = dr.target.namespace, dr.target.name
            live = records.active_release(dr.target)
            if live is None or live.pk != dr.pk:
                now = f"r{live.number}" if live is not None else "none"
                raise ControlError(
                    f"r{dr.number} is not the live release of {dr.target.ref} (live: {now}): a layer rolls back "
                    "on the live release only",
                    field="number",
                )
            prev = previous_release(dr)
            if prev is None:
                raise ControlError(
                    f"r{dr.number} is the first release on {dr.target.ref}: there is no earlier {layer} to go back to",
                    field="number",
                )
            check_approval(prev.environment, prev.model_version, restoring=True)
            content = _layer_content(dr, prev, layer)
            diff = _change_on_target(dr, content)
            changes = [c for name_ in templates.LAYERS for c in diff[name_]]
            if not changes:
                raise ControlError(
                    f"the {layer} of r{dr.number} is already r{prev.number}'s: nothing to roll back", field="layer"
                )
            who = username(user)
            cause = (
                f"roll back the {layer} of r{dr.number} to r{prev.number}'s in {dr.environment.name} by {who}: {why}"
            )
            written = DEPLOYERS[dr.target.kind](dr, cause, content)
            after = written["after"]
            control.from_revision = controls._label(written["before"])
            control.to_revision = controls._label(after)
            details["release"] = {"number": dr.number, "version": dr.model_version.key, "env": dr.environment.name}
            details["previous"] = {"number": prev.number, "version": prev.model_version.key}
            details["changes"] = [
                {
                    **c,
                    "from": masking.mask_env_value(c["field"], c["from"]),
                    "to": masking.mask_env_value(c["field"], c["to"]),
                }
                for c in changes
            ]
            event = {
                "status": dr.status,
                "at": timezone.now().isoformat(),
                "by": who,
                "reason": f"{layer} rolled back to r{prev.number}'s: {why}",
                "layerRollback": {"layer": layer, "to": prev.number},
            }
            dr.events = [*dr.events, event]
            dr.controller_revision = after.get("hash") or ""
            dr.controller_revision_number = after.get("becomes") or after.get("number")
            dr.generation = written.get("generation")
            dr.applied = written.get("applied") or {}
            dr.save()
        details.update(fromRevision=written["before"], toRevision=after, patch=written["patch"])
    if dr.target.kind == contract.KIND_MODELSERVING:
        enqueue.reconcile_soon(dr.target.namespace, dr.target.name)
    return control.record


__all__ = [
    "DEPLOYERS",
    "check_approval",
    "create_and_deploy",
    "deploy",
    "promote_release",
    "promotion_destination",
    "layer_rollback_options",
    "previous_release",
    "release_change",
    "rollback_layer",
    "rollback_release",
]
