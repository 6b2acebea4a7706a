"""The two product permissions as DRF permission classes.

Anonymous requests fail authentication first (401 with ``WWW-Authenticate: Token``); signed-in
users without the permission get 403.
"""

from __future__ import annotations

from rest_framework.permissions import BasePermission

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"


class CanView(BasePermission):
    message = "You need the rolloutui.view_modelserving permission to see ModelServings."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(VIEW))


class CanOperate(BasePermission):
    message = "You need the rolloutui.operate_modelserving permission to run this control."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(VIEW) and user.has_perm(OPERATE))


class CanRun(BasePermission):
    """The permission the action routed to the view (``view.control``) declares, and view."""

    def has_permission(self, request, view) -> bool:
        needed = view.control.permission
        self.message = f"You need the {needed} permission to run {view.control.name}."
        user = request.user
        return bool(user and user.is_authenticated and user.has_perm(VIEW) and user.has_perm(needed))
