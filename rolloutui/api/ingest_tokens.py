"""Long-lived ingest tokens over REST, and the authentication that accepts them (``services.ingest_tokens``).

    GET    /api/ingest-tokens/          every token (never its value), newest first
    POST   /api/ingest-tokens/          {"account", "name", "expiresInDays"?, "reason"?} -> 201 {"token", ...}
    DELETE /api/ingest-tokens/{id}/     revoke it -> 200 {"ingestToken": {... "revokedAt"}, "audit"}

Issuing, listing and revoking need ``rolloutui.operate_modelserving`` in every namespace (the
service decides: 403 otherwise, refused issuance and revocation audited). The token is in the 201
answer only. ``authentication.IngestTokenAuthentication`` is installed on ``POST
/api/request-records/`` alone, so a token opens nothing else.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from knox.auth import TokenAuthentication
from rest_framework import exceptions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from rolloutui.services import ingest_tokens

from .serializers import AuditRecordSerializer
from .views import ServiceView, source_of


class _Tokens(ServiceView):
    # A knox token or a session; the service checks the operate permission (everywhere).
    authentication_classes = [TokenAuthentication, SessionAuthentication]

    def get_permissions(self):
        return [IsAuthenticated()]


@extend_schema(tags=["request records"])
class IngestTokenList(_Tokens):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(ingest_tokens.listed(request.user))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        unknown = sorted(set(body) - {"account", "name", "expiresInDays", "reason"})
        if unknown:
            raise exceptions.ValidationError({unknown[0]: ["unknown field (account, name, expiresInDays, reason)"]})
        row, token, record = ingest_tokens.issue(
            request.user,
            account=body.get("account"),
            name=body.get("name"),
            expires_in_days=body.get("expiresInDays"),
            reason=body.get("reason") or "",
            source=source_of(request),
        )
        return Response(
            {
                "token": token,
                "note": "Shown once: only a digest is kept. Send it as 'Authorization: Token <token>'.",
                "ingestToken": ingest_tokens.token_json(row),
                "audit": AuditRecordSerializer(record).data,
            },
            status=status.HTTP_201_CREATED,
        )


@extend_schema(tags=["request records"])
class IngestTokenDetail(_Tokens):
    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def delete(self, request, token_id):
        row, record = ingest_tokens.revoke(
            request.user, int(token_id), reason=request.query_params.get("reason", ""), source=source_of(request)
        )
        return Response({"ingestToken": ingest_tokens.token_json(row), "audit": AuditRecordSerializer(record).data})
