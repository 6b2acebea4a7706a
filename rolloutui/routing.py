"""Websocket routes, mounted by `rolloutui.asgi` behind the session auth and origin checks.

The dashboard work appends its consumers here, e.g.
``path("ws/modelservings/<str:namespace>/<str:name>/", ModelServingConsumer.as_asgi())``.
"""

websocket_urlpatterns: list = []
