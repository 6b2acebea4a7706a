"""Previews run on a queue of their own, consumed by a worker of their own: a viewer at the preview
rate cannot occupy the slots of the worker that runs the reconcile passes."""

from __future__ import annotations

from rolloutui.celery import PREVIEW_QUEUE, PREVIEW_WORKER_QUEUES, RECONCILE_WORKER_QUEUES, app


def _queue_of(task_name: str, **options) -> str:
    route = app.amqp.router.route(options, task_name)
    return route["queue"].name


def test_the_preview_task_is_routed_to_the_preview_queue():
    import rolloutui.tasks  # noqa: F401  (registers the task)

    assert PREVIEW_QUEUE == "preview"
    assert _queue_of("rolloutui.tasks.run_preview") == "preview"


def test_the_reconcile_worker_does_not_consume_the_preview_queue_and_the_preview_worker_only_it():
    assert PREVIEW_QUEUE not in RECONCILE_WORKER_QUEUES
    assert PREVIEW_WORKER_QUEUES == (PREVIEW_QUEUE,)


def test_every_other_task_still_goes_where_the_reconcile_worker_reads():
    from controller.runtime.enqueue import QUEUE

    for name in ("controller.tasks.resync", "controller.tasks.sim_tick", "controller.tasks.cleanup_records"):
        assert _queue_of(name) in RECONCILE_WORKER_QUEUES
    assert _queue_of("controller.tasks.reconcile", queue=QUEUE) in RECONCILE_WORKER_QUEUES


def test_a_preview_sent_with_delay_is_published_to_the_preview_queue(monkeypatch):
    from rolloutui import tasks

    published = []
    monkeypatch.setattr(
        app.amqp, "send_task_message", lambda producer, name, message, **options: published.append(options)
    )
    tasks.run_preview.delay("a-job-id")  # what services.simulation.start_preview calls
    (options,) = published
    assert options["queue"].name == "preview"
