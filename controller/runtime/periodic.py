"""The two periodic jobs of the live app (run by Celery beat through ``controller.tasks``).

- ``resync()`` every ``RESYNC_SECONDS``: enqueue a reconcile of every ModelServing (deduplicated),
  the safety net for any lost message.
- ``sim_tick()`` every ``TICK_SECONDS`` on the simulated backend: one step of the simulated
  cluster's physics (``controller.simcluster.database.tick``), skipped while another tick still runs.
  Both then take the next step of any canary promote or rollback handed over in steps
  (``kserve.passes.advance_handovers``).
- ``cleanup_records()`` every ``CLEANUP_SECONDS``: the bounded retention of request records
  (``controller.records.store.cleanup``; ``ROLLOUTUI_RECORDS_RETENTION_SECONDS`` and
  ``ROLLOUTUI_AGGREGATES_RETENTION_SECONDS``), on the controller's clock.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from controller.core import workqueue
from controller.models import SimObject
from controller.records import store as records_store
from controller.simcluster.database.tick import tick

from . import enqueue, hooks, redisconn
from .backend import backend_name, get_clock, get_cluster, sim_cluster
from .kserve import passes as kserve_passes
from .locks import SimpleLock
from .reconciler import maybe_queue_depth

RESYNC_SECONDS = workqueue.RESYNC_SECONDS
TICK_SECONDS = 1.0
CLEANUP_SECONDS = 300.0


def resync() -> int:
    """Enqueue a reconcile of every ModelServing (deduplicated). Returns how many."""
    if backend_name() == "sim":
        keys = list(SimObject.objects.filter(kind=SimObject.KIND_MODELSERVING).values_list("namespace", "name"))
    else:
        keys = [
            ((m.get("metadata") or {}).get("namespace", "default"), m["metadata"]["name"])
            for m in get_cluster().list_modelservings()
        ]
    for namespace, name in keys:
        enqueue.send(namespace, name)
    maybe_queue_depth(redisconn.state_redis())
    hooks.run_resync_hooks()
    kserve_passes.advance_handovers()
    kserve_passes.publish_changed()
    return len(keys)


def sim_tick() -> dict[str, Any]:
    """Advance the live simulated cluster by one tick (skipped when another tick still runs)."""
    if backend_name() != "sim":
        return {"skipped": "backend is not sim"}
    client = redisconn.state_redis()
    lock = SimpleLock(client, "sim-tick", ttl_ms=30_000) if client is not None else None
    if lock is not None and not lock.acquire():
        return {"skipped": "another tick is running"}
    try:
        # One reconcile per ModelServing whose pods the tick moved, sent when the tick is over.
        with enqueue.coalesced():
            report = tick(sim_cluster(actor="kubelet"))
        # The promotes and rollbacks handed over in steps: their next step as soon as the tick
        # made KServe finish the current one, not at the next resync.
        report["handovers"] = kserve_passes.advance_handovers()
        # The InferenceService pages: a publish for each one whose state the tick changed.
        kserve_passes.publish_changed()
    finally:
        if lock is not None:
            lock.release()
    report.pop("ready", None)
    return report


def cleanup_records() -> dict[str, int]:
    """Delete request records and sums older than their retention (clock seconds)."""
    return records_store.cleanup(
        get_clock().now(),
        records_seconds=getattr(
            settings, "ROLLOUTUI_RECORDS_RETENTION_SECONDS", records_store.RECORDS_RETENTION_SECONDS
        ),
        aggregates_seconds=getattr(
            settings, "ROLLOUTUI_AGGREGATES_RETENTION_SECONDS", records_store.AGGREGATES_RETENTION_SECONDS
        ),
    )
