"""The controller's Celery tasks: thin wrappers around ``controller.runtime``.

The task names are a contract (the Kubernetes watch process and ``controller.runtime.enqueue``
send by name; beat schedules by name), so they are spelled out here:

- ``controller.tasks.reconcile(namespace, name)``, on the queue ``reconcile``: one reconcile pass of
  one ModelServing (``controller.runtime.reconciler.run_reconcile``: lock, pass, publish, requeue);
- ``controller.tasks.resync()`` every 30 s: enqueue every ModelServing
  (``controller.runtime.periodic.resync``);
- ``controller.tasks.sim_tick()`` every second: one step of the simulated cluster's physics
  (``controller.runtime.periodic.sim_tick``);
- ``controller.tasks.cleanup_records()`` every 5 minutes: the retention of request records
  (``controller.runtime.periodic.cleanup_records``).

The periodic tasks are registered on the Celery app's beat schedule from here, so no settings
entry is needed.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import current_app, shared_task

from controller.runtime import periodic, reconciler


@shared_task(name="controller.tasks.reconcile", ignore_result=True)
def reconcile_modelserving(namespace: str, name: str) -> dict[str, Any]:
    return reconciler.run_reconcile(namespace, name)


@shared_task(name="controller.tasks.resync", ignore_result=True)
def resync() -> int:
    return periodic.resync()


@shared_task(name="controller.tasks.sim_tick", ignore_result=True)
def sim_tick() -> dict[str, Any]:
    return periodic.sim_tick()


@shared_task(name="controller.tasks.cleanup_records", ignore_result=True)
def cleanup_records() -> dict[str, int]:
    return periodic.cleanup_records()


class _QuietTicks(logging.Filter):
    """Drop Celery's per-task "Received"/"succeeded" INFO lines for the once-a-second physics tick
    (two log lines a second, forever, say nothing); its failures are still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        try:
            return "controller.tasks.sim_tick" not in record.getMessage()
        except Exception:
            return True


for _name in ("celery.app.trace", "celery.worker.strategy", "celery.beat"):
    logging.getLogger(_name).addFilter(_QuietTicks())


def register_periodic_tasks(app) -> None:
    schedule = app.conf.beat_schedule
    if schedule is None:
        app.conf.beat_schedule = schedule = {}
    resync_every, tick_every = periodic.RESYNC_SECONDS, periodic.TICK_SECONDS
    schedule.setdefault(
        "rolloutui-resync",
        {"task": "controller.tasks.resync", "schedule": resync_every, "options": {"expires": resync_every}},
    )
    # Expiring: ticks queued while no worker ran are dropped, not replayed in a burst (the tick
    # reads the clock; one tick catches up on everything that became due).
    schedule.setdefault(
        "rolloutui-sim-tick",
        {"task": "controller.tasks.sim_tick", "schedule": tick_every, "options": {"expires": 2 * tick_every}},
    )

    cleanup_every = periodic.CLEANUP_SECONDS
    schedule.setdefault(
        "rolloutui-cleanup-records",
        {
            "task": "controller.tasks.cleanup_records",
            "schedule": cleanup_every,
            "options": {"expires": cleanup_every},
        },
    )


register_periodic_tasks(current_app)
