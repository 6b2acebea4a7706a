"""The dashboard's Celery tasks (found by ``app.autodiscover_tasks``).

- ``rolloutui.tasks.run_preview(job_id)``: one preview of a change (``services.simulation.run_preview_job``),
  off the web server; its ``PreviewJob`` is kept by ``services.jobs``, as an advice's
  (``rolloutui.tasks.run_advice``). The simulation stops itself after ROLLOUTUI_PREVIEW_SECONDS of
  wall time (checked between simulation steps); Celery's own limits, a little later, end a task that
  is stuck inside one step (soft: an exception in the task; hard: the pool process is replaced).
- ``rolloutui.tasks.autoscale()`` every ``ROLLOUTUI_AUTOSCALE_SECONDS`` (30 s): one pass of the
  opt-in autoscaler over the ModelServings with autoscale on (``services.autoscale.run_once``);
  each change is a ``scale`` with source ``autoscaler``, audited. Registered on the beat schedule
  from here (``register_periodic_tasks``), as ``controller.tasks`` registers its own.
- ``rolloutui.tasks.deliver_notification(delivery_id)``: one notification sent to one destination
  (``services.notifications.send``), retried with exponential back-off; never in the web process.
"""

from __future__ import annotations

from typing import Any

from celery import current_app, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings


@shared_task(
    name="rolloutui.tasks.run_preview",
    ignore_result=True,
    soft_time_limit=settings.ROLLOUTUI_PREVIEW_SECONDS + 10,
    time_limit=settings.ROLLOUTUI_PREVIEW_SECONDS + 20,
)
def run_preview(job_id: str) -> None:
    from rolloutui.services import jobs, simulation

    try:
        simulation.run_preview_job(job_id)
    except SoftTimeLimitExceeded:
        jobs.out_of_time(job_id, what="preview")


@shared_task(name="rolloutui.tasks.autoscale", ignore_result=True)
def autoscale() -> list[dict[str, Any]]:
    from rolloutui.services import autoscale as autoscaler

    return autoscaler.run_once()


class DeliveryFailed(Exception):
    """An attempt to send a notification failed (no answer, or not 2xx): retried with back-off.
    Its text names the destination's host only (a URL may hold a token, and Celery logs retries)."""


@shared_task(
    bind=True,
    name="rolloutui.tasks.deliver_notification",
    ignore_result=True,
    autoretry_for=(DeliveryFailed,),
    max_retries=settings.ROLLOUTUI_NOTIFY_MAX_RETRIES,
    # Exponential back-off (1 s, 2 s, 4 s, ...) up to the ceiling, with jitter so that the
    # deliveries of one busy endpoint do not all come back at the same second.
    retry_backoff=True,
    retry_backoff_max=settings.ROLLOUTUI_NOTIFY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
)
def deliver_notification(self, delivery_id: int) -> None:
    """One attempt at sending one notification (``services.notifications.send``); a failed attempt
    is retried by Celery until the retries are spent, and the delivery is then marked failed."""
    from rolloutui.services import notifications

    try:
        notifications.send(delivery_id)
    except DeliveryFailed:
        if self.request.retries >= self.max_retries:
            notifications.give_up(delivery_id)
            return
        raise


def register_periodic_tasks(app) -> None:
    schedule = app.conf.beat_schedule
    if schedule is None:
        app.conf.beat_schedule = schedule = {}
    every = float(settings.ROLLOUTUI_AUTOSCALE_SECONDS)
    # Expiring: passes queued while no worker ran are dropped, not replayed in a burst (each pass
    # reads the current figures).
    schedule.setdefault(
        "rolloutui-autoscale",
        {"task": "rolloutui.tasks.autoscale", "schedule": every, "options": {"expires": every}},
    )


register_periodic_tasks(current_app)


@shared_task(
    name="rolloutui.tasks.run_advice",
    ignore_result=True,
    # The search stops starting previews after ROLLOUTUI_ADVISOR_SECONDS; the last one may run for
    # up to ROLLOUTUI_PREVIEW_SECONDS more.
    soft_time_limit=settings.ROLLOUTUI_ADVISOR_SECONDS + settings.ROLLOUTUI_PREVIEW_SECONDS + 10,
    time_limit=settings.ROLLOUTUI_ADVISOR_SECONDS + settings.ROLLOUTUI_PREVIEW_SECONDS + 20,
)
def run_advice(job_id: str) -> None:
    """The strategy advisor's search for one queued advice (``services.advisor.run_job``)."""
    from rolloutui.services import advisor, jobs

    try:
        advisor.run_job(job_id)
    except SoftTimeLimitExceeded:
        jobs.out_of_time(job_id, what="advice")
