"""Operator controls: pause, resume, promote, rollback, abort, set_image, scale, autoscale. The only
implementation of them.

Each is declared once in the action registry (``rolloutui.services.actions``), from which the API
routes, the ``manage.py rollout`` subcommands and the page's controls are generated; they reach these
functions through ``actions.perform``. Every control, whoever calls it (page, API, CLI):

1. checks the permission ``rolloutui.operate_modelserving`` in the ModelServing's namespace
   (``services.access``; ``ControlDenied`` otherwise) and that a reason is given (``ControlError``
   on field ``reason``);
2. builds the JSON merge patch with the pure core control (``controller.core.controls``), adds the
   ``serving.rolloutui.io/change-cause`` annotation (who, how, why: the new revision carries it),
   and applies it through the active cluster port with the ModelServing's resourceVersion as a
   precondition; on ``Conflict`` (someone else wrote in between) it re-reads and rebuilds the patch
   from the fresh object, so it never overwrites a change it did not see;
3. writes an ``AuditRecord`` (who, when, source, action, reason, from-revision, to-revision, result,
   and from ``services.origin``: client address, authentication method, OS user of the CLI) - also
   when it fails, with result ``error`` and the error text: a refusal, bad input, or an error of
   the cluster (``ClusterError``: the API server refused the patch, 403/422, or was unreachable);
4. enqueues a reconcile of the ModelServing.

Revisions in the audit are revision numbers (the hash before a revision is stored); ``details``
holds both numbers and hashes. "to" is the revision the spec selects after the change: the same as
"from" for pause/resume/promote, the new revision for set_image, and the chosen revision for
rollback (``details.toRevision.becomes`` is the number it is re-listed under, as Kubernetes
re-numbers a re-applied revision).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from controller.core import controls as core
from controller.core import naming, scaling
from controller.core.controls import ControlError
from controller.core.ports import ClusterError, Conflict
from controller.core.revisions import History, record_update_revision
from controller.core.spec import headline
from controller.runtime import enqueue

from ..models import AuditRecord
from . import access, kv_advice, origin
from .cluster import get_cluster

log = logging.getLogger(__name__)

PERMISSION = "rolloutui.operate_modelserving"
MAX_ATTEMPTS = 5
SOURCES = {choice.value for choice in AuditRecord.Source}
# Sources that act without a signed-in user (audited with authentication method "system").
_SYSTEM_SOURCES = (AuditRecord.Source.SYSTEM, AuditRecord.Source.AUTOSCALER)


class ControlDenied(PermissionError):
    """The user lacks the permission (``rolloutui.operate_modelserving`` for the controls) where it acts."""


def pause(user, namespace: str, name: str, *, reason: str, source: str) -> AuditRecord:
    return _control(user, namespace, name, "pause", reason, source, lambda ms, revs: core.pause(ms), {})


def resume(user, namespace: str, name: str, *, reason: str, source: str) -> AuditRecord:
    return _control(user, namespace, name, "resume", reason, source, lambda ms, revs: core.resume(ms), {})


def promote(
    user, namespace: str, name: str, *, partition: int | None = None, full: bool = False, reason: str, source: str
) -> AuditRecord:
    return _control(
        user,
        namespace,
        name,
        "promote",
        reason,
        source,
        lambda ms, revs: core.promote(ms, partition=partition, full=full),
        {"partition": partition, "full": bool(full)},
    )


def rollback(user, namespace: str, name: str, *, to_revision: int, reason: str, source: str) -> AuditRecord:
    return _control(
        user,
        namespace,
        name,
        "rollback",
        reason,
        source,
        lambda ms, revs: core.rollback(ms, revs, to_revision=to_revision),
        {"toRevision": to_revision},
        rollback_to=to_revision,
    )


def abort(user, namespace: str, name: str, *, reason: str, source: str) -> AuditRecord:
    """Back to the stable revision of the rollout in progress, steps stopped, left paused
    (``core.abort``). Audited as ``abort``; "to" is the stable revision."""
    return _control(
        user, namespace, name, "abort", reason, source, lambda ms, revs: core.abort(ms, revs), {}, restoring=True
    )


def set_image(
    user, namespace: str, name: str, *, role: str, image: str, container: str | None = None, reason: str, source: str
) -> AuditRecord:
    return _control(
        user,
        namespace,
        name,
        "set_image",
        reason,
        source,
        lambda ms, revs: core.set_image(ms, role=role, image=image, container=container),
        {"role": role, "image": image, "container": container},
    )


def scale(
    user,
    namespace: str,
    name: str,
    *,
    replicas: int,
    allow_zero: bool = False,
    reason: str,
    source: str,
    figures: dict[str, Any] | None = None,
) -> AuditRecord:
    """Set spec.replicas (the number of ServingGroups). The planner creates the missing groups and
    drains, then deletes, the groups beyond the count (like any delete). ``replicas`` 0 needs
    ``allow_zero`` (scale to zero is never a default). The audit's ``details.replicas`` is
    ``{"from", "to"}``.

    The autoscaler (``services.autoscale``) calls this with ``user=None`` and source
    ``autoscaler``: no user permission is checked then (an operator turned autoscale on, with the
    operate permission), but the ModelServing must have autoscale on and ``replicas`` must be
    within its bounds, read from the same object the patch applies to; ``figures`` (the
    recommendation and the decision's inputs) go to ``details.figures``."""
    args: dict[str, Any] = {"replicas": replicas, "allowZero": bool(allow_zero)}
    moved: dict[str, Any] = {"from": None, "to": replicas}

    def build(ms, revs):
        moved["from"] = headline(ms).replicas
        if source == AuditRecord.Source.AUTOSCALER:
            bounds = scaling.autoscale_of(ms)
            if bounds is None:
                raise ControlError(
                    "autoscale is off for this ModelServing: the autoscaler does not scale it", field="autoscale"
                )
            if not bounds.min_replicas <= replicas <= bounds.max_replicas:
                raise ControlError(
                    f"replicas {replicas} is outside the autoscale bounds {bounds.min_replicas}..{bounds.max_replicas}",
                    field="replicas",
                )
        return scaling.scale(ms, replicas=replicas, allow_zero=allow_zero)

    extra = {"replicas": moved} | ({"figures": figures} if figures is not None else {})
    return _control(user, namespace, name, "scale", reason, source, build, args, extra=extra)


def autoscale(
    user,
    namespace: str,
    name: str,
    *,
    min_replicas: int | None = None,
    max_replicas: int | None = None,
    disable: bool = False,
    reason: str,
    source: str,
) -> AuditRecord:
    """Turn autoscale on (bounds ``min_replicas``, default 1, to ``max_replicas``) or off
    (``disable``). Stored on the ModelServing (annotation ``serving.rolloutui.io/autoscale``); the
    autoscaler task then applies the capacity recommendation within the bounds. ``details.autoscale``
    is ``{"from", "to"}`` (each ``{"minReplicas", "maxReplicas"}`` or None for off)."""
    args: dict[str, Any] = {"minReplicas": min_replicas, "maxReplicas": max_replicas, "disable": bool(disable)}
    moved: dict[str, Any] = {"from": None, "to": None}

    def build(ms, revs):
        try:
            now = scaling.autoscale_of(ms)
        except ControlError:
            now = None
        moved["from"] = now.to_json() if now is not None else None
        if disable:
            if min_replicas is not None or max_replicas is not None:
                field = "minReplicas" if min_replicas is not None else "maxReplicas"
                raise ControlError(
                    "give either disable or the bounds (minReplicas, maxReplicas), not both", field=field
                )
            return scaling.disable_autoscale(ms)
        patch = scaling.enable_autoscale(ms, min_replicas=min_replicas, max_replicas=max_replicas)
        moved["to"] = scaling.check_bounds(min_replicas, max_replicas).to_json()
        return patch

    return _control(user, namespace, name, "autoscale", reason, source, build, args, extra={"autoscale": moved})


# -- shared machinery ----------------------------------------------------------------------------------


def username(user) -> str:
    if user is None:
        return ""
    return user.get_username() if hasattr(user, "get_username") else str(user)


def check_permission(user, permission: str = PERMISSION, *, namespace: str | None = None) -> None:
    """``ControlDenied`` unless ``user`` is signed in, active and holds ``permission`` in ``namespace``
    (``services.access.allowed``). ``namespace=None`` is a cluster-wide action: the permission is
    needed in every namespace."""
    if user is None or not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", True):
        raise ControlDenied(f"sign in as a user with the permission {permission}")
    if not access.allowed(user, permission, namespace):
        where = f"in namespace {namespace!r}" if namespace is not None else "in every namespace"
        if permission == PERMISSION:
            raise ControlDenied(f"user {username(user)!r} may not operate ModelServings {where} (needs {PERMISSION})")
        raise ControlDenied(f"user {username(user)!r} lacks the permission {permission} {where}")


def check_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise ControlError("a reason is required: say why (it is kept in the audit trail)", field="reason")
    return reason.strip()


def check_source(source: Any) -> str:
    if source not in SOURCES:
        raise ControlError(f"source must be one of {', '.join(sorted(SOURCES))}, got {source!r}", field="source")
    return source


def storable(value: Any) -> Any:
    """The value with every string made storable in any database column, JSON included.

    A refused request is audited with what was sent, and what was sent can be anything: PostgreSQL
    refuses a NUL character in text and in jsonb, and a lone surrogate in jsonb. Both are kept
    visible as escapes instead: a NUL between "a" and "b" is stored as the five characters a\\x00b.
    """
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "\\x00")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def audit(
    user,
    *,
    action: str,
    namespace: str,
    name: str,
    reason: Any,
    source: str,
    from_revision: str = "",
    to_revision: str = "",
    details: dict[str, Any] | None = None,
    error: BaseException | None = None,
) -> AuditRecord:
    came_from = origin.current()
    return AuditRecord.objects.create(
        client_ip=came_from.client_ip,
        auth_method=came_from.auth_method or ("system" if source in _SYSTEM_SOURCES else ""),
        os_user=storable(came_from.os_user[:150]),
        actor=user if getattr(user, "pk", None) else None,
        actor_name=storable(username(user)[:150] or (source if source == AuditRecord.Source.AUTOSCALER else "")),
        source=source if source in SOURCES else AuditRecord.Source.SYSTEM,
        action=action,
        namespace=storable(namespace),
        name=storable(name),
        reason=storable(reason.strip()) if isinstance(reason, str) else "",
        from_revision=storable(from_revision),
        to_revision=storable(to_revision),
        details=storable(details or {}),
        result=AuditRecord.Result.ERROR if error is not None else AuditRecord.Result.OK,
        error="" if error is None else storable(f"{type(error).__name__}: {error}"),
    )


class AuditedControl:
    """What a control did, filled in by the control as it runs; ``audited`` writes it either way."""

    def __init__(self, namespace: str, name: str, details: dict[str, Any]) -> None:
        self.namespace = namespace  # what it acted on: a control may learn it as it runs (a release
        self.name = name  # names its environment's target, found while it is checked)
        self.details = details  # kept in the record; the control adds to it as it learns more
        self.from_revision = ""  # the revision (or generation) it acted on, once read
        self.to_revision = ""  # the one it left, once done
        self.record: AuditRecord | None = None  # the record of a control that succeeded


@contextmanager
def audited(
    user, *, action: str, namespace: str, name: str, reason: Any, source: str, details: dict[str, Any] | None = None
) -> Iterator[AuditedControl]:
    """Audit the control run in the ``with`` block, the one shape every control of every target uses.

    Refused or failed (``ControlError``: bad input; ``ControlDenied``: no permission; every
    ``ClusterError``: not found, a conflict it could not resolve, the API server's refusal or a
    transport failure): a record with result ``error``, the error's text and ``from`` as far as it
    was read, then the exception goes on to the caller. Done: a record with ``from`` -> ``to`` and
    the details as the block left them, in ``control.record``."""
    control = AuditedControl(namespace, name, {} if details is None else details)
    common = {"action": action, "reason": reason, "source": source}
    try:
        yield control
    except (ControlError, ControlDenied, ClusterError) as exc:
        refusal = getattr(exc, "refusal", None)
        if refusal:  # which rule refused it (approval, four-eyes), beside the error's words
            control.details["refused"] = refusal
        audit(
            user,
            **common,
            namespace=control.namespace,
            name=control.name,
            from_revision=control.from_revision,
            details=control.details,
            error=exc,
        )
        raise
    control.record = audit(
        user,
        **common,
        namespace=control.namespace,
        name=control.name,
        from_revision=control.from_revision,
        to_revision=control.to_revision,
        details=control.details,
    )


def _ref(number: int | None, rev_hash: str | None) -> dict[str, Any]:
    return {"number": number, "hash": rev_hash}


def _label(ref: dict[str, Any]) -> str:
    if ref.get("number"):
        return str(ref["number"])
    return ref.get("hash") or ""


def _revision_of(ms: dict[str, Any], revisions: list[dict[str, Any]], *, recorded_only: bool = False) -> dict[str, Any]:
    """The revision the spec selects now (number and hash), computed like the controller does.

    ``recorded_only`` (the "from" side of a change): a revision the controller never recorded has no
    number, e.g. the demo's first spec, changed by a release deploy before the first pass: its
    number would have been 1, which the revision the deploy made then took."""
    history = History.from_objects(revisions)
    collision = int((ms.get("status") or {}).get("collisionCount") or 0)
    try:
        update = record_update_revision(
            (ms.get("metadata") or {}).get("name", ""), ms.get("spec") or {}, history, collision
        )
    except Exception:  # an unusable spec: fall back to what status says
        h = (ms.get("status") or {}).get("updateRevision")
        rev = history.get(h)
        return _ref(rev.number if rev else None, h)
    existing = history.get(update.hash)
    if recorded_only and existing is None:
        return _ref(None, update.hash) | {"becomes": None}
    # A re-applied old revision keeps its identity (the number it has now) for "from"; the number
    # it is re-listed under appears in details as "becomes".
    return _ref(existing.number if existing else update.number, update.hash) | {"becomes": update.number}


def _check_approval(
    user, namespace: str, name: str, ms: dict[str, Any], patch: dict[str, Any], details: dict[str, Any], *, restoring
) -> None:
    """A target of an environment that requires approval takes no unapproved image from a control
    (``releases.approval``: ``ApprovalRequired``); a bypass is recorded in ``details``."""
    from controller.core.mergepatch import merge_patch

    from .releases.approval import BYPASS_PERMISSION, check_direct_change

    bypassed = check_direct_change(user, namespace, name, ms, merge_patch(ms, patch), restoring=restoring)
    if bypassed:
        details["approvalBypassed"] = {"images": bypassed, "permission": BYPASS_PERMISSION}


# Controls that lift a pause: after one the canary analysis set, they are the operator's override.
OVERRIDING = ("resume", "promote")


def analysis_pause(ms: dict[str, Any]) -> dict[str, Any] | None:
    """The pause the canary analysis set on ``ms`` while it stands, as the audit of a control that
    lifts it records it (``details.overridesAnalysis``): ``{"condition", "message"}`` for a pause for
    want of evidence (AnalysisInconclusive: the shortfall) or after a failure with onFailure Pause
    (AnalysisFailed); None when the rollout is not paused by the analysis."""
    if not headline(ms).paused:
        return None
    canary = (ms.get("status") or {}).get("canary") or {}
    pause = canary.get("analysisPause")
    if pause:
        return {"condition": pause.get("reason") or "AnalysisInconclusive", "message": pause.get("message")}
    if canary.get("phase") == "Failed" and canary.get("onFailure") == "Pause":
        return {"condition": "AnalysisFailed", "message": canary.get("message")}
    return None


def _control(
    user,
    namespace: str,
    name: str,
    action: str,
    reason: Any,
    source: str,
    build: Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]],
    args: dict[str, Any],
    *,
    rollback_to: int | None = None,
    restoring: bool = False,
    extra: dict[str, Any] | None = None,
) -> AuditRecord:
    """``restoring``: the change goes back to a revision that ran before (a rollback, an abort), so
    an image approved once may return although it was deprecated since."""
    details: dict[str, Any] = {"args": args, "fromRevision": None, **(extra or {})}
    with audited(
        user, action=action, namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        if source == AuditRecord.Source.AUTOSCALER:
            # The autoscaler acts for nobody: only a scale, only where autoscale is on (its build
            # checks that on the object it patches).
            if user is not None or action != "scale":
                raise ControlDenied(f"source {source!r} is the autoscaler's own: it only scales, as no user")
        else:
            check_permission(user, namespace=namespace)
        reason = check_reason(reason)
        cluster = get_cluster()
        for attempt in range(MAX_ATTEMPTS):
            ms = cluster.get_modelserving(namespace, name)
            revisions = cluster.list_revisions(namespace, name)
            before = _revision_of(ms, revisions, recorded_only=True)
            details["fromRevision"] = before
            control.from_revision = _label(before)
            patch = build(ms, revisions)
            _check_approval(user, namespace, name, ms, patch, details, restoring=restoring or rollback_to is not None)
            if action in OVERRIDING:
                overridden = analysis_pause(ms)
                if overridden is not None:
                    details["overridesAnalysis"] = overridden
            cause = f"{username(user) or source} via {source}: {action}: {reason}"
            patch = {
                **patch,
                "metadata": {
                    **(patch.get("metadata") or {}),
                    "annotations": {
                        **((patch.get("metadata") or {}).get("annotations") or {}),
                        naming.ANNOTATION_CHANGE_CAUSE: cause,
                    },
                },
            }
            rv = (ms.get("metadata") or {}).get("resourceVersion")
            try:
                new = cluster.patch_modelserving(namespace, name, patch, resource_version=rv)
                break
            except Conflict:
                log.info("%s of %s/%s lost a race (attempt %d); re-reading", action, namespace, name, attempt + 1)
                continue
        else:
            raise Conflict(
                f"modelserving {namespace}/{name} kept changing; {action} not applied after {MAX_ATTEMPTS} attempts"
            )
        after = _revision_of(new, revisions)
        if rollback_to is not None:
            target = History.from_objects(revisions).by_number(rollback_to)
            after = _ref(rollback_to, target.hash if target else after.get("hash")) | {"becomes": after.get("becomes")}
        control.to_revision = _label(after)
        details.update(toRevision=after, patch=patch, generation=(new.get("metadata") or {}).get("generation"))
        if action in TEMPLATE_CHANGES:
            # KV cache format advice on the spec as the control left it: said in the answer and
            # kept in the audit record, never a refusal (the change is made).
            warnings = [f"{w['path']}: {w['message']}" for w in kv_advice.warnings_of_stored(new)]
            if warnings:
                details["warnings"] = warnings
    enqueue.reconcile_soon(namespace, name)
    return control.record


# Controls that give the spec other role templates: after them the request path's images are
# checked (``kv_advice``).
TEMPLATE_CHANGES = ("set_image", "rollback")


__all__ = [
    "AuditedControl",
    "ControlDenied",
    "ControlError",
    "audited",
    "pause",
    "resume",
    "promote",
    "rollback",
    "abort",
    "set_image",
    "scale",
    "autoscale",
]
