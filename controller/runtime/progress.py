"""The progress history of a ModelServing for the dashboard's charts (``ProgressSample`` rows).

After every reconcile pass (``reconciler``) one point is sampled: per-role updated-and-Ready
fraction, available groups against the budget's floor, and, under coordination, the skew the
planner counts (the widest per-group gap between coordinated roles net of the partition, with
maxSkew and the quotas' limit); at most one a second per ModelServing, the newest hour kept as
sampled and the five before it thinned to one point per 10 s (``prune``), for the charts' time
ranges. The history starts with the ModelServing: ``services.state.progress_history`` leaves out
samples older than its creation (a deleted and re-created name does not inherit them).
"""

from __future__ import annotations

import logging
import random
from typing import Any

import redis

from controller.models import ProgressSample

from . import redisconn

log = logging.getLogger(__name__)

# At most one sample per ModelServing per this many wall seconds. Kept (``prune``, now and then):
# the newest RECENT_SECONDS of clock time as sampled, older ones thinned to one per THIN_SECONDS, and
# nothing older than KEEP_SECONDS: the charts' 15 min and 1 h ranges at full resolution, 6 h at one
# point per 10 s (about 5,400 rows per ModelServing at most).
SAMPLE_EVERY_SECONDS = 1.0
MAX_SAMPLES = 3600  # what ``progress_history`` returns at most without a range (an hour at one a second)
RECENT_SECONDS = 3600.0
THIN_SECONDS = 10.0
KEEP_SECONDS = 6 * 3600.0


def progress_point(status: dict[str, Any], t: float) -> dict[str, Any]:
    """One chart point: per-role updated-and-Ready fraction, capacity against the budget floor, skew.

    Example: 4 groups, maxUnavailable 1 (count 1) -> floor 3; roles prefill 0.5 and decode 0.25 ->
    skew 25 (percentage points).
    """
    roles = {r.get("name"): float(r.get("progress") or 0.0) for r in status.get("roles") or []}
    strategy = status.get("strategy") or {}
    group = strategy.get("group") or {}
    desired = int((group.get("total")) or 0)
    max_unavailable = int(((group.get("maxUnavailable") or {}).get("count")) or 0)
    point = {
        "t": t,
        "roles": roles,
        "available": int(status.get("availableReplicas") or 0),
        "desired": desired,
        "floor": max(desired - max_unavailable, 0),
        "updated": int(status.get("updatedReplicas") or 0),
        "phase": status.get("phase"),
        "updateRevision": status.get("updateRevision"),
    }
    # Skew is a rule only between coordinated roles, per group and net of the partition: the
    # planner's own figure (status.skew), never the spread over all roles of the ModelServing.
    skew = status.get("skew")
    if skew is not None:
        point.update(skew=skew.get("percent"), skewGroup=skew.get("group"), maxSkew=skew.get("maxSkewPercent"))
        point["skewLimit"] = skew.get("limitPercent")
    return point


def sample_progress(namespace: str, name: str, status: dict[str, Any], t: float, client: redis.Redis | None) -> None:
    if not status:
        return
    if client is not None:
        try:
            if not client.set(
                redisconn.key("sampled", f"{namespace}/{name}"), "1", nx=True, px=int(SAMPLE_EVERY_SECONDS * 1000)
            ):
                return
        except redis.RedisError:
            pass
    point = progress_point(status, t)
    try:
        ProgressSample.objects.create(namespace=namespace, name=name, t=t, data=point)
        if random.random() < 0.02:  # prune now and then, not on every sample
            prune(namespace, name, t)
    except Exception:  # history is best effort; never fail a pass for it
        log.exception("could not sample progress of %s/%s", namespace, name)


def prune(namespace: str, name: str, now: float) -> int:
    """Thin the ModelServing's samples older than ``now - RECENT_SECONDS`` to the first of each
    ``THIN_SECONDS`` and drop those older than ``now - KEEP_SECONDS``. Returns how many went.

    Example: samples every second from 0 to 7 h, pruned at 7 h: 0 to 1 h gone, 1 h to 6 h one per
    10 s (1,800), the last hour all 3,600."""
    rows = ProgressSample.objects.filter(namespace=namespace, name=name)
    gone, _ = rows.filter(t__lt=now - KEEP_SECONDS).delete()
    older = rows.filter(t__lt=now - RECENT_SECONDS).order_by("t").values_list("pk", "t")
    seen: set[int] = set()
    drop = []
    for pk, t in older.iterator(chunk_size=2000):
        bucket = int(t // THIN_SECONDS)
        if bucket in seen:
            drop.append(pk)
        else:
            seen.add(bucket)
    for i in range(0, len(drop), 500):
        ProgressSample.objects.filter(pk__in=drop[i : i + 500]).delete()
    return gone + len(drop)
