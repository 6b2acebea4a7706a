"""Prometheus metrics of the controller, served at /metrics by every web process.

Multiprocess mode (PROMETHEUS_MULTIPROC_DIR, set in settings): the Celery worker's children write
their samples to files that the web process aggregates, so reconcile metrics recorded in the
worker appear on the web server's /metrics. Gauges use `livemostrecent`: the latest value written
by a live process wins.

Callers (the controller's tasks, the sim clock, the dashboard) use the helpers below so label
names stay consistent.
"""

from __future__ import annotations

from django.conf import settings  # noqa: F401  (settings export PROMETHEUS_MULTIPROC_DIR first)
from prometheus_client import Counter, Gauge, Histogram

RECONCILE_RESULTS = ("ok", "error", "conflict", "not_found")

reconcile_total = Counter(
    "rolloutui_reconcile_total",
    "Reconcile passes, by result (ok, error, conflict, not_found).",
    ["result"],
)
reconcile_duration_seconds = Histogram(
    "rolloutui_reconcile_duration_seconds",
    "Wall time of one reconcile pass.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
reconcile_queue_depth = Gauge(
    "rolloutui_reconcile_queue_depth",
    "Reconcile tasks waiting in the broker queues.",
    multiprocess_mode="livemostrecent",
)
rollout_progress_ratio = Gauge(
    "rolloutui_rollout_progress_ratio",
    "Fraction of a role's instances on the update revision (0..1).",
    ["namespace", "name", "role"],
    multiprocess_mode="livemostrecent",
)


def observe_reconcile(result: str, seconds: float) -> None:
    """Count one reconcile pass and record its duration."""
    reconcile_total.labels(result=result).inc()
    reconcile_duration_seconds.observe(seconds)


def set_queue_depth(depth: int) -> None:
    reconcile_queue_depth.set(depth)


def set_rollout_progress(namespace: str, name: str, role: str, ratio: float) -> None:
    rollout_progress_ratio.labels(namespace=namespace, name=name, role=role).set(ratio)


# Kombu's Redis transport keeps one list per queue and priority step: the queue's own name for the
# default priority and "<queue>\x06\x16<priority>" for the others.
_PRIORITY_SEP = "\x06\x16"
_PRIORITY_STEPS = (0, 3, 6, 9)
BROKER_QUEUES = ("celery", "reconcile")


def broker_queue_depth(redis_client, queues=BROKER_QUEUES) -> int:
    """Messages waiting in the given Celery queues (not counting tasks already in a worker)."""
    keys = [q if step == 0 else f"{q}{_PRIORITY_SEP}{step}" for q in queues for step in _PRIORITY_STEPS]
    pipe = redis_client.pipeline(transaction=False)
    for key in keys:
        pipe.llen(key)
    return int(sum(pipe.execute()))
