"""Authentication of long-lived ingest tokens (``services.ingest_tokens``), for ``POST
/api/request-records/`` only: the one view that lists this class among its authenticators."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from rolloutui.services import ingest_tokens

KEYWORDS = (b"token", b"bearer")


class IngestTokenAuthentication(BaseAuthentication):
    """``Authorization: Token rui_ingest_...`` (or ``Bearer``, as log shippers often send). Any
    other credentials are left to the next authenticator; an ingest token that is unknown,
    revoked, expired or of a disabled account is 401."""

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() not in KEYWORDS:
            return None
        try:
            token = parts[1].decode()
        except UnicodeError:
            return None
        if not token.startswith(ingest_tokens.PREFIX):
            return None
        row = ingest_tokens.authenticate(token)
        if row is None:
            raise exceptions.AuthenticationFailed("invalid, expired or revoked ingest token")
        return row.user, row

    def authenticate_header(self, request):
        return "Token"


class IngestTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI document describes the ingest token (drf-spectacular finds it by class)."""

    target_class = IngestTokenAuthentication
    name = "ingestToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "Token rui_ingest_... (or Bearer rui_ingest_...): a long-lived ingest token, "
            "for POST /api/request-records/ only (issued with POST /api/ingest-tokens/).",
        }
