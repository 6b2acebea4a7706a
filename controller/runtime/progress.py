"""The progress history of a ModelServing for the dashboard's charts (``ProgressSample`` rows).

After every reconcile pass (``reconciler``) one point is sampled: per-role updated-and-Ready
fraction, available groups against the budget's floor, and, under coordination, the skew the
planner counts (the widest per-group gap between coordinated roles net of the partition, with
maxSkew and the quotas' limit); at most one a second per ModelServing, the newest ``MAX_SAMPLES``
kept. The history starts with the ModelServing: ``services.state.progress_history`` leaves out
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

# At most one sample per ModelServing per this many wall seconds, keeping the newest MAX_SAMPLES
# (one hour at one a second).
SAMPLE_EVERY_SECONDS = 1.0
MAX_SAMPLES = 3600


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
            keep = (
                ProgressSample.objects.filter(namespace=namespace, name=name)
                .order_by("-t")
                .values_list("t", flat=True)[MAX_SAMPLES : MAX_SAMPLES + 1]
            )
            cutoff = list(keep)
            if cutoff:
                ProgressSample.objects.filter(namespace=namespace, name=name, t__lte=cutoff[0]).delete()
    except Exception:  # history is best effort; never fail a pass for it
        log.exception("could not sample progress of %s/%s", namespace, name)
