"""Hand-made pods and a small cluster for the physics tests (no controller involved)."""

from __future__ import annotations

from controller.core import naming
from controller.simcluster.config import ClusterConfig, ImageBehaviour, Span, Traffic
from controller.simcluster.memory.cluster import SimCluster

FIXED = {
    "schedule": Span.fixed(1),
    "pull": Span.fixed(5),
    "start": Span.fixed(2),
    "load": Span.fixed(30),
    "terminate": Span.fixed(3),
}


def make_cluster(nodes=2, gpus=2, images=None, traffic=None, seed=0) -> SimCluster:
    config = ClusterConfig(
        nodes=nodes,
        gpus_per_node=gpus,
        timing=dict(FIXED),
        images={k: ImageBehaviour(**v) for k, v in (images or {}).items()},
    )
    return SimCluster(config, seed=seed, ms_name="demo", traffic=traffic)


def make_pod(name, image="engine:v1", gpus=1, entry=True, gates=(), revision="r1"):
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {
                naming.LABEL_NAME: "demo",
                naming.LABEL_POD_INDEX: "0" if entry else "1",
                naming.LABEL_REVISION: revision,
            },
        },
        "spec": {
            "containers": [
                {"name": "engine", "image": image, "resources": {"limits": {naming.GPU_RESOURCE: str(gpus)}}}
            ],
            "readinessGates": [{"conditionType": g} for g in gates],
        },
    }


def condition(pod, ctype):
    return next((c for c in pod["status"].get("conditions", []) if c["type"] == ctype), None)


def is_ready(pod):
    c = condition(pod, "Ready")
    return bool(c and c["status"] == "True")


__all__ = ["make_cluster", "make_pod", "condition", "is_ready", "Traffic", "Span"]
