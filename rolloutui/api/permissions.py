"""The product permissions as DRF permission classes, decided by ``services.access``.

Anonymous requests fail authentication first (401 with ``WWW-Authenticate: Token``); signed-in
users who hold the permission in no namespace get 403. Whether the permission is held in the
namespace of the object is decided per object (``ServiceView``: 404 for a namespace the user may
not view, 403 for a control the user may not run there).
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from rolloutui.services import access

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"


class CanView(BasePermission):
    message = "You need the rolloutui.view_modelserving permission to see ModelServings."

    def has_permission(self, request, view) -> bool:
        return access.anywhere(request.user, VIEW)


class CanOperate(BasePermission):
    message = "You need the rolloutui.operate_modelserving permission to run this control."

    def has_permission(self, request, view) -> bool:
        return access.anywhere(request.user, VIEW) and access.anywhere(request.user, OPERATE)


class CanRun(BasePermission):
    """The permission the action routed to the view (``view.control``) declares, somewhere; the
    namespace is checked (and a refusal audited) by ``actions.perform``."""

    def has_permission(self, request, view) -> bool:
        needed = view.control.permission
        self.message = f"You need the {needed} permission to run {view.control.name}."
        return access.anywhere(request.user, VIEW) and access.anywhere(request.user, needed)


INGEST = "rolloutui.ingest_requestrecords"


class CanIngest(BasePermission):
    """Sending request records: the permission somewhere (each record's namespace is checked by
    ``services.records.ingest``)."""

    message = "You need the rolloutui.ingest_requestrecords permission to send request records."

    def has_permission(self, request, view) -> bool:
        return access.anywhere(request.user, INGEST)
