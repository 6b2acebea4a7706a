"""ASGI entry point served by Daphne: HTTP through Django, websockets through Channels."""

import os

from rolloutui.httphandler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rolloutui.settings")

# Initialise Django (apps, settings) before importing anything that touches models, such as the
# consumers referenced by rolloutui.routing. The handler is Django's, releasing each response's
# payload once sent (rolloutui/httphandler.py).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from rolloutui.routing import websocket_urlpatterns  # noqa: E402
from rolloutui.wsauth import TokenOrSession  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # An API token in the Authorization header (the remote CLI), else the origin check against
        # ALLOWED_HOSTS (no cross-site websocket hijacking) and the session user, on scope["user"]
        # for the consumers' permission checks (rolloutui/wsauth.py).
        "websocket": TokenOrSession(URLRouter(websocket_urlpatterns)),
    }
)

# Under Daphne, a body over the limit is refused while it arrives (rolloutui/serverlimits.py).
from rolloutui.serverlimits import install as bound_request_bodies  # noqa: E402

bound_request_bodies()

# Last, once everything the process keeps for good is loaded: see rolloutui/gctuning.py (full
# garbage collections were the websocket fan-out's tail).
from rolloutui.gctuning import tune_web_process  # noqa: E402

tune_web_process()
