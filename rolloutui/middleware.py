"""Access log as structured JSON lines, and the request body size limit.

Access log as structured JSON lines (Daphne's own access log is plain text, so runall turns
it off and this middleware logs each request through settings.LOGGING instead)."""

from __future__ import annotations

import logging
import time

log = logging.getLogger("rolloutui.access")

# Probes and scrapes arrive every few seconds; they are logged at DEBUG so INFO stays readable.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


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
                request.get_full_path(),
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1),
                    "user": user.get_username() if user is not None and user.is_authenticated else None,
                    "remote": request.META.get("REMOTE_ADDR"),
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
