"""The Celery application `rolloutui`, configured from Django settings (CELERY_* names).

Started by `manage.py runall` as `celery -A rolloutui worker -Q celery,reconcile` (the reconcile
passes and the other tasks), `celery -A rolloutui worker -Q preview --concurrency 1` (previews,
routed there by CELERY_TASK_ROUTES, so that they never take a slot of the reconcile worker) and
`celery -A rolloutui beat`; deploy/worker.yaml runs the same three. Tasks are found in every
installed app's `tasks.py`.
"""

from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rolloutui.settings")

# The queues each worker consumes (runall; the manifests spell the same in their commands).
RECONCILE_WORKER_QUEUES = ("celery", "reconcile")
PREVIEW_QUEUE = "preview"
PREVIEW_WORKER_QUEUES = (PREVIEW_QUEUE,)

app = Celery("rolloutui")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def _use_django_logging(**kwargs):
    # Connecting to setup_logging stops Celery from installing its own (plain text) handlers;
    # the worker then logs JSON lines through settings.LOGGING like every other process.
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


def _require_redis(role: str) -> None:
    from django.conf import settings

    if not settings.REDIS_URL:
        # SystemExit, not an exception: Celery logs and swallows exceptions raised by signal
        # handlers, and a worker on the in-process memory transport would run but do nothing.
        raise SystemExit(
            f"REDIS_URL is not set: the Celery {role} needs a Redis broker shared with the web "
            "server. Start everything with `python manage.py runall` (it starts an embedded "
            "Redis), or set REDIS_URL=redis://host:6379."
        )


# celeryd_init fires for the `celery worker` command only, not for in-process test workers
# (celery.contrib.testing), which may legitimately run on the memory transport.
@signals.celeryd_init.connect
def _worker_needs_redis(**kwargs):
    _require_redis("worker")


@signals.beat_init.connect
def _beat_needs_redis(**kwargs):
    _require_redis("beat")


@signals.worker_process_init.connect
def _tune_gc(**kwargs):
    # Each pool process, after the fork: see rolloutui/gctuning.py (full collections inside
    # reconcile passes of a 1,000-group ModelServing).
    from rolloutui.gctuning import tune_worker_process

    tune_worker_process()


@signals.worker_process_shutdown.connect
def _forget_dead_process_metrics(pid=None, **kwargs):
    # Live gauges of a pool process that exits must stop counting; counters and histograms
    # keep their totals (prometheus_client merges them into the aggregate).
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid or os.getpid())
