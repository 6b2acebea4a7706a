"""/api/ routes. Control routes accept a trailing slash or not (`.../pause` and `.../pause/`)."""

from django.urls import path, re_path

from . import views

MS = r"^modelservings/(?P<namespace>[a-z0-9]([-a-z0-9]*[a-z0-9])?)/(?P<name>[a-z0-9]([-.a-z0-9]*[a-z0-9])?)"

urlpatterns = [
    path("modelservings/", views.ModelServingList.as_view(), name="api-modelservings"),
    re_path(MS + r"/$", views.ModelServingDetail.as_view(), name="api-modelserving"),
    re_path(MS + r"/pause/?$", views.Pause.as_view(), name="api-pause"),
    re_path(MS + r"/resume/?$", views.Resume.as_view(), name="api-resume"),
    re_path(MS + r"/promote/?$", views.Promote.as_view(), name="api-promote"),
    re_path(MS + r"/rollback/?$", views.Rollback.as_view(), name="api-rollback"),
    re_path(MS + r"/set-image/?$", views.SetImage.as_view(), name="api-set-image"),
    re_path(MS + r"/history/?$", views.History.as_view(), name="api-history"),
    re_path(MS + r"/manifest/?$", views.Manifest.as_view(), name="api-manifest"),
    re_path(MS + r"/revisions/?$", views.Revisions.as_view(), name="api-revisions"),
    re_path(MS + r"/revisions/diff/?$", views.RevisionDiff.as_view(), name="api-revision-diff"),
    re_path(MS + r"/pods/?$", views.Pods.as_view(), name="api-pods"),
    re_path(MS + r"/preview/?$", views.SimPreview.as_view(), name="api-preview"),
    path("audit/", views.AuditList.as_view(), name="api-audit"),
    path("auth/token/", views.TokenView.as_view(), name="api-token"),
    path("sim/nodes/", views.SimNodes.as_view(), name="api-sim-nodes"),
    path("sim/kill-pod/", views.SimKillPod.as_view(), name="api-sim-kill-pod"),
    path("sim/fail-node/", views.SimFailNode.as_view(), name="api-sim-fail-node"),
    path("sim/add-node/", views.SimAddNode.as_view(), name="api-sim-add-node"),
]
