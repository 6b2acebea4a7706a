"""Helpers for the dashboard tests: ModelServing manifests and waiting on the live state.

Everything goes through ``rolloutui.services`` (the same layer the pages and the API call), so
these tests exercise the real backend the settings select.
"""

from __future__ import annotations

import time
import uuid

NAMESPACE = "default"


def manifest(name: str, *, replicas: int = 4, partition: int = 0, image: str = "engine:v1", max_surge: int = 1) -> dict:
    def template(img: str) -> dict:
        return {
            "spec": {"containers": [{"name": "engine", "image": img, "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
        }

    return {
        "apiVersion": "serving.rolloutui.io/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": max_surge, "partition": partition},
            },
            "template": {
                "roles": [
                    {
                        "name": "prefill",
                        "replicas": 1,
                        "workerReplicas": 1,
                        "entryTemplate": template(image),
                        "workerTemplate": template(image),
                    },
                    {"name": "decode", "replicas": 2, "workerReplicas": 0, "entryTemplate": template(image)},
                ]
            },
        },
    }


def unique_name(prefix: str = "ms") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def reconcile(name: str, namespace: str = NAMESPACE) -> dict:
    """One reconcile of the ModelServing, in this process: the controller's own task body.

    Inside a test transaction the services' on-commit enqueue never fires, and no worker runs
    here, so tests that need the controller to react (a new revision after set-image) ask for it.
    """
    from controller.runtime.reconciler import run_reconcile

    return run_reconcile(namespace, name)


def create_modelserving(name: str, **kwargs) -> dict:
    """Create a ModelServing through the active cluster port, run the controller once, and wait
    until its first revision is recorded (the state then has everything the dashboard shows)."""
    from controller.core.ports import Conflict
    from rolloutui.services import cluster, state

    try:
        cluster.get_cluster().create_modelserving(manifest(name, **kwargs))
    except Conflict:
        pass

    def ready():
        try:
            s = state.get_state(NAMESPACE, name)
        except Exception:
            return None
        return s if s.get("revisions") and s.get("updateRevision") else None

    if not ready():
        reconcile(name)
    return wait_for(ready, timeout=60, what=f"first revision of {name}")
