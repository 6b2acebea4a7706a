"""The life of a ``PreviewJob``, one home for the preview and the strategy advisor.

A job is created and queued on the preview worker (``queue``), claimed by the worker (``claim``:
queued -> running, once), keeps its progress while it runs (``report``), and ends done with its
result or in error with a reason the page can show (``run``, ``finish``, ``out_of_time``). The web
server never runs one: both kinds are bounded by the API's per-user ``preview`` rate
(``THROTTLE_SCOPE``), by a wall-time budget checked between simulation steps (``stop_past``), and by
Celery's time limits a little later (``out_of_time``).

The job kinds differ only in what they compute and what they keep in ``progress``: a preview's has
no ``kind``, an advice's has ``kind: "advice"`` (so a worker of one kind never claims the other's).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from controller.core.controls import ControlError
from controller.core.ports import NotFound

from ..models import PreviewJob

log = logging.getLogger(__name__)

# The DRF throttle scope both the preview and the advice endpoints are counted in, per user.
THROTTLE_SCOPE = "preview"

# Jobs are read by the page for a minute or two; an hour later nobody polls them any more.
KEEP_JOBS = timedelta(hours=1)


class PreviewTooLong(Exception):
    """The preview ran past its wall-time budget."""


def queue(user, namespace: str, name: str, patch: dict[str, Any], *, task, progress: dict[str, Any]) -> PreviewJob:
    """Create a queued job for ``user`` (None when anonymous) and send ``task(job_id)`` to the
    preview worker once the transaction commits (a worker must find the row it is given)."""
    from django.db import transaction

    from rolloutui.celery import PREVIEW_QUEUE

    job = PreviewJob.objects.create(
        user=user if getattr(user, "pk", None) else None,
        namespace=namespace,
        name=name,
        patch=patch,
        progress=progress,
    )
    job_id = str(job.pk)
    # On the preview worker's queue: a preview is minutes of CPU, never on the reconcile worker.
    transaction.on_commit(lambda: task.apply_async(args=[job_id], queue=PREVIEW_QUEUE))
    return job


def forget_old_jobs() -> None:
    """Delete the jobs older than ``KEEP_JOBS``."""
    from django.utils import timezone

    PreviewJob.objects.filter(created_at__lt=timezone.now() - KEEP_JOBS).delete()


def store_done(user, namespace: str, name: str, patch: dict[str, Any], *, progress: dict[str, Any]) -> PreviewJob:
    """A job computed in the caller's process, stored as already done (its result is set by the
    caller, which needs the job's id inside it)."""
    from django.utils import timezone

    return PreviewJob.objects.create(
        user=user if getattr(user, "pk", None) else None,
        namespace=namespace,
        name=name,
        patch=patch,
        status=PreviewJob.Status.DONE,
        progress=progress,
        finished_at=timezone.now(),
    )


def claim(job_id: str, *, kind: str | None = None, progress: Mapping[str, Any] | None = None) -> PreviewJob | None:
    """The queued job ``job_id`` marked running (with ``progress`` merged into its own when given),
    or None when there is none to run: unknown, already claimed, or (with ``kind``) of another kind."""
    job = PreviewJob.objects.filter(pk=job_id, status=PreviewJob.Status.QUEUED).first()
    if job is None or (kind is not None and (job.progress or {}).get("kind") != kind):
        return None
    fields: dict[str, Any] = {"status": PreviewJob.Status.RUNNING}
    if progress is not None:
        fields["progress"] = {**(job.progress or {}), **progress}
    PreviewJob.objects.filter(pk=job.pk).update(**fields)
    return job


def report(job_id, progress: dict[str, Any]) -> None:
    """Replace the running job's progress (what the page polls)."""
    PreviewJob.objects.filter(pk=job_id).update(progress=progress)


def run(
    job: PreviewJob,
    compute: Callable[[], dict[str, Any]],
    *,
    what: str,
    progress_at_end: Callable[[bool], dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """Run ``compute`` for the claimed ``job`` and finish it: done with the result, or in error with
    the reason (a ``ControlError`` naming its field, a ``NotFound``, a ``PreviewTooLong``; anything
    else is logged and reported as "the <what> failed"). ``progress_at_end(failed)``, when given, is
    the job's last progress. Returns the error (None when done)."""
    result, error = None, None
    try:
        result = compute()
    except ControlError as err:
        error = {err.field or "detail": [str(err)]}
    except (NotFound, PreviewTooLong) as err:
        error = {"detail": str(err)}
    except Exception:
        log.exception("%s %s of %s/%s failed", what, job.pk, job.namespace, job.name)
        error = {"detail": f"the {what} failed (the worker's log has the details)"}
    progress = progress_at_end(error is not None) if progress_at_end is not None else None
    finish(job.pk, result=result, error=error, progress=progress)
    return error


def finish(
    job_id, *, result: dict[str, Any] | None, error: dict[str, Any] | None, progress: dict[str, Any] | None = None
) -> None:
    """End the job: in error when there is an ``error``, else done with ``result`` (and with
    ``progress`` as its last progress when given)."""
    from django.utils import timezone

    fields: dict[str, Any] = {"progress": progress} if progress is not None else {}
    PreviewJob.objects.filter(pk=job_id).update(
        status=PreviewJob.Status.ERROR if error else PreviewJob.Status.DONE,
        result=result,
        error=error,
        finished_at=timezone.now(),
        **fields,
    )


def out_of_time(job_id: str, *, what: str) -> None:
    """Celery's soft time limit stopped the task: the job ends in error, "the <what> ran out of time"."""
    from django.utils import timezone

    PreviewJob.objects.filter(pk=job_id).update(
        status=PreviewJob.Status.ERROR,
        error={"detail": f"the {what} ran out of time"},
        finished_at=timezone.now(),
    )


def stop_past(budget: float, reason: Callable[[str, float], str]) -> Callable[[str, float], float]:
    """A simulation's progress callback that raises ``PreviewTooLong(reason(phase, simulated))``
    once ``budget`` seconds of wall time have passed since this call, and otherwise returns the
    seconds elapsed. Example: budget 120, called at 121 s -> stopped; at 60 s -> 60.0."""
    started = time.monotonic()

    def check(phase: str, simulated: float) -> float:
        elapsed = time.monotonic() - started
        if elapsed > budget:
            raise PreviewTooLong(reason(phase, simulated))
        return elapsed

    return check
