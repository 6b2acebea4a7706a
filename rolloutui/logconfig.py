"""The logging configuration every process uses (settings.LOGGING): JSON lines.

Without a log file (Kubernetes, a single command), every record at the level goes to stdout, where
the cluster's log collector reads it. With one (``ROLLOUTUI_LOG_FILE``, which ``manage.py runall``
sets for itself and each process it starts: ``var/log/<process>.log``), every record at the level
goes to the file and only warnings and errors to stdout: `make run`'s terminal shows the URL, the
sign-in hint and then what needs attention, not the per-second task and request lines.

No Django import: settings.py builds its LOGGING with it.
"""

from __future__ import annotations

from pathlib import Path

# The loggers whose own level differs from the root's (their records still reach the root's handlers).
_LOGGERS = {
    # Replace Django's default console/mail handlers: everything goes through the root's
    # handlers exactly once.
    "django": {"handlers": [], "level": "INFO", "propagate": True},
    "django.server": {"handlers": [], "level": "INFO", "propagate": True},
    "py.warnings": {"handlers": [], "propagate": True},
    # django-axes logs every sign-in at INFO; the audit trail records them already.
    "axes": {"handlers": [], "level": "WARNING", "propagate": True},
    # httpx logs each request's URL at INFO; a notification URL may hold a token (Slack's do).
    "httpx": {"handlers": [], "level": "WARNING", "propagate": True},
}


def logging_config(level: str, log_file: str | Path | None = None) -> dict:
    """A ``logging.config.dictConfig`` dictionary: records at ``level`` and above as JSON lines, to
    stdout, or with ``log_file`` to that file (its folder is made) and only WARNING and above to
    stdout."""
    handlers: dict[str, dict] = {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "json",
        }
    }
    if log_file:
        path = Path(log_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        handlers["stdout"]["level"] = "WARNING"
        handlers["file"] = {
            # Rotated at 10 MB, three old files kept: a demo left running for days stays small.
            "class": "logging.handlers.RotatingFileHandler",
            "filename": str(path),
            "maxBytes": 10 * 1024 * 1024,
            "backupCount": 3,
            "encoding": "utf-8",
            "formatter": "json",
        }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "rolloutui.jsonlog.JSONFormatter"}},
        "handlers": handlers,
        "root": {"handlers": list(handlers), "level": level},
        "loggers": {name: dict(conf) for name, conf in _LOGGERS.items()},
    }
