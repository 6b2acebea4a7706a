"""The progress history of a ModelServing for the dashboard's charts (``ProgressSample`` rows).

After every reconcile pass (``reconciler``) one point is sampled: per-role updated-and-Ready
fraction, available groups against the budget's floor, and the skew between roles; at most one a
second per ModelServing, the newest ``MAX_SAMPLES`` kept.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import redis

from controller.core.ports import ClusterError, NotFound
from controller.models import ProgressSample

from . import redisconn
from .backend import get_cluster

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
    values = list(roles.values())
    return {
        "t": t,
        "roles": roles,
        "available": int(status.get("availableReplicas") or 0),
        "desired": desired,
        "floor": max(desired - max_unavailable, 0),
        "updated": int(status.get("updatedReplicas") or 0),
        "skew": round((max(values) - min(values)) * 100, 2) if len(values) > 1 else 0.0,
        "phase": status.get("phase"),
        "updateRevision": status.get("updateRevision"),
    }


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
        ms_max_skew = _max_skew(namespace, name)
        if ms_max_skew is not None:
            point["maxSkew"] = ms_max_skew
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


def _max_skew(namespace: str, name: str) -> int | None:
    from controller.core.spec import ValidationError, parse_modelserving

    try:
        ms = get_cluster(actor="controller").get_modelserving(namespace, name)
        coordination = parse_modelserving(ms).strategy.coordination
    except (NotFound, ValidationError, ClusterError):
        return None
    return coordination.max_skew_percent if coordination is not None else None
