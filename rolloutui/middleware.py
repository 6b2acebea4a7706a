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


def log_request(request, status: int, started: float) -> None:
    """One access log line: the request's method, masked path, status, duration, user and the
    client's address (also for requests the ASGI handler refuses before any middleware runs)."""
    user = getattr(request, "user", None)
    level = logging.DEBUG if request.path in QUIET_PATHS else logging.INFO
    if log.isEnabledFor(level):
        log.log(
            level,
            "%s %s %s",
            request.method,
            masked_path(request),
            status,
            extra={
                "method": request.method,
                "path": request.path,
                "status": status,
                "duration_ms": round((time.monotonic() - started) * 1000, 1),
                "user": user.get_username() if user is not None and user.is_authenticated else None,
                "remote": origin.client_ip(request),
            },
        )


class AccessLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.monotonic()
        response = self.get_response(request)
        log_request(request, response.status_code, started)
        return response


RECORDS_PATH = "/api/request-records"


def body_limit(path: str) -> int | None:
    """The most bytes of request body accepted on ``path`` (None: no limit): ``ROLLOUTUI_MAX_BODY_BYTES``
    (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``), or for batches of request records, which the view
    reads whole, ``ROLLOUTUI_RECORDS_MAX_BODY_BYTES``."""
    from django.conf import settings

    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if path.startswith(RECORDS_PATH):
        limit = getattr(settings, "ROLLOUTUI_RECORDS_MAX_BODY_BYTES", limit)
    return limit


def too_large(limit: int, length: int | None = None):
    """413 naming the limit, and the declared length when there was one."""
    from django.http import JsonResponse

    if length is None:  # cut off while it arrived: the whole length is never known
        detail = f"request body larger than {limit} bytes, the most accepted"
    else:
        detail = f"request body too large: {length} bytes, at most {limit} accepted"
    return JsonResponse({"detail": detail}, status=413)


def not_a_length():
    from django.http import JsonResponse

    return JsonResponse({"detail": "Content-Length is not a number of bytes"}, status=400)


class RequestSizeLimitMiddleware:
    """413 (JSON) for a request whose declared body is larger than ``body_limit``. Under Daphne the
    ASGI handler (rolloutui/httphandler.py) has refused it already, before reading any of it, and
    cut off a longer body without Content-Length; this covers the WSGI handler and Django's test
    clients, where the body is in memory before any middleware runs."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = body_limit(request.path)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return not_a_length()
        if length < 0:
            return not_a_length()
        if limit is not None and length > limit:
            return too_large(limit, length)
        return self.get_response(request)
