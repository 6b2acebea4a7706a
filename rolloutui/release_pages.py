"""The Releases page (/releases/): model versions per model, what runs in which environment, and the
history of deployment revisions with who and why; its buttons run the release actions of the action
registry (approve, deprecate, deploy, roll back to a release, promote) through the REST API.

A server-rendered shell like the other pages: the records come from ``services.releases.records``
as JSON (``json_script`` "releases-data"), the registry's description of the release actions as
``rollout-actions``; static/js/releases/main.js builds the page and keeps it fresh from the API.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from rolloutui.services import access, actions
from rolloutui.services.releases import records

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"
HISTORY = 100


def page_data(user) -> dict:
    """Everything the Releases page shows to ``user`` (also what it re-reads from the API): the
    records of the namespaces they may view (``records.visible_namespaces``)."""
    within = records.visible_namespaces(user)
    return {
        "environments": [records.environment_json(env) for env in records.environments(within)],
        "versions": [records.shown_to(user, mv) for mv in records.model_versions()],
        "history": [records.release_json(dr) for dr in records.releases(within=within)[:HISTORY]],
    }


@login_required
def releases(request):
    # As the list page: the view permission somewhere (a namespace grant is enough).
    if not access.anywhere(request.user, VIEW):
        raise PermissionDenied(f"{request.user.get_username()} may not view release records")
    operate_in = access.namespaces(request.user, OPERATE, records.target_namespaces)
    return render(
        request,
        "releases/index.html",
        {
            "data": page_data(request.user),
            "boot": {
                "user": request.user.get_username(),
                "canOperate": access.anywhere(request.user, OPERATE),
                # Where a release's own buttons work (its target's namespace): every namespace, or these.
                "operateEverywhere": operate_in is None,
                "operateNamespaces": sorted(operate_in or ()),
                "canApprove": access.everywhere(request.user, records.APPROVE),
                "api": {
                    "versions": "/api/model-versions/",
                    "environments": "/api/environments/",
                    "releases": "/api/deployment-revisions/",
                },
                "historyLimit": HISTORY,
            },
            "actions": actions.page_description(
                request.user, targets=(actions.MODEL_VERSION, actions.DEPLOYMENT_REVISION)
            ),
        },
    )
