"""What-if of a change the operator is about to make, on the simulated cluster (nothing is applied).

Place in the flow: the detail page's preview dialog -> ``POST .../preview/`` -> ``start`` -> a
``PreviewJob`` run by a Celery worker (``simulation.start_preview`` -> ``rolloutui.tasks.run_preview``
-> ``simulation.preview``, the simulated timeline of a merge patch) -> the page polls
``GET /api/previews/<id>/``. ``preview_change`` computes the same timeline in the caller's process
(tests, scripts). The request says what the operator
asked for: a raw merge patch, or the arguments of a set-image; for the latter the patch is built by
the same pure builder the set-image control uses (``controller.core.controls.set_image``), so the
preview simulates exactly the change the control would make.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core import controls as core
from controller.core.controls import ControlError

from . import simulation
from .cluster import get_cluster


def start(
    user,
    namespace: str,
    name: str,
    *,
    patch: Mapping[str, Any] | None = None,
    set_image: Mapping[str, Any] | None = None,
    source: str,
):
    """Queue the preview of exactly one of ``patch`` / ``set_image`` (see ``preview_change``) for
    ``user``, who needs the operate permission in the namespace; returns the ``PreviewJob``.
    Everything that can be refused is refused here, before anything is queued (``ControlDenied``,
    ``ControlError`` naming the field, ``NotFound``)."""
    return simulation.start_preview(user, namespace, name, _patch(namespace, name, patch, set_image), source=source)


def preview_change(
    namespace: str, name: str, *, patch: Mapping[str, Any] | None = None, set_image: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The simulated timeline (``simulation.preview``) of exactly one of: ``patch``, a JSON merge
    patch of the manifest; ``set_image``, ``{"role", "image", "container"?}``, computed here.

    Raises ``ControlError`` naming the field (``patch``, ``setImage.role``, ...) or ``NotFound``.
    """
    return simulation.preview(namespace, name, _patch(namespace, name, patch, set_image))


def preview_for(
    user,
    namespace: str,
    name: str,
    *,
    patch: Mapping[str, Any] | None = None,
    set_image: Mapping[str, Any] | None = None,
    source: str,
) -> dict[str, Any]:
    """``preview_change`` in the caller's process (the server-side CLI) for ``user``, who needs the
    operate permission in the namespace, as for ``start``: a refusal is audited as action ``preview``."""
    body = _patch(namespace, name, patch, set_image)
    simulation.check_preview(user, namespace, name, body, source=source)
    return simulation.preview(namespace, name, body)


def _patch(namespace, name, patch, set_image) -> dict[str, Any]:
    if bool(patch) == bool(set_image):
        raise ControlError("give exactly one of patch or setImage", field="patch")
    if set_image:
        ms = get_cluster().get_modelserving(namespace, name)
        try:
            patch = core.set_image(
                ms, role=set_image.get("role"), image=set_image.get("image"), container=set_image.get("container")
            )
        except ControlError as err:
            raise ControlError(str(err), field=f"setImage.{err.field}" if err.field else "setImage") from None
    if not isinstance(patch, Mapping):
        raise ControlError("patch must be a JSON merge patch object", field="patch")
    return dict(patch)
