"""What the simulated Kubernetes controllers (``deployments``, ``kservectl``) need of a cluster
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

from controller.core.ports import Obj


class WorkloadStore(Protocol):
    """The part of the API server the simulated KServe, Deployment and ReplicaSet controllers use."""

    def list_objects(self, kind: str, namespace: str | None = None, *, owner: str | None = None) -> list[Obj]:
        """Objects of ``kind`` in name order; with ``owner``, only those controlled by that object."""
        ...

    def get_object(self, kind: str, namespace: str, name: str) -> Obj:
        """Raises NotFound."""
        ...

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

    def list_controlled_pods(self, namespace: str, controller: str) -> list[Obj]:
        """Pods whose controller ownerReference names ``controller``."""
        ...

    def create_pod(self, pod: Obj) -> Obj: ...

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None: ...


# -- pods as the controllers see them ----------------------------------------------------------------


def is_terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """Counted by its ReplicaSet (kube's ``FilterActivePods``): not terminating, not finished."""
    return not is_terminating(pod) and (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")


def condition(obj: Obj, ctype: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def is_ready(pod: Obj) -> bool:
    return (condition(pod, "Ready") or {}).get("status") == "True"


def is_available(pod: Obj) -> bool:
    """Ready and active (``minReadySeconds`` is 0 on every Deployment KServe writes)."""
    return is_active(pod) and is_ready(pod)


def is_scheduled(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def unschedulable_message(pod: Obj) -> str | None:
    """kube-scheduler's message when the pod fits on no node, else None."""
    c = condition(pod, "PodScheduled")
    if c and c.get("status") == "False" and c.get("reason") == "Unschedulable":
        return c.get("message") or "Unschedulable"
    return None


def labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def uid(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("uid") or ""


def name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name") or ""
