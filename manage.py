#!/usr/bin/env python
"""Django's command-line utility for RolloutUI (`python manage.py runall` starts everything)."""

import os
import sys


def _use_running_embedded_redis() -> None:
    """A command run beside `make run` (e.g. `manage.py rollout pause ...`) talks to the Redis that
    `runall` started, so its reconcile reaches the worker at once. Only when REDIS_URL is unset, and
    never for `runall` itself (it starts its own) or tests."""
    if os.environ.get("REDIS_URL") or len(sys.argv) < 2 or sys.argv[1] in ("runall", "test"):
        return
    from pathlib import Path

    from rolloutui.embedded_redis import discover_url

    var_dir = Path(os.environ.get("ROLLOUTUI_VAR_DIR") or Path(__file__).resolve().parent / "var")
    url = discover_url(var_dir / "redis")
    if url:
        os.environ["REDIS_URL"] = url


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rolloutui.settings")
    _use_running_embedded_redis()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
