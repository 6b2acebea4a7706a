"""Pod DNS: the headless Service of a ModelServing and the names it gives its pods.

Kubernetes gives a pod a DNS record ``<hostname>.<subdomain>.<namespace>.svc`` when the pod sets
``spec.hostname`` and ``spec.subdomain`` and a headless Service named like the subdomain selects it
(Kthena and LeaderWorkerSet do the same). The controller owns one such Service per ModelServing;
every pod takes its own name as hostname, so the entry address the workers of an instance are given
(``ENTRY_ADDRESS``) is a name that resolves.

Worked example: ModelServing ``chat`` in namespace ``llm``, group 1, role ``prefill`` instance 0 ->
Service ``chat-pods`` (clusterIP None, selector ``serving.rolloutui.io/name=chat``), entry pod
``chat-1-prefill-0-0`` with hostname ``chat-1-prefill-0-0`` and subdomain ``chat-pods``, so its
workers get ``ENTRY_ADDRESS=chat-1-prefill-0-0.chat-pods.llm.svc``.

``publishNotReadyAddresses``: a multi-node instance's workers must reach the entry before it is
Ready (the entry is Ready only once the workers joined it), so the records exist from the moment a
pod has an IP, not from its readiness.

Pure: builds the objects; ``reconcile`` makes the cluster hold them.
"""

from __future__ import annotations

from typing import Any

from . import naming
from .ports import Obj
from .revisions import owner_reference

SERVICE_KIND = "Service"
SERVICE_SUFFIX = "-pods"


def service_name(ms_name: str) -> str:
    """``chat`` -> ``chat-pods``."""
    return f"{ms_name}{SERVICE_SUFFIX}"


def pod_address(pod_name: str, ms_name: str, namespace: str) -> str:
    """The resolvable name of a pod of ``ms_name``: ``chat-1-prefill-0-0.chat-pods.llm.svc``."""
    return f"{pod_name}.{service_name(ms_name)}.{namespace}.svc"


def headless_service(ms: Obj) -> Obj:
    """The Service the pods of ``ms`` resolve through, owned by ``ms`` (garbage-collected with it)."""
    meta = ms.get("metadata") or {}
    name = meta.get("name") or ""
    return {
        "apiVersion": "v1",
        "kind": SERVICE_KIND,
        "metadata": {
            "name": service_name(name),
            "namespace": meta.get("namespace") or "default",
            "labels": {naming.LABEL_NAME: name},
            "ownerReferences": [owner_reference(ms)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {naming.LABEL_NAME: name},
            "publishNotReadyAddresses": True,
        },
    }


def service_matches(current: Obj, wanted: Obj) -> bool:
    """Whether the stored Service does what ``wanted`` asks (fields the API server adds ignored)."""
    have: dict[str, Any] = current.get("spec") or {}
    want = wanted["spec"]
    return all(have.get(k) == v for k, v in want.items())
