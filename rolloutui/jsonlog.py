"""Structured logs: one JSON object per line on stdout (time, level, logger, message, extras).

Every process (Daphne, Celery worker and beat, management commands) uses this formatter through
settings.LOGGING, so `make run` output and a cluster's log collector can parse every line.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from django.http import HttpRequest

# Attributes every LogRecord has; anything else on a record came from `extra=` and is emitted.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()) | {
    "message",
    "asctime",
    "taskName",
}


def _loggable(value):
    """A Django request (``django.request`` passes it with every 4xx and 5xx warning) as its method
    and path with secret-looking query values masked: its ``str()`` holds the whole URL, a single
    sign-on callback's ``code`` and ``state`` included."""
    if isinstance(value, HttpRequest):
        from rolloutui.middleware import masked_path

        return f"{value.method} {masked_path(value)}"
    return value


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_") and key not in entry:
                entry[key] = _loggable(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # default=str: extras such as Path, datetime or a Django request must not break logging.
        return json.dumps(entry, default=str, ensure_ascii=False)
