from django.urls import path

from . import events_page, pages, release_pages

urlpatterns = [
    path("", pages.modelserving_list, name="home"),
    path("manifests/apply/", pages.manifest_editor, name="manifest-apply"),
    path("modelservings/<str:namespace>/<str:name>/", pages.modelserving_detail, name="modelserving-detail"),
    path("releases/", release_pages.releases, name="releases"),
    path("notifications/", pages.notification_deliveries, name="notification-deliveries"),
    path("events/", events_page.events_page, name="events"),
    path(
        "inferenceservices/<str:namespace>/<str:name>/", pages.inferenceservice_detail, name="inferenceservice-detail"
    ),
    path("modelservings/<str:namespace>/<str:name>/edit/", pages.manifest_editor, name="modelserving-edit"),
]
