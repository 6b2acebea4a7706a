"""Who a websocket belongs to: an API token, else the browser session behind the origin check.

A browser cannot put an ``Authorization`` header on a websocket, and a reverse proxy passes the
header of the upgrade request on as it does any other, so a socket that carries one comes from a
program (the remote CLI: ``rolloutui get --watch``), authenticated like the REST API: the same
API tokens (``Authorization: Token <token>``, or ``Bearer <token>``), checked by knox. Such a
socket skips the origin check, which guards the cookie of a browser session against a page of
another site (cross-site websocket hijacking); a token is never sent by a browser on its own. A
token that is unknown, expired or revoked leaves the socket anonymous (the consumer closes it with
4401), and the consumer's periodic re-check closes a socket whose token was revoked since.

Every other socket goes through the origin check against ALLOWED_HOSTS and the session, as before.
"""

from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import AllowedHostsOriginValidator

# Where the socket's API token is kept (for the re-check): in the scope, for the life of the socket.
SCOPE_TOKEN = "rolloutui.api_token"
KEYWORDS = (b"token", b"bearer")


def token_of(scope) -> str | None:
    """The API token of an ``Authorization: Token|Bearer <token>`` header of the upgrade request."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            parts = value.split()
            if len(parts) == 2 and parts[0].lower() in KEYWORDS:
                try:
                    return parts[1].decode("ascii")
                except UnicodeDecodeError:
                    return None
            return None
    return None


def user_of_token(token: str):
    """The active user of an API token; None for a token that is unknown, expired or revoked."""
    from knox.auth import TokenAuthentication
    from rest_framework.exceptions import AuthenticationFailed

    try:
        user, _ = TokenAuthentication().authenticate_credentials(token.encode())
    except AuthenticationFailed:
        return None
    return user


class TokenOrSession:
    """ASGI middleware of the websocket routes: an API token (no origin check), else the session
    behind the origin check."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.browser = AllowedHostsOriginValidator(AuthMiddlewareStack(inner))

    async def __call__(self, scope, receive, send):
        token = token_of(scope)
        if token is None:
            return await self.browser(scope, receive, send)
        from django.contrib.auth.models import AnonymousUser

        user = await database_sync_to_async(user_of_token)(token)
        scope = {**scope, "user": user or AnonymousUser(), SCOPE_TOKEN: token if user else None}
        return await self.inner(scope, receive, send)
