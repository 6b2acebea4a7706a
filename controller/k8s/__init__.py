"""The Kubernetes adapter: the controller's ports over the official ``kubernetes`` client.

This package is named ``k8s`` rather than ``kubernetes`` on purpose: a directory called
``kubernetes`` that ever lands on ``sys.path`` (a script run from ``controller/``, a test runner
inserting a rootdir) would shadow the ``kubernetes`` library for every import in the process. Inside
this package ``import kubernetes`` always means the library.

Public entry points (import them from here):

- ``KubernetesCluster``: ``controller.core.ports.ClusterPort`` against an API server.
- ``ClusterWatcher``: one shared watch of ModelServings and their pods that calls
  ``enqueue(namespace, name)`` for every change (relists on 410 Gone, reconnects with backoff).
- ``LeaseElector``: leader election on a ``coordination.k8s.io/v1`` Lease.
- ``RedisInFlightRouter``: ``controller.core.ports.RouterPort`` reading the router's in-flight
  counts from a Redis hash.
- ``Invalid`` / ``Forbidden``: ``ClusterError``s for the API server's 422 (with the field causes)
  and 403.
- ``build_api_client``: an ``ApiClient`` from ``KUBECONFIG`` / ``~/.kube/config`` or in-cluster config.
- ``liveness`` (heartbeat files and the probe command) and ``beat`` (Celery beat's heartbeat
  scheduler): the liveness signals of the processes that have no HTTP port.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562): ``python -m controller.k8s.liveness``, the liveness probe run
# every few seconds, must not pay for loading the kubernetes client.
_EXPORTS = {
    "build_api_client": "controller.k8s.client",
    "Invalid": "controller.k8s.client",
    "Forbidden": "controller.k8s.client",
    "KubernetesCluster": "controller.k8s.cluster",
    "LeaseElector": "controller.k8s.leader",
    "RedisInFlightRouter": "controller.k8s.router",
    "ClusterWatcher": "controller.k8s.watch",
}

if TYPE_CHECKING:
    from controller.k8s.client import Forbidden, Invalid, build_api_client
    from controller.k8s.cluster import KubernetesCluster
    from controller.k8s.leader import LeaseElector
    from controller.k8s.router import RedisInFlightRouter
    from controller.k8s.watch import ClusterWatcher


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'controller.k8s' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ClusterWatcher",
    "Forbidden",
    "Invalid",
    "KubernetesCluster",
    "LeaseElector",
    "RedisInFlightRouter",
    "build_api_client",
]
