"""Websocket routes, mounted by `rolloutui.asgi` behind the authentication (an API token, else the
session with the origin check: `rolloutui.wsauth`)."""

from django.urls import path

from rolloutui.consumers import InferenceServiceConsumer, ModelServingConsumer

websocket_urlpatterns: list = [
    path("ws/modelservings/<str:namespace>/<str:name>/", ModelServingConsumer.as_asgi()),
    path("ws/inferenceservices/<str:namespace>/<str:name>/", InferenceServiceConsumer.as_asgi()),
]
