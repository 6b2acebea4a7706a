"""Websocket routes, mounted by `rolloutui.asgi` behind the session auth and origin checks."""

from django.urls import path

from rolloutui.consumers import ModelServingConsumer

websocket_urlpatterns: list = [
    path("ws/modelservings/<str:namespace>/<str:name>/", ModelServingConsumer.as_asgi()),
]
