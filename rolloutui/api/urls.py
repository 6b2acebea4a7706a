"""/api/ routes. Routes under a ModelServing accept a trailing slash or not (`.../pause` and `.../pause/`).

One control route per action of the registry (``rolloutui.services.actions``), named ``api-<action>``,
under its target's path (``modelservings/{ns}/{name}/pause``, ``model-versions/{model}/{version}/approve``,
``deployment-revisions/{ns}/{name}/{number}/deploy``). The release records' routes are in ``releases.py``.
"""

from django.core.exceptions import ImproperlyConfigured
from django.urls import path, re_path

from rolloutui.services import actions

from . import advisor, ingest_tokens, paths, releases, views

MS = actions.MODELSERVING.route

ISVC = actions.INFERENCESERVICE.route

# One pod by namespace and name (the topology cell's pod panel): its events and its log.
POD = r"^pods/(?P<namespace>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/(?P<name>[a-z0-9](?:[-.a-z0-9]*[a-z0-9])?)"

# Paths under a ModelServing that are not actions (an action of the same name would be hidden).
RESOURCES = [
    re_path(MS + r"/history/?$", views.History.as_view(), name="api-history"),
    re_path(MS + r"/manifest/?$", views.Manifest.as_view(), name="api-manifest"),
    re_path(MS + r"/capacity/?$", views.Capacity.as_view(), name="api-capacity"),
    re_path(MS + r"/revisions/?$", views.Revisions.as_view(), name="api-revisions"),
    re_path(MS + r"/revisions/diff/?$", views.RevisionDiff.as_view(), name="api-revision-diff"),
    re_path(MS + r"/pods/?$", views.Pods.as_view(), name="api-pods"),
    re_path(MS + r"/preview/?$", views.SimPreview.as_view(), name="api-preview"),
    re_path(MS + r"/advise/?$", advisor.Advise.as_view(), name="api-advise"),
    re_path(MS + r"/releases/?$", releases.ModelServingReleases.as_view(), name="api-modelserving-releases"),
    re_path(MS + r"/comparison/?$", views.Comparison.as_view(), name="api-comparison"),
    re_path(MS + r"/paths/?$", paths.Paths.as_view(), name="api-paths"),
    re_path(MS + r"/status/?$", views.RolloutStatus.as_view(), name="api-rollout-status"),
]


def _control_routes():
    for action in actions.all_actions():
        if action.scope == actions.COLLECTION:
            yield path(
                f"modelservings/{action.name}",
                views.CollectionControl.as_view(control=action),
                name=f"api-{action.name}",
            )
            continue
        if action.name in action.target.taken:
            raise ImproperlyConfigured(f"action {action.name!r} would share its path with .../{action.name}/")
        yield re_path(
            action.target.route + rf"/{action.name}/?$",
            views.Control.as_view(control=action),
            name=f"api-{action.name}",
        )


urlpatterns = [
    path("actions/", views.ActionRegistry.as_view(), name="api-actions"),
    path("modelservings/", views.ModelServingList.as_view(), name="api-modelservings"),
    re_path(MS + r"/$", views.ModelServingDetail.as_view(), name="api-modelserving"),
    *_control_routes(),
    *RESOURCES,
    *releases.urlpatterns,
    path("workloads/", views.WorkloadList.as_view(), name="api-workloads"),
    path("inferenceservices/", views.InferenceServiceList.as_view(), name="api-inferenceservices"),
    re_path(
        ISVC + r"/?$",
        views.InferenceServiceDetail.as_view(),
        name="api-inferenceservice",
    ),
    re_path(ISVC + r"/history/?$", views.InferenceServiceHistory.as_view(), name="api-inferenceservice-history"),
    re_path(ISVC + r"/preview/?$", views.InferenceServicePreview.as_view(), name="api-inferenceservice-preview"),
    path("manifests/validate", views.ValidateManifest.as_view(), name="api-manifest-validate"),
    path("audit/", views.AuditList.as_view(), name="api-audit"),
    path("events/", views.EventList.as_view(), name="api-events"),
    re_path(POD + r"/events/?$", views.PodEvents.as_view(), name="api-pod-events"),
    re_path(POD + r"/log/?$", views.PodLog.as_view(), name="api-pod-log"),
    path("notifications/deliveries/", views.NotificationDeliveryList.as_view(), name="api-notification-deliveries"),
    re_path(r"^request-records/?$", views.RequestRecords.as_view(), name="api-request-records"),
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("auth/tokens/", views.TokensView.as_view(), name="api-tokens"),
    path("ingest-tokens/", ingest_tokens.IngestTokenList.as_view(), name="api-ingest-tokens"),
    path("ingest-tokens/<int:token_id>/", ingest_tokens.IngestTokenDetail.as_view(), name="api-ingest-token"),
    path("previews/<uuid:job_id>/", views.PreviewJobView.as_view(), name="api-preview-job"),
    path("sim/nodes/", views.SimNodes.as_view(), name="api-sim-nodes"),
    path("sim/kill-pod/", views.SimKillPod.as_view(), name="api-sim-kill-pod"),
    path("sim/fail-node/", views.SimFailNode.as_view(), name="api-sim-fail-node"),
    path("sim/add-node/", views.SimAddNode.as_view(), name="api-sim-add-node"),
]
