"""The dashboard's Celery tasks (found by ``app.autodiscover_tasks``).

- ``rolloutui.tasks.run_preview(job_id)``: one preview of a change (``services.simulation.run_preview_job``),
  off the web server. The simulation stops itself after ROLLOUTUI_PREVIEW_SECONDS of wall time
  (checked between simulation steps); Celery's own limits, a little later, end a task that is stuck
  inside one step (soft: an exception in the task; hard: the pool process is replaced).
"""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings


@shared_task(
    name="rolloutui.tasks.run_preview",
    ignore_result=True,
    soft_time_limit=settings.ROLLOUTUI_PREVIEW_SECONDS + 10,
    time_limit=settings.ROLLOUTUI_PREVIEW_SECONDS + 20,
)
def run_preview(job_id: str) -> None:
    from django.utils import timezone

    from rolloutui.models import PreviewJob
    from rolloutui.services import simulation

    try:
        simulation.run_preview_job(job_id)
    except SoftTimeLimitExceeded:
        PreviewJob.objects.filter(pk=job_id).update(
            status=PreviewJob.Status.ERROR,
            error={"detail": "the preview ran out of time"},
            finished_at=timezone.now(),
        )
