"""Shared pieces of the live-runtime tests: a manual clock, fixed timings, a small manifest."""

from __future__ import annotations

import copy

from controller.core import naming
from controller.simcluster.config import ClusterConfig, ImageBehaviour, Span
from tests.factories import group_strategy, modelserving, role

FIXED = {
    "schedule": Span.fixed(1),
    "pull": Span.fixed(5),
    "start": Span.fixed(2),
    "load": Span.fixed(30),
    "terminate": Span.fixed(3),
}


class ManualClock:
    """The Clock port, moved by the test."""

    speed = 1.0

    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def now(self) -> float:
        return self.t

    def to_wall_seconds(self, seconds: float) -> float:
        return seconds


def config(images=None) -> ClusterConfig:
    return ClusterConfig(
        nodes=0, gpus_per_node=0, timing=dict(FIXED), images={k: ImageBehaviour(**v) for k, v in (images or {}).items()}
    )


def pod(name, *, ms="demo", image="engine:v1", gpus=1, entry=True, gates=()):
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {
                naming.LABEL_NAME: ms,
                naming.LABEL_POD_INDEX: "0" if entry else "1",
                naming.LABEL_REVISION: "r1",
            },
        },
        "spec": {
            "containers": [
                {"name": "engine", "image": image, "resources": {"limits": {naming.GPU_RESOURCE: str(gpus)}}}
            ],
            "readinessGates": [{"conditionType": g} for g in gates],
        },
    }


MANIFEST = modelserving(
    name="small",
    replicas=2,
    drain={"timeoutSeconds": 30},
    strategy=group_strategy(maxUnavailable=1),
    roles=[role("serve")],
)


def manifest(name="small", replicas=2):
    m = copy.deepcopy(MANIFEST)
    m["metadata"]["name"] = name
    m["spec"]["replicas"] = replicas
    return m


def condition(p, ctype):
    return next((c for c in (p.get("status") or {}).get("conditions", []) if c["type"] == ctype), None)


def is_ready(p):
    c = condition(p, "Ready")
    return bool(c and c["status"] == "True")


def mark_available(cluster, name, namespace="default"):
    """Write the ModelServing's Available condition as the controller would once every group is up:
    its simulated clients start then (``database/traffic.py`` ``_serves_yet``). For tests that run
    the cluster's physics without the controller."""
    version = cluster.get_modelserving(namespace, name)["metadata"]["resourceVersion"]
    status = {"conditions": [{"type": "Available", "status": "True", "reason": "AllGroupsAvailable"}]}
    cluster.replace_modelserving_status(namespace, name, status, resource_version=version)


def run_for(cluster, seconds):
    """Step a database-backed cluster on a manual clock through ``seconds`` of its time, one tick a
    second, as the ``sim_tick`` task does on the live clock."""
    from controller.simcluster.database.tick import tick

    for _ in range(seconds):
        cluster.clock.t += 1
        tick(cluster)


def state_traffic(state_redis, inflight="test-inflight"):
    """The simulated traffic on the test's state Redis (``state_redis``), its in-flight counts
    under a key of the test's own."""
    from controller.runtime import redisconn
    from controller.simcluster.database.traffic import RedisTraffic

    return RedisTraffic(state_redis, inflight_key=redisconn.key(inflight), key_prefix=redisconn.KEY_PREFIX)
