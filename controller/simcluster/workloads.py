"""What the simulated Kubernetes controllers (``deployments``, ``kserve.controller``) need of a cluster
store, and the pod predicates they share.

Place in the flow: on a real cluster, KServe's controller and kube-controller-manager's Deployment
and ReplicaSet controllers are clients of the API server; on the simulated cluster they are
functions that read and write through the same narrow store interface, ``WorkloadStore``, which
both drivers implement (``memory.store.InMemoryStore`` for ``simulate``, the preview and the tests;
``database.store.DatabaseCluster`` for the running product). The drivers only decide when to call
them (``controllers.sync``): on a change (in memory) or on every tick (database).

Pure Python (no Django).
"""

from __future__ import annotations

from typing import Protocol

# The pod predicates and object readers the controllers share with the read side.
from controller.core.kserve.apps import (
    condition,
    is_active,
    is_available,
    is_ready,
    is_scheduled,
    is_terminating,
    labels,
    name,
    unschedulable_message,
)
from controller.core.ports import Obj, WorkloadReadPort


class WorkloadStore(WorkloadReadPort, Protocol):
    """The part of the API server the simulated KServe, Deployment and ReplicaSet controllers use:
    the reads every backend offers (``WorkloadReadPort``) and the writes the simulated controllers make."""

    def create_object(self, obj: Obj) -> Obj:
        """Raises Conflict if it exists; ``metadata.generateName`` names it."""
        ...

    def patch_object(
        self, kind: str, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None
    ) -> Obj: ...

    def replace_object_status(
        self, kind: str, namespace: str, name: str, status: Obj, *, resource_version: str | None = None
    ) -> Obj: ...

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Deletes it and (garbage collection) everything it controls."""
        ...

    def create_pod(self, pod: Obj) -> Obj: ...

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None: ...


def uid(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("uid") or ""


__all__ = [
    "WorkloadStore",
    "condition",
    "is_active",
    "is_available",
    "is_ready",
    "is_scheduled",
    "is_terminating",
    "labels",
    "name",
    "uid",
    "unschedulable_message",
]
