"""Helpers for the runtime tests: run Python or manage.py in a fresh process with a chosen
environment (settings are read once per process, so settings tests need their own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Variables that would make a child process's settings depend on the developer's shell.
_SCRUBBED = (
    "DATABASE_URL",
    "REDIS_URL",
    "PROMETHEUS_MULTIPROC_DIR",
    "DJANGO_SETTINGS_MODULE",
    "PORT",
    "HOST",
)


def clean_env(var_dir: Path, **overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("ROLLOUTUI_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
            "ROLLOUTUI_VAR_DIR": str(var_dir),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(overrides)
    return env


SETTINGS_PROBE = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "DEBUG": settings.DEBUG,
    "SECRET_KEY": settings.SECRET_KEY,
    "ALLOWED_HOSTS": settings.ALLOWED_HOSTS,
    "ENGINE": db["ENGINE"], "NAME": str(db["NAME"]), "HOST": db.get("HOST"), "PORT": db.get("PORT"),
    "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    "CHANNEL_LAYERS": settings.CHANNEL_LAYERS,
    "CACHES": settings.CACHES,
    "ROLLOUTUI_BACKEND": settings.ROLLOUTUI_BACKEND,
    "ROLLOUTUI_SIM_SPEED": settings.ROLLOUTUI_SIM_SPEED,
    "PROMETHEUS_MULTIPROC_DIR": settings.PROMETHEUS_MULTIPROC_DIR,
}))
"""


def run_python(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def load_settings(var_dir: Path, **env_overrides: str) -> dict:
    """Settings as a fresh process sees them with this environment; raises with stderr on error."""
    result = run_python(SETTINGS_PROBE, clean_env(var_dir, **env_overrides))
    if result.returncode != 0:
        raise SettingsError(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


class SettingsError(Exception):
    pass
