"""Who may do what, where: the one place permissions are decided.

Place in the flow: every entry point asks here before reading or changing a ModelServing. The REST
API (``rolloutui.api.permissions``), the pages, the websocket (at connect and again periodically),
the CLI and the action registry (``services.actions.perform`` -> ``controls.check_permission``) all
call ``allowed`` / ``namespaces``; the services filter what they return with them.

A permission (``rolloutui.view_modelserving``, ``rolloutui.operate_modelserving``, and any other the
product declares) is held in a namespace when any of these is true:

1. the user is an active superuser;
2. the user has the permission through Django (a product group: ``viewers``, ``operators``, ...
   or a direct user permission): that has always meant *every* namespace, and still does;
3. a ``NamespaceGrant`` of a role carrying the permission names the user, or one of the user's
   groups, in that namespace or in ``*`` (every namespace).

Example: alice is in no group and has the grant ``operator`` in ``team-a``. She sees and operates
ModelServings of ``team-a`` only: the list shows its rows only, ``GET .../team-b/x/`` is 404 (she may
not learn what exists there) and ``POST .../team-a/x/pause`` works. bob in ``viewers`` with the grant
``operator`` in ``team-a`` sees everything and operates ``team-a`` only.

Cluster-wide actions (a simulated node's failure) need the permission in every namespace (2, or a
``*`` grant).

Optionally (``ROLLOUTUI_K8S_ACCESS_REVIEW=1``, Kubernetes backend) the cluster's RBAC must agree
too: a permission held by the rules above is held only if a SubjectAccessReview says the user (its
user name with ``ROLLOUTUI_K8S_USER_PREFIX`` before it, and its Django groups) may ``get`` (view) or
``patch`` (operate) ModelServings in that namespace (``controller.k8s.access``). Nobody gets more
through the dashboard than kubectl would give them. An unanswered review refuses (fail closed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db.models import Q

from rolloutui import permissions

log = logging.getLogger(__name__)

# The Kubernetes verb on ModelServings that corresponds to each permission (SubjectAccessReview).
CLUSTER_VERBS = {"view_modelserving": "get", "operate_modelserving": "patch"}

ALL = "*"
APP = "rolloutui"


def codename(permission: str) -> str:
    """``rolloutui.operate_modelserving`` -> ``operate_modelserving``."""
    return permission.split(".", 1)[1] if "." in permission else permission


def qualified(permission: str) -> str:
    return permission if "." in permission else f"{APP}.{permission}"


def _active(user) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False) and getattr(user, "is_active", True))


def _grants(user, permission: str):
    from rolloutui.models import NamespaceGrant

    roles = permissions.roles_with(codename(permission))
    if not roles or not getattr(user, "pk", None):
        return NamespaceGrant.objects.none()
    return NamespaceGrant.objects.filter(Q(user=user) | Q(group__in=user.groups.all()), role__in=roles)


def _cache(user) -> dict:
    # One answer per (permission, namespace) per user object: a request asks the same question
    # several times (the permission class, then the service); a grant changed meanwhile is seen by
    # the next request, which loads a new user object.
    cache = getattr(user, "_rolloutui_access", None)
    if cache is None:
        cache = {}
        try:
            user._rolloutui_access = cache
        except AttributeError:  # an object that takes no attributes: no caching
            pass
    return cache


def forget(user) -> None:
    """Drop the answers cached on ``user`` (the websocket re-checks a long-lived user object)."""
    if user is not None and hasattr(user, "_rolloutui_access"):
        del user._rolloutui_access
    for attr in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        if user is not None and hasattr(user, attr):
            delattr(user, attr)


def _reviewing() -> bool:
    from rolloutui.services.cluster import reviews_access

    return bool(getattr(settings, "ROLLOUTUI_K8S_ACCESS_REVIEW", False)) and reviews_access()


def _cluster_agrees(user, permission: str, namespace: str | None) -> bool:
    """The SubjectAccessReview (only when ``_reviewing()``); cached with the other answers."""
    verb = CLUSTER_VERBS.get(codename(permission))
    if verb is None:  # a permission with no Kubernetes counterpart: the dashboard's rules decide
        return True
    key = ("k8s", namespace, verb)
    cache = _cache(user)
    if key not in cache:
        from controller.core.ports import ClusterError
        from controller.k8s.access import subject_may
        from rolloutui.services.cluster import get_cluster

        try:
            cache[key] = subject_may(
                get_cluster().api_client,
                user=settings.ROLLOUTUI_K8S_USER_PREFIX + user.get_username(),
                groups=[settings.ROLLOUTUI_K8S_USER_PREFIX + g for g in user.groups.values_list("name", flat=True)],
                verb=verb,
                namespace=namespace,
            )
        except ClusterError as exc:
            log.warning("access review failed, refusing: %s", exc)
            return False
    return cache[key]


def everywhere(user, permission: str) -> bool:
    """``permission`` in every namespace (superuser, a product group, or a ``*`` grant)."""
    if not _active(user):
        return False
    key = ("*", permission)
    cache = _cache(user)
    if key not in cache:
        cache[key] = bool(
            getattr(user, "is_superuser", False)
            or user.has_perm(qualified(permission))
            or _grants(user, permission).filter(namespace=ALL).exists()
        )
    return cache[key]


def _dashboard_allows(user, permission: str, namespace: str | None) -> bool:
    if everywhere(user, permission):
        return True
    if namespace is None:
        return False
    key = (namespace, permission)
    cache = _cache(user)
    if key not in cache:
        cache[key] = _grants(user, permission).filter(namespace=namespace).exists()
    return cache[key]


def allowed(user, permission: str, namespace: str | None) -> bool:
    """``permission`` in ``namespace``; ``namespace=None`` means a cluster-wide action (every namespace)."""
    if not _active(user) or not _dashboard_allows(user, permission, namespace):
        return False
    return _cluster_agrees(user, permission, namespace) if _reviewing() else True


def namespaces(user, permission: str, candidates: Callable[[], Iterable[str]] | None = None) -> set[str] | None:
    """Where ``user`` holds ``permission``: None for every namespace, else the set (maybe empty).
    With access reviews on, "every namespace" cannot be reviewed as such: ``candidates()`` (the
    namespaces in question, called only then) are each reviewed and those allowed returned."""
    if not _active(user):
        return set()
    if _reviewing():
        if everywhere(user, permission) and _cluster_agrees(user, permission, None):
            return None
        if everywhere(user, permission):
            pool = set(candidates() if candidates else ())
        else:
            pool = set(_grants(user, permission).values_list("namespace", flat=True))
            if ALL in pool:
                pool = (pool - {ALL}) | set(candidates() if candidates else ())
        return {ns for ns in pool if _cluster_agrees(user, permission, ns)}
    if everywhere(user, permission):
        return None
    return set(_grants(user, permission).values_list("namespace", flat=True))


def anywhere(user, permission: str) -> bool:
    """``permission`` in at least one namespace (what a list page or the audit trail needs)."""
    found = namespaces(user, permission)
    return found is None or bool(found)


__all__ = ["ALL", "allowed", "anywhere", "codename", "everywhere", "forget", "namespaces", "qualified"]
