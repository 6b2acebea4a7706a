"""Approval cannot be bypassed by a direct control: the guard the controls ask before they write.

Place in the flow: an environment that requires approval takes only approved model versions
through its releases (``deploy.check_approval``). Without this guard an operator could reach the
same target around the release layer: ``set-image`` an unapproved image, ``apply`` a manifest that
carries one, or roll back to a controller revision that ran one; the live release then merely
became Superseded. So ``services.controls`` (every ModelServing control), ``services.manifests``
(apply) and ``services.kserve.controls`` (InferenceService controls) call ``check_direct_change``
with the object before and after the change, before they write it.

Rule: on a target (``releases.Target``) of an environment that requires approval, every image the
change brings in (one the object did not run before; any key ``image`` under ``spec``, so the
containers of every role template, or an InferenceService's component and canary images) must be
the runtime image of an Approved model version (of one ever approved, for a rollback, as a rollback
to a release may restore a version deprecated since). Otherwise the change is refused
(``ApprovalRequired``, audited by the control with the reason) unless the user holds
``releases.bypass_approval`` in the target's namespace (group ``release-admins``, or the role
``release-admin`` granted there); the control then records which images bypassed approval.

A change that brings in no image (scale, pause, resume, promote, autoscale, a replica count in a
manifest) is never refused here.

Example: production (approval required) targets prod/chat, running ``vllm@sha256:aa..`` (chat-llm
v1, Approved). ``set-image decode vllm@sha256:bb..`` (chat-llm v2, Registered) by an operator ->
refused: "prod/chat is a target of environment production, which requires approval: image
vllm@sha256:bb.. is not the runtime image of an approved model version (chat-llm:v2 is Registered)".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rolloutui.releases import contract
from rolloutui.releases.models import ModelVersion, Target
from rolloutui.releases.permissions import BYPASS_PERMISSION

from .. import access
from ..controls import ControlDenied


class ApprovalRequired(ControlDenied):
    """A direct change would run an image no approved model version carries on a target of an
    environment that requires approval, and the user may not bypass approval there."""

    refusal = "approval"


def _images(value: Any) -> Iterator[str]:
    """Every string under a key ``image``, at any depth (iterative)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if key == "image" and isinstance(child, str):
                    yield child
                else:
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def images_of(obj: dict[str, Any] | None) -> set[str]:
    """The images an object's spec runs (``{}`` for a missing object)."""
    return set(_images((obj or {}).get("spec") or {}))


def _why_unapproved(image: str, *, restoring: bool) -> str | None:
    """None when ``image`` is the runtime image of an approved version, else what it is."""
    versions = list(ModelVersion.objects.filter(runtime_image=image).order_by("model", "version"))
    for mv in versions:
        if mv.status == ModelVersion.Status.APPROVED or (restoring and mv.was_approved):
            return None
    if not versions:
        return "no model version carries it"
    return ", ".join(f"{mv.key} is {mv.status}" for mv in versions)


def check_direct_change(
    user,
    namespace: str,
    name: str,
    before: dict[str, Any] | None,
    after: dict[str, Any],
    *,
    kind: str = contract.KIND_MODELSERVING,
    restoring: bool = False,
) -> list[str]:
    """Refuse (``ApprovalRequired``) a direct change of ``namespace/name`` from ``before`` (None: it
    does not exist yet) to ``after`` that the module docstring's rule forbids. Returns the images
    that bypassed approval (the user holds ``releases.bypass_approval`` there), for the audit; an
    empty list when nothing needed approval."""
    added = images_of(after) - images_of(before)
    if not added:
        return []
    target = (
        Target.objects.select_related("environment")
        .filter(kind=kind, namespace=namespace, name=name, environment__requires_approval=True)
        .first()
    )
    if target is None:
        return []
    unapproved = {image: why for image in sorted(added) if (why := _why_unapproved(image, restoring=restoring))}
    if not unapproved:
        return []
    if access.allowed(user, BYPASS_PERMISSION, namespace):
        return list(unapproved)
    listed = "; ".join(f"image {image} is not the runtime image of an approved model version ({why})"
                       for image, why in unapproved.items())  # fmt: skip
    raise ApprovalRequired(
        f"{namespace}/{name} is a target of environment {target.environment.name}, which requires approval: "
        f"{listed}. Deploy an approved release (Releases page), or ask someone with {BYPASS_PERMISSION} "
        "(group release-admins) to make this change"
    )


__all__ = ["BYPASS_PERMISSION", "ApprovalRequired", "check_direct_change", "images_of"]
