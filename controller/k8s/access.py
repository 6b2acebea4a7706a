"""Kubernetes RBAC as a second opinion on the dashboard's permissions: SubjectAccessReview.

Place in the flow: with ``ROLLOUTUI_K8S_ACCESS_REVIEW=1`` on the Kubernetes backend,
``rolloutui.services.access`` asks ``subject_may`` before granting a permission the dashboard's
own rules grant: may this dashboard user (as a Kubernetes user, with their groups) ``get``
(view) or ``patch`` (operate) ModelServings in this namespace? The API server answers from the
cluster's RBAC (``POST /apis/authorization.k8s.io/v1/subjectaccessreviews``); RolloutUI's web account
needs ``create`` on ``subjectaccessreviews`` for that.
"""

from __future__ import annotations

import kubernetes

from controller.core import naming

from .client import call_json


def subject_may(
    api_client: kubernetes.client.ApiClient,
    *,
    user: str,
    groups: list[str],
    verb: str,
    namespace: str | None,
    resource: str = naming.PLURAL,
    group: str = naming.API_GROUP,
) -> bool:
    """Whether the cluster's RBAC lets ``user`` (member of ``groups``) ``verb`` ``resource`` in
    ``namespace`` (None: in every namespace). Raises the port's ``ClusterError`` when the API
    server cannot answer (the caller then refuses: fail closed)."""
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": list(groups), "resourceAttributes": attributes},
    }
    api = kubernetes.client.AuthorizationV1Api(api_client)
    answer = call_json(api.create_subject_access_review, body, what=f"access review of {user} {verb} {resource}")
    return bool((answer.get("status") or {}).get("allowed"))


__all__ = ["subject_may"]
