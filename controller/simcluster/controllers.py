"""Which simulated controller looks at what, and one pass of it: shared by both drivers.

Like the informers of KServe's controller and kube-controller-manager, a change of an object makes
its controller (and its owner's) look again:

- a pod -> its ReplicaSet;
- a ReplicaSet -> itself and its Deployment;
- a Deployment -> itself and its InferenceService;
- an InferenceService -> itself; the ``inferenceservice-config`` ConfigMap -> every
  InferenceService.

``sync`` runs one pass of the right controller and returns when it wants to look again by itself
(a progress deadline, a scale-to-zero grace period). The in-memory driver calls it from change
listeners on its event loop; the database driver on every tick, for every object.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.core.ports import Obj

from . import deployments, objects
from .kserve import controller as kserve_controller
from .objects import CONFIGMAP, DEPLOYMENT, INFERENCESERVICE, REPLICASET
from .workloads import WorkloadStore

Key = tuple[str, str, str]  # (kind, namespace, name)

# The order a tick runs them in: spec changes flow down (InferenceService -> Deployment ->
# ReplicaSet -> pods) within one tick; status flows back up over the next ticks.
ORDER = (INFERENCESERVICE, DEPLOYMENT, REPLICASET)

_SYNC: dict[str, Callable[[WorkloadStore, str, str, float], float | None]] = {
    INFERENCESERVICE: kserve_controller.sync_inferenceservice,
    DEPLOYMENT: deployments.sync_deployment,
    REPLICASET: deployments.sync_replicaset,
}


def sync(store: WorkloadStore, key: Key, now: float) -> float | None:
    """One pass of the controller of ``key``; the delay after which it wants another, or None."""
    kind, namespace, name = key
    return _SYNC[kind](store, namespace, name, now)


def _owner_key(obj: Obj, kind: str) -> Key | None:
    ref = objects.controller_ref(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    return (kind, obj["metadata"]["namespace"], ref["name"])


def replicaset_of_pod(pod: Obj) -> Key | None:
    """The ReplicaSet controlling ``pod``, the one controller a pod's change concerns, or None."""
    return _owner_key(pod, REPLICASET)


def keys_for_change(kind: str, obj: Obj | None, list_inferenceservices: Callable[[], list[Obj]]) -> list[Key]:
    """What to sync after a change of ``obj`` (of ``kind``)."""
    if obj is None:
        return []
    meta = obj.get("metadata") or {}
    keys: list[Key | None] = []
    if kind == "Pod":
        keys.append(replicaset_of_pod(obj))
    elif kind == REPLICASET:
        keys += [(REPLICASET, meta["namespace"], meta["name"]), _owner_key(obj, DEPLOYMENT)]
    elif kind == DEPLOYMENT:
        keys += [(DEPLOYMENT, meta["namespace"], meta["name"]), _owner_key(obj, INFERENCESERVICE)]
    elif kind == INFERENCESERVICE:
        keys.append((INFERENCESERVICE, meta["namespace"], meta["name"]))
    elif kind == CONFIGMAP and (meta.get("namespace"), meta.get("name")) == (
        kserve_controller.CONFIG_NAMESPACE,
        kserve_controller.CONFIG_NAME,
    ):
        keys += [
            (INFERENCESERVICE, i["metadata"]["namespace"], i["metadata"]["name"]) for i in list_inferenceservices()
        ]
    return [k for k in keys if k is not None]
