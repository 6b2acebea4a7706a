"""Access log as structured JSON lines (Daphne's own access log is plain text, so runall turns
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
