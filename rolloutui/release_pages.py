"""The Releases page (/releases/): model versions per model, what runs in which environment, and the
history of deployment revisions with who and why; its buttons run the release actions of the action
registry (approve, deprecate, deploy, roll back to a release, promote) through the REST API.

A server-rendered shell like the other pages: the records come from ``services.releases.records``
as JSON (``json_script`` "releases-data"), the registry's description of the release actions as
``rollout-actions``; static/js/releases/main.js builds the page and keeps it fresh from the API.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.shortcuts import render

from rolloutui.services import actions
from rolloutui.services.releases import records

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"
HISTORY = 100


def page_data() -> dict:
    """Everything the Releases page shows (also what it re-reads from the API)."""
    return {
        "environments": [records.environment_json(env) for env in records.environments()],
        "versions": [records.model_version_json(mv, with_deployments=False) for mv in records.model_versions()],
        "history": [records.release_json(dr) for dr in records.releases()[:HISTORY]],
    }


@login_required
@permission_required(VIEW, raise_exception=True)
def releases(request):
    return render(
        request,
        "releases/index.html",
        {
            "data": page_data(),
            "boot": {
                "user": request.user.get_username(),
                "canOperate": request.user.has_perm(OPERATE),
                "canApprove": request.user.has_perm(records.APPROVE),
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
