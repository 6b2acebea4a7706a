"""Access log as structured JSON lines, and the request body size limit.

Access log as structured JSON lines (Daphne's own access log is plain text and holds whole URLs, so
runall and every shipped Daphne command turn it off, and this middleware logs each request through
settings.LOGGING instead). The logged path keeps its query string with secret-looking values masked
(``masked_path``): the single sign-on callback's ``code`` and ``state`` would otherwise let whoever
reads the logs finish someone's sign-in while the code is fresh. The address is the client's as
``origin.client_ip`` decides it (the peer, or what the trusted proxies saw)."""

from __future__ import annotations

import logging
import re
import time
from urllib.parse import unquote_plus

from rolloutui.services import origin
from rolloutui.services.masking import MASK, mask_urls, secret_name

log = logging.getLogger("rolloutui.access")

# Probes and scrapes arrive every few seconds; they are logged at DEBUG so INFO stays readable.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

# Query parameters whose value is a credential though their name says nothing of KEY, TOKEN, SECRET
# or PASSWORD (masking.secret_name covers those): OAuth 2.0 / OpenID Connect's authorization
# response (RFC 6749 4.1.2: code, state; OIDC: session_state, nonce), signed URLs (sig, signature,
# X-Amz-Credential), one-time codes and SAML messages.
SECRET_QUERY_NAMES = re.compile(
    r"^(code|state|nonce|sig|pwd|otp|ticket|assertion|saml(request|response))$"
    r"|PASSWD|CREDENTIAL|SIGNATURE|SESSION|AUTH",
    re.IGNORECASE,
)


def secret_query_name(name: str) -> bool:
    return secret_name(name) or bool(SECRET_QUERY_NAMES.search(name))


def masked_query(query: str) -> str:
    """``query`` as sent, with the value of every secret-looking parameter replaced by the mask and
    any URL password in the others masked; names, order and encoding stay as they were."""
    parts = []
    for pair in query.split("&"):
        name, sep, value = pair.partition("=")
        if value and secret_query_name(unquote_plus(name)):
            value = MASK
        else:
            decoded = unquote_plus(value)
            if mask_urls(decoded) != decoded:  # a URL with a password, e.g. in ?next=
                value = mask_urls(decoded)
        parts.append(f"{name}{sep}{value}")
    return "&".join(parts)


def masked_path(request) -> str:
    """The request's path and query string as the logs may keep them (see ``masked_query``)."""
    query = request.META.get("QUERY_STRING", "")
    path = request.get_full_path().split("?", 1)[0]
    return f"{path}?{masked_query(query)}" if query else path


class AccessLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.monotonic()
        response = self.get_response(request)
        user = getattr(request, "user", None)
        level = logging.DEBUG if request.path in QUIET_PATHS else logging.INFO
        if log.isEnabledFor(level):
            log.log(
                level,
                "%s %s %s",
                request.method,
                masked_path(request),
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                    "user": user.get_username() if user is not None and user.is_authenticated else None,
                    "remote": origin.client_ip(request),
                },
            )
        return response


RECORDS_PATH = "/api/request-records"


class RequestSizeLimitMiddleware:
    """413 (JSON) for a request whose declared body is larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE``,
    before any of it is read. Django bounds ``request.body`` by the same setting, but only when a
    view reads it, and answers that with a 400 page; a chunked body without Content-Length is
    still bounded there (``rolloutui.api.errors`` turns it into a 413)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.conf import settings
        from django.http import JsonResponse

        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if request.path.startswith(RECORDS_PATH):
            # Batches of request records have their own, larger limit (the view reads the body).
            limit = getattr(settings, "ROLLOUTUI_RECORDS_MAX_BODY_BYTES", limit)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "Content-Length is not a number"}, status=400)
        if limit is not None and length > limit:
            return JsonResponse(
                {"detail": f"request body too large: {length} bytes, at most {limit} accepted"}, status=413
            )
        return self.get_response(request)
