"""The life of a ``PreviewJob`` (``services.jobs``), shared by the preview and the strategy advisor:
claimed once and by kind, finished with a result or a reason the page can show, stopped past its
wall-time budget, ended by Celery's soft time limit. The preview and the advice end to end are in
``test_preview.py``, ``tests/live`` and ``tests/advisor``."""

from __future__ import annotations

import pytest

from controller.core.controls import ControlError
from controller.core.ports import NotFound
from rolloutui.models import PreviewJob
from rolloutui.services import jobs

pytestmark = pytest.mark.django_db


def queued(**progress) -> PreviewJob:
    return PreviewJob.objects.create(namespace="default", name="demo", patch={"spec": {}}, progress=progress)


def test_a_queued_job_is_claimed_once_and_then_runs():
    job = queued(phase="queued")
    assert jobs.claim(str(job.pk)) is not None
    assert jobs.claim(str(job.pk)) is None  # a second delivery of the task finds nothing to run
    assert PreviewJob.objects.get(pk=job.pk).status == PreviewJob.Status.RUNNING


def test_a_job_of_another_kind_is_left_queued():
    preview = queued(phase="queued")
    assert jobs.claim(str(preview.pk), kind="advice") is None
    assert PreviewJob.objects.get(pk=preview.pk).status == PreviewJob.Status.QUEUED


def test_claiming_merges_the_new_progress_into_the_queued_one():
    job = queued(kind="advice", phase="queued", request={"limit": 3})
    jobs.claim(str(job.pk), kind="advice", progress={"phase": "simulating", "done": 0})
    progress = PreviewJob.objects.get(pk=job.pk).progress
    assert progress == {"kind": "advice", "phase": "simulating", "done": 0, "request": {"limit": 3}}


def raises(exc: Exception):
    def compute():
        raise exc

    return compute


@pytest.mark.parametrize(
    ("compute", "error"),
    [
        (lambda: {"ok": 1}, None),
        (
            raises(ControlError("too many pods", field="patch.spec.replicas")),
            {"patch.spec.replicas": ["too many pods"]},
        ),
        (raises(ControlError("no")), {"detail": ["no"]}),
        (raises(NotFound("default/demo is gone")), {"detail": "default/demo is gone"}),
        (raises(jobs.PreviewTooLong("stopped after 120 s")), {"detail": "stopped after 120 s"}),
        (raises(RuntimeError("a bug")), {"detail": "the advice failed (the worker's log has the details)"}),
    ],
)
def test_a_run_ends_done_with_its_result_or_in_error_with_a_reason_the_page_can_show(compute, error):
    job = jobs.claim(str(queued().pk))
    assert jobs.run(job, compute, what="advice") == error
    row = PreviewJob.objects.get(pk=job.pk)
    assert (row.status, row.error, row.finished_at is not None) == (
        PreviewJob.Status.ERROR if error else PreviewJob.Status.DONE,
        error,
        True,
    )
    assert row.result == (None if error else {"ok": 1})


def test_the_last_progress_says_whether_the_run_failed():
    job = jobs.claim(str(queued().pk))
    jobs.run(job, raises(NotFound("gone")), what="advice", progress_at_end=lambda failed: {"failed": failed})
    assert PreviewJob.objects.get(pk=job.pk).progress == {"failed": True}


def test_celerys_soft_time_limit_ends_the_job_in_error_naming_what_ran_out_of_time():
    job = queued()
    jobs.out_of_time(str(job.pk), what="preview")
    row = PreviewJob.objects.get(pk=job.pk)
    assert (row.status, row.error) == (PreviewJob.Status.ERROR, {"detail": "the preview ran out of time"})


def test_the_budget_stops_a_simulation_with_the_callers_reason_and_otherwise_counts_seconds():
    with pytest.raises(jobs.PreviewTooLong, match=r"^rollout at 42$"):
        jobs.stop_past(-1.0, lambda phase, simulated: f"{phase} at {simulated:.0f}")("rollout", 42.0)
    assert 0 <= jobs.stop_past(3600.0, lambda phase, simulated: "")("rollout", 1.0) < 3600
