"""Release records: register, list and read ModelVersions, Environments and DeploymentRevisions;
approve and deprecate versions.

Place in the flow: the REST API (``rolloutui.api.releases``), the CLI (``manage.py release``), the
Releases page and the admin call these; every write checks the permission, validates with
``rolloutui.releases.contract`` (a ``ControlError`` naming the field) and leaves an ``AuditRecord``
(also when refused). Reads return JSON-ready dicts (the API passes them through, the pages embed
them with ``json_script``).

Audit records of release actions name the ModelServing a release targets (``namespace``/``name``),
so they appear in that ModelServing's audit panel; records about a model version alone (register,
approve, deprecate) have an empty namespace and the name ``<model>:<version>``.

Who sees what (``within``, from ``visible_namespaces``: the namespaces a user may view, None for
every one), the same rule as ModelServings (``services.access``): a release and a target belong to
the target's namespace; an environment is listed when it has a target the user may view, with
those targets only. Model versions are not namespaced (the registry is shared): anyone who may
view somewhere lists them, but a version's releases are those of the namespaces the user may view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max, Prefetch, Q, QuerySet
from django.utils import timezone

from controller.core.controls import ControlError
from controller.core.ports import NotFound
from rolloutui.releases import contract
from rolloutui.releases.models import DeploymentRevision, Environment, ModelVersion, Target
from rolloutui.releases.permissions import APPROVE_PERMISSION

from .. import access, audit, controls, masking
from ..controls import audited, check_permission, check_reason, check_source, username

OPERATE = controls.PERMISSION
APPROVE = APPROVE_PERMISSION
VIEW = "rolloutui.view_modelserving"


def target_namespaces() -> set[str]:
    return set(Target.objects.values_list("namespace", flat=True))


def visible_namespaces(user) -> set[str] | None:
    """Where ``user`` may see release records: None for every namespace, else the set."""
    return access.namespaces(user, VIEW, target_namespaces)


# -- JSON shapes ------------------------------------------------------------------------------------------


def _when(value) -> str | None:
    return value.isoformat() if value else None


def model_version_json(
    mv: ModelVersion, *, with_deployments: bool = False, within: set[str] | None = None, reveal: bool = True
) -> dict[str, Any]:
    """``within``: the namespaces whose releases are listed under ``deployments`` (None: all);
    ``reveal``: the artifact URI whole (else credentials in it are masked: ``shown_to``)."""
    values = mv.contract_values()
    if not reveal:
        values["artifactUri"] = masking.mask_uri(values["artifactUri"])
    out = {
        "key": mv.key,
        **values,
        "status": mv.status,
        "approval": (
            {"by": mv.approved_by_name, "at": _when(mv.approved_at), "reason": mv.approval_reason}
            if mv.approved_at
            else None
        ),
        "deprecation": (
            {"by": mv.deprecated_by_name, "at": _when(mv.deprecated_at), "reason": mv.deprecation_reason}
            if mv.deprecated_at
            else None
        ),
        "createdAt": _when(mv.created_at),
        "createdBy": mv.created_by_name,
    }
    if with_deployments:
        rows = mv.deployments.select_related("target", "environment").order_by("-created_at", "-id")
        if within is not None:
            rows = rows.filter(target__namespace__in=within)
        out["deployments"] = [release_summary(dr) for dr in rows]
    return out


def shown_to(user, mv: ModelVersion, *, with_deployments: bool = False) -> dict[str, Any]:
    """``mv`` as ``user`` may see it: its releases in the namespaces they may view, and the
    credentials of its artifact URI masked unless they may operate (in every namespace: the
    registry is shared, and an operator of every namespace deploys any version)."""
    within = visible_namespaces(user) if with_deployments else None
    return model_version_json(mv, with_deployments=with_deployments, within=within, reveal=masking.reveals(user, None))


def target_json(t: Target) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": t.kind, "namespace": t.namespace, "name": t.name}
    if t.kind == Target.Kind.MODELSERVING:
        out.update(roles=list(t.roles), container=t.container)
    else:
        out["component"] = t.component
    return out


def environment_json(env: Environment) -> dict[str, Any]:
    targets = []
    for t in env.targets.all():
        active = active_release(t)
        targets.append({**target_json(t), "active": release_summary(active) if active else None})
    return {
        "name": env.name,
        "description": env.description,
        "requiresApproval": env.requires_approval,
        "resourceProfiles": env.resource_profiles,
        "rank": env.rank,
        "targets": targets,
    }


def release_summary(dr: DeploymentRevision) -> dict[str, Any]:
    """The few fields a list row or a link needs."""
    return {
        "number": dr.number,
        "label": dr.label,
        "environment": dr.environment.name,
        "namespace": dr.target.namespace,
        "name": dr.target.name,
        "model": dr.model_version.model,
        "version": dr.model_version.version,
        "status": dr.status,
        "statusReason": dr.status_reason,
        "controllerRevision": dr.controller_revision or None,
    }


def release_json(dr: DeploymentRevision) -> dict[str, Any]:
    mv = dr.model_version
    return {
        "number": dr.number,
        "label": dr.label,
        "environment": dr.environment.name,
        "modelVersion": {"key": mv.key, "model": mv.model, "version": mv.version, "status": mv.status},
        "target": target_json(dr.target),
        "roles": list(dr.roles),
        "container": dr.container,
        "resourceProfile": dr.resource_profile,
        "profile": dr.profile,
        "config": dr.config,
        "status": dr.status,
        "statusReason": dr.status_reason,
        "statusChangedAt": _when(dr.status_changed_at),
        "reason": dr.reason,
        "createdAt": _when(dr.created_at),
        "createdBy": dr.created_by_name,
        "deployedAt": _when(dr.deployed_at),
        "deployedBy": dr.deployed_by_name,
        "controllerRevision": (
            {"hash": dr.controller_revision, "number": dr.controller_revision_number}
            if dr.controller_revision
            else None
        ),
        "restores": dr.restores.number if dr.restores_id else None,
        "promotedFrom": (
            {
                "environment": dr.promoted_from.environment.name,
                "namespace": dr.promoted_from.target.namespace,
                "name": dr.promoted_from.target.name,
                "number": dr.promoted_from.number,
            }
            if dr.promoted_from_id
            else None
        ),
        "events": list(dr.events),
    }


# -- Reading ----------------------------------------------------------------------------------------------


def _releases() -> QuerySet[DeploymentRevision]:
    return DeploymentRevision.objects.select_related("environment", "model_version", "target", "restores")


def model_versions(*, model: str | None = None, status: str | None = None, q: str | None = None):
    rows = ModelVersion.objects.all()
    if model:
        rows = rows.filter(model=model)
    if status:
        rows = rows.filter(status=status)
    if q:
        rows = rows.filter(Q(model__icontains=q) | Q(version__icontains=q) | Q(evaluation_id__icontains=q))
    return rows


def get_model_version(model: str, version: str) -> ModelVersion:
    try:
        return ModelVersion.objects.get(model=model, version=version)
    except ModelVersion.DoesNotExist:
        raise NotFound(f"model version {model}:{version} does not exist") from None


def parse_version_key(value: Any, field: str = "modelVersion") -> tuple[str, str]:
    """``"demo-llm:v2"`` or ``{"model": "demo-llm", "version": "v2"}`` -> (model, version)."""
    if isinstance(value, Mapping):
        return contract.model_name(value.get("model"), f"{field}.model"), contract.version_name(
            value.get("version"), f"{field}.version"
        )
    raw = contract.text(value, field)
    model, sep, version = raw.partition(":")
    if not sep:
        raise ControlError(f"{field} must be MODEL:VERSION (e.g. demo-llm:v2), got {raw!r}", field=field)
    return contract.model_name(model, field), contract.version_name(version, field)


def environments(within: set[str] | None = None) -> QuerySet[Environment]:
    """Environments with their targets; ``within`` (a set of namespaces): only environments with a
    target there, each with those targets only."""
    if within is None:
        return Environment.objects.prefetch_related("targets")
    return (
        Environment.objects.filter(targets__namespace__in=within)
        .distinct()
        .prefetch_related(Prefetch("targets", queryset=Target.objects.filter(namespace__in=within)))
    )


def get_environment(name: str, field: str = "environment", *, within: set[str] | None = None) -> Environment:
    """The environment called ``name``; ``within``: among those a user with these namespaces sees
    (``environments``), so one they may not see does not exist for them, nor is it listed."""
    rows = environments(within)
    try:
        return rows.get(name=name)
    except Environment.DoesNotExist:
        known = ", ".join(rows.values_list("name", flat=True)) or "none"
        raise ControlError(f"environment {name!r} does not exist (environments: {known})", field=field) from None


def releases(
    *,
    environment: str | None = None,
    model: str | None = None,
    version: str | None = None,
    namespace: str | None = None,
    name: str | None = None,
    status: str | None = None,
    within: set[str] | None = None,
) -> QuerySet[DeploymentRevision]:
    """Releases matching every given filter; ``within``: only those whose target is in one of these
    namespaces (None: all)."""
    rows = _releases()
    if within is not None:
        rows = rows.filter(target__namespace__in=within)
    filters = {
        "environment__name": environment,
        "model_version__model": model,
        "model_version__version": version,
        "target__namespace": namespace,
        "target__name": name,
        "status": status,
    }
    return rows.filter(**{k: v for k, v in filters.items() if v})


def get_release(namespace: str, name: str, number: int) -> DeploymentRevision:
    rows = _releases().filter(target__namespace=namespace, target__name=name, number=number)
    # A ModelServing and an InferenceService may share a name: the ModelServing's release first.
    dr = rows.order_by("target__kind").first()
    if dr is None:
        raise NotFound(f"release r{number} of {namespace}/{name} does not exist")
    return dr


def active_release(target: Target) -> DeploymentRevision | None:
    """The release that is (or was last) live on ``target``: the one deployed last, while it is
    Deploying, Serving or Failed. None once a change no release wrote superseded it: an older
    release (a Failed one keeps its status when replaced) is not live again for that."""
    last = _releases().filter(target=target, deployed_at__isnull=False).order_by("-deployed_at", "-number").first()
    return last if last is not None and last.status in DeploymentRevision.ACTIVE else None


def target_of(namespace: str, name: str, kind: str = contract.KIND_MODELSERVING) -> Target | None:
    return Target.objects.select_related("environment").filter(kind=kind, namespace=namespace, name=name).first()


def releases_of_modelserving(namespace: str, name: str) -> dict[str, Any]:
    """What the ModelServing page shows of releases: its environment, the active release, and every
    controller revision hash a release produced -> ``{"label": "r31 · v12", ...}`` (the Revisions
    panel shows the label beside the hash)."""
    t = target_of(namespace, name)
    if t is None:
        return {"environment": None, "active": None, "byRevision": {}, "history": []}
    rows = list(_releases().filter(target=t).order_by("-number")[:50])
    by_revision: dict[str, Any] = {}
    for dr in rows:  # newest first: a hash several releases produced shows the newest of them
        if dr.controller_revision and dr.controller_revision not in by_revision:
            by_revision[dr.controller_revision] = release_summary(dr)
    active = active_release(t)
    shown = release_json(active) if active else None
    if shown and shown["controllerRevision"]:
        # The number the revision has now beside the one it got (a rollback may have re-numbered it).
        now = audit.numbers_now(namespace, name)
        shown["controllerRevision"]["now"] = now.get(shown["controllerRevision"]["hash"])
    return {
        "environment": t.environment.name,
        "requiresApproval": t.environment.requires_approval,
        "active": shown,
        "byRevision": by_revision,
        "history": [release_summary(dr) for dr in rows],
    }


# -- Writing ----------------------------------------------------------------------------------------------


def _audited(user, action: str, *, source: str, reason: Any, namespace: str, name: str, details: dict, work):
    """Run ``work()`` (returns ``(result, extra details)``) and audit it, success or refusal."""
    with audited(
        user, action=action, namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        result, extra = work()
        details.update(extra)
    return result, control.record


def register_model_version(user, values: Mapping[str, Any], *, reason: str = "", source: str):
    """Register a ModelVersion (status Registered). Returns ``(ModelVersion, AuditRecord)``.

    Needs ``rolloutui.operate_modelserving``. A model and version that exist already are refused on
    field ``version`` (versions are immutable: a change is a new version)."""
    key = f"{values.get('model')}:{values.get('version')}" if isinstance(values, Mapping) else ""

    def work():
        check_permission(user, OPERATE)
        clean = contract.model_version(values)
        attrs = {attr: clean[api] for api, (_, attr) in contract.MODEL_VERSION_FIELDS.items()}
        try:
            with transaction.atomic():
                mv = ModelVersion.objects.create(
                    **attrs,
                    created_by=user if getattr(user, "pk", None) else None,
                    created_by_name=username(user),
                )
        except IntegrityError:
            raise ControlError(
                f"version: {clean['model']}:{clean['version']} already exists; a model version is immutable, "
                "register a new version to change it",
                field="version",
            ) from None
        return mv, {"modelVersion": mv.key}

    mv, record = _audited(
        user,
        "register_version",
        source=source,
        reason=reason,
        namespace="",
        name=key[:253],
        details={"values": dict(values) if isinstance(values, Mapping) else None},
        work=work,
    )
    return mv, record


def create_environment(user, values: Mapping[str, Any], *, reason: str = "", source: str):
    """Create an Environment with its targets. Returns ``(Environment, AuditRecord)``.

    ``values``: ``name``, ``description``, ``requiresApproval``, ``resourceProfiles``, ``rank``,
    ``targets`` (``contract.target`` each). A target that already belongs to an environment is
    refused (one ModelServing, one environment)."""
    name = values.get("name") if isinstance(values, Mapping) else None

    def work():
        check_permission(user, OPERATE)
        if not isinstance(values, Mapping):
            raise ControlError("an Environment is an object of fields", field="detail")
        allowed = ("name", "description", "requiresApproval", "resourceProfiles", "rank", "targets")
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise ControlError(f"{unknown[0]} is not an Environment field ({', '.join(allowed)})", field=unknown[0])
        env_name = contract.named(values.get("name"), "name", contract.ENVIRONMENT_NAME, "a DNS label such as staging")
        approval = values.get("requiresApproval", False)
        if not isinstance(approval, bool):
            raise ControlError("requiresApproval must be true or false", field="requiresApproval")
        rank = values.get("rank", 0)
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise ControlError("rank must be a non-negative integer", field="rank")
        profiles = contract.resource_profiles(values.get("resourceProfiles"))
        raw_targets = values.get("targets") or []
        if not isinstance(raw_targets, list):
            raise ControlError("targets must be a list", field="targets")
        targets = [contract.target(t, f"targets[{i}]") for i, t in enumerate(raw_targets)]
        try:
            with transaction.atomic():
                env = Environment.objects.create(
                    name=env_name,
                    description=contract.text(values.get("description"), "description", required=False, max_length=500),
                    requires_approval=approval,
                    resource_profiles=profiles,
                    rank=rank,
                )
                for i, t in enumerate(targets):
                    if Target.objects.filter(kind=t["kind"], namespace=t["namespace"], name=t["name"]).exists():
                        raise ControlError(
                            f"targets[{i}]: {t['kind']} {t['namespace']}/{t['name']} already belongs to an environment",
                            field=f"targets[{i}]",
                        )
                    Target.objects.create(environment=env, **t)
        except IntegrityError:
            raise ControlError(f"name: environment {env_name!r} already exists", field="name") from None
        return env, {}

    env, record = _audited(
        user,
        "create_environment",
        source=source,
        reason=reason,
        namespace="",
        name=str(name or "")[:253],
        details={"values": dict(values) if isinstance(values, Mapping) else None},
        work=work,
    )
    return env, record


def target_in(env: Environment, value: Any) -> Target:
    targets = list(env.targets.all())
    if value in (None, ""):
        if len(targets) == 1:
            return targets[0]
        listed = ", ".join(t.ref for t in targets) or "none"
        raise ControlError(
            f"target is required: environment {env.name} has {len(targets)} targets ({listed})", field="target"
        )
    raw = value if isinstance(value, str) else ""
    if isinstance(value, Mapping):
        raw = f"{value.get('namespace')}/{value.get('name')}"
    for t in targets:
        if t.ref == raw.strip():
            return t
    listed = ", ".join(t.ref for t in targets) or "none"
    raise ControlError(f"target {raw!r} is not a target of environment {env.name} (targets: {listed})", field="target")


def plan_release(
    user,
    *,
    environment: Environment,
    model_version: ModelVersion,
    target: Target,
    resource_profile: str = "",
    config: Mapping[str, Any] | None = None,
    reason: str,
    restores: DeploymentRevision | None = None,
    promoted_from: DeploymentRevision | None = None,
) -> DeploymentRevision:
    """A new Pending DeploymentRevision, numbered after the target's last one (no permission check
    or audit: the callers do both). The caller runs it inside a transaction.

    A rollback (``restores``) copies the restored release's roles, container, resource profile (as
    it was then) and config, so every layer comes back together even if the environment's profile
    or the target's roles were edited since."""
    profile: dict[str, Any] = {}
    roles, container = list(target.roles), target.container
    if restores is not None:
        roles, container = list(restores.roles), restores.container
        resource_profile, profile, config = restores.resource_profile, dict(restores.profile), restores.config
    elif resource_profile:
        if resource_profile not in (environment.resource_profiles or {}):
            known = ", ".join(sorted(environment.resource_profiles or {})) or "none"
            raise ControlError(
                f"resourceProfile {resource_profile!r} is not a profile of {environment.name} (profiles: {known})",
                field="resourceProfile",
            )
        profile = dict(environment.resource_profiles[resource_profile])
    _check_profile_fits(model_version, profile, roles)
    # Lock the target's row so two plans cannot take the same number.
    Target.objects.select_for_update().filter(pk=target.pk).first()
    last = DeploymentRevision.objects.filter(target=target).aggregate(n=Max("number"))["n"] or 0
    return DeploymentRevision.objects.create(
        environment=environment,
        model_version=model_version,
        target=target,
        number=last + 1,
        roles=roles,
        container=container,
        resource_profile=resource_profile,
        profile=profile,
        config=contract.config_overrides(config),
        reason=reason,
        created_by=user if getattr(user, "pk", None) else None,
        created_by_name=username(user),
        restores=restores,
        promoted_from=promoted_from,
        events=[{"status": "Pending", "at": timezone.now().isoformat(), "by": username(user), "reason": reason}],
    )


def _check_profile_fits(mv: ModelVersion, profile: Mapping[str, Any], roles: list[str]) -> None:
    """A profile that gives a role fewer GPUs than the version needs is refused before anything runs.
    Example: v12 needs 2 GPUs, profile gpu-small gives 1 -> refused on field resourceProfile."""
    needed = (mv.resources or {}).get("gpus")
    if needed is None:
        return
    for role in roles:
        per_role = ((profile.get("roles") or {}).get(role) or {}).get("resources") or {}
        given = per_role.get("gpus", (profile.get("resources") or {}).get("gpus"))
        if given is not None and given < needed:
            raise ControlError(
                f"resourceProfile gives role {role} {given} GPU(s) but {mv.key} needs {needed}",
                field="resourceProfile",
            )


RELEASE_FIELDS = ("environment", "modelVersion", "target", "resourceProfile", "config", "reason")


def plan_from_values(user, values: Mapping[str, Any], *, located=None) -> DeploymentRevision:
    """Check ``values`` (``create_release``'s) and plan the release they describe: a Pending
    DeploymentRevision, in the caller's transaction (no audit: the callers audit). ``located(target)``
    is called once the target is known, so a refusal after that names its ModelServing."""
    # Operate somewhere first (a viewer learns nothing more), then where the release goes:
    # environments and targets the user may not view do not exist for them.
    if not access.anywhere(user, OPERATE):
        check_permission(user, OPERATE)
    unknown = sorted(set(values) - set(RELEASE_FIELDS))
    if unknown:
        raise ControlError(f"{unknown[0]} is not a field of a release ({', '.join(RELEASE_FIELDS)})", field=unknown[0])
    why = check_reason(values.get("reason"))
    within = visible_namespaces(user)
    env = get_environment(contract.text(values.get("environment"), "environment"), within=within)
    target = target_in(env, values.get("target"))
    if located is not None:
        located(target)
    check_permission(user, OPERATE, namespace=target.namespace)
    model, version = parse_version_key(values.get("modelVersion"))
    try:
        mv = get_model_version(model, version)
    except NotFound as exc:
        raise ControlError(str(exc), field="modelVersion") from None
    if mv.status == ModelVersion.Status.DEPRECATED:
        raise ControlError(f"modelVersion {mv.key} is deprecated; choose another version", field="modelVersion")
    profile = contract.text(values.get("resourceProfile"), "resourceProfile", required=False, max_length=63)
    return plan_release(
        user,
        environment=env,
        model_version=mv,
        target=target,
        resource_profile=profile,
        config=values.get("config"),
        reason=why,
    )


def create_release(user, values: Mapping[str, Any], *, source: str):
    """Plan a DeploymentRevision (status Pending; ``deploy`` starts it). Returns ``(DeploymentRevision,
    AuditRecord)``.

    ``values``: ``environment`` (name), ``modelVersion`` (``model:version``), ``target``
    (``namespace/name``; optional when the environment has one), ``resourceProfile`` (a profile of
    the environment), ``config`` (batching/timeout overrides), ``reason`` (required). A deprecated
    version is refused; an unapproved one may be planned anywhere, but ``deploy`` refuses it where
    the environment requires approval. To plan and deploy at once, without leaving a Pending
    release behind when the deploy is refused: ``deploy.create_and_deploy``.
    """
    values = values if isinstance(values, Mapping) else {}
    details = {"values": dict(values)}
    with audited(
        user,
        action="create_release",
        namespace="",
        name="",
        reason=values.get("reason"),
        source=source,
        details=details,
    ) as control:
        check_source(source)

        def located(target: Target) -> None:
            control.namespace, control.name = target.namespace, target.name

        with transaction.atomic():
            dr = plan_from_values(user, values, located=located)
        details["release"] = release_summary(dr)
    return dr, control.record


# -- Approval (actions of the registry: target a ModelVersion) ---------------------------------------------


def approve(user, model: str, version: str, *, reason: str, source: str):
    """Registered -> Approved, with who, when and why. Needs ``releases.approve_modelversion``; four
    eyes: not by whoever registered it or planned a release of it where approval is required
    (``FourEyes``, audited with the reason)."""
    return _approval(user, model, version, reason=reason, source=source, to=ModelVersion.Status.APPROVED)


def deprecate(user, model: str, version: str, *, reason: str, source: str):
    """Registered or Approved -> Deprecated: no new release may use it (a rollback to a release of it
    still may). Needs ``releases.approve_modelversion``."""
    return _approval(user, model, version, reason=reason, source=source, to=ModelVersion.Status.DEPRECATED)


class FourEyes(controls.ControlDenied):
    """Whoever registered a model version, or planned a release of it to an environment that
    requires approval (that release is the request for approval), may not approve it."""

    refusal = "four-eyes"


def _check_four_eyes(user, mv: ModelVersion) -> None:
    """``FourEyes`` when ``user`` registered ``mv`` or planned a release of it where approval is
    required (a release planned to staging asks for no approval and does not count)."""
    who = username(user)
    uid = getattr(user, "pk", None)
    if (uid is not None and mv.created_by_id == uid) or (mv.created_by_id is None and mv.created_by_name == who):
        raise FourEyes(f"{who} registered {mv.key}: someone else must approve it (four eyes)")
    requests = DeploymentRevision.objects.filter(model_version=mv, environment__requires_approval=True)
    requested = requests.filter(Q(created_by_id=uid) if uid is not None else Q(created_by_name=who))
    dr = requested.select_related("environment").order_by("number").first()
    if dr is not None:
        raise FourEyes(
            f"{who} planned release r{dr.number} of {mv.key} to {dr.environment.name}: "
            "someone else must approve it (four eyes)"
        )


def _approval(user, model: str, version: str, *, reason: Any, source: str, to: str):
    action = "approve" if to == ModelVersion.Status.APPROVED else "deprecate"
    details: dict[str, Any] = {"modelVersion": f"{model}:{version}"}

    def work():
        check_permission(user, APPROVE)
        why = check_reason(reason)
        with transaction.atomic():
            try:
                mv = ModelVersion.objects.select_for_update().get(model=model, version=version)
            except ModelVersion.DoesNotExist:
                raise NotFound(f"model version {model}:{version} does not exist") from None
            before = mv.status
            if to == ModelVersion.Status.APPROVED:
                _check_four_eyes(user, mv)
            allowed = {
                ModelVersion.Status.APPROVED: {ModelVersion.Status.REGISTERED},
                ModelVersion.Status.DEPRECATED: {ModelVersion.Status.REGISTERED, ModelVersion.Status.APPROVED},
            }[to]
            if before not in allowed:
                raise ControlError(f"{mv.key} is {before}; it cannot become {to}", field="status")
            now = timezone.now()
            if to == ModelVersion.Status.APPROVED:
                mv.approved_by = user if getattr(user, "pk", None) else None
                mv.approved_by_name = username(user)
                mv.approved_at = now
                mv.approval_reason = why
            else:
                mv.deprecated_by_name = username(user)
                mv.deprecated_at = now
                mv.deprecation_reason = why
            mv.status = to
            mv.save()
        return mv, {"from": before, "to": to}

    _, record = _audited(
        user, action, source=source, reason=reason, namespace="", name=f"{model}:{version}", details=details, work=work
    )
    return record


__all__ = [
    "FourEyes",
    "VIEW",
    "active_release",
    "approve",
    "create_environment",
    "create_release",
    "deprecate",
    "environment_json",
    "environments",
    "get_environment",
    "get_model_version",
    "get_release",
    "model_version_json",
    "model_versions",
    "parse_version_key",
    "plan_from_values",
    "plan_release",
    "register_model_version",
    "release_json",
    "release_summary",
    "releases",
    "releases_of_modelserving",
    "shown_to",
    "target_in",
    "target_namespaces",
    "target_of",
    "visible_namespaces",
]
