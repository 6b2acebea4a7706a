"""Enqueue a reconcile of one ModelServing after the current transaction commits, deduplicated.

Deduplication uses a Redis flag ``rolloutui:queued:<ns>/<name>`` (SET NX with an expiry): while a
reconcile of that ModelServing waits in the broker, further changes do not queue another one. The
task deletes the flag as its first step, BEFORE it reads the cluster, so a change made after that
point queues a new pass: no wakeup is lost. If a message is lost anyway (Redis restarted), the flag
expires after ``QUEUED_TTL_MS`` and the periodic resync repairs.

Without Redis (unit tests, one-off commands) the message goes to kombu's memory transport, where
nothing runs it; tests run ``controller.runtime.reconciler.run_reconcile`` themselves.

The message names its task (``controller.tasks.reconcile``) instead of importing it: the task
module imports the runtime, not the other way round, and the Kubernetes watch process sends by the
same name.
"""

from __future__ import annotations

import logging

import redis
from celery import current_app
from django.db import transaction

from . import redisconn

log = logging.getLogger(__name__)

QUEUED_TTL_MS = 10_000
# The reconcile queue (the Kubernetes watch process sends to it too; workers consume celery,reconcile).
QUEUE = "reconcile"
# The Celery task that runs one reconcile (``controller.tasks.reconcile_modelserving``).
RECONCILE_TASK = "controller.tasks.reconcile"


def queued_key(namespace: str, name: str) -> str:
    return redisconn.key("queued", f"{namespace}/{name}")


def reconcile_soon(namespace: str, name: str) -> None:
    """Ask for a reconcile of ``namespace/name`` once the current transaction commits."""
    transaction.on_commit(lambda: send(namespace, name))


def send(namespace: str, name: str, *, countdown: float | None = None, dedupe: bool = True) -> None:
    client = redisconn.state_redis()
    if client is not None and dedupe and countdown is None:
        try:
            if not client.set(queued_key(namespace, name), "1", nx=True, px=QUEUED_TTL_MS):
                return  # a pass is already waiting; it will read this change
        except redis.RedisError as exc:
            log.warning("queued flag unavailable (%s); sending the reconcile anyway", exc)
    try:
        publish(namespace, name, countdown=countdown)
    except Exception as exc:  # broker down: the periodic resync repairs once it is back
        log.warning("could not enqueue reconcile of %s/%s: %s", namespace, name, exc)
        if client is not None:
            try:
                client.delete(queued_key(namespace, name))
            except redis.RedisError:
                pass


def publish(namespace: str, name: str, *, countdown: float | None = None) -> None:
    """Put one reconcile message on the broker (no deduplication; ``send`` decides whether to)."""
    current_app.send_task(RECONCILE_TASK, args=(namespace, name), countdown=countdown, queue=QUEUE)
