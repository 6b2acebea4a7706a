"""The state of an InferenceService from the live objects (``controller.core.kserve.view``): the
reads the pages, the API and the periodic passes (``passes``) share.

The cluster is read through ``controller.core.ports.WorkloadReadPort`` (``list_objects``,
``get_object``, ``list_controlled_pods``), which every backend implements: the simulated clusters
and the Kubernetes adapter (``controller.k8s.cluster``, reading from the API server, or its
watch-fed cache). For any other cluster ``supported(cluster)`` is False and the reads say so.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.core.kserve import apps
from controller.core.kserve.config import CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE, DeployConfig, from_config_map
from controller.core.kserve.runtimes import KIND_CLUSTER as KIND_CLUSTER_RUNTIME
from controller.core.kserve.runtimes import KIND_NAMESPACED as KIND_RUNTIME
from controller.core.kserve.runtimes import installed_runtimes
from controller.core.kserve.view import inferenceservice_view
from controller.core.ports import NotFound, RouterPort, WorkloadReadPort

from ..backend import get_clock, get_cluster, get_router
from ..state import in_flight_of

log = logging.getLogger(__name__)

KIND = "InferenceService"
NOT_SUPPORTED = "this cluster adapter does not read InferenceServices yet"


def supported(cluster: Any) -> bool:
    """Whether ``cluster`` reads InferenceServices: every backend does (``WorkloadReadPort``); a
    test double or another adapter may not."""
    return isinstance(cluster, WorkloadReadPort)


def deploy_config(cluster: Any) -> DeployConfig:
    """The ``inferenceservice-config`` ConfigMap's ``deploy`` settings (``config.from_config_map``)."""
    try:
        return from_config_map(cluster.get_object("ConfigMap", CONFIG_MAP_NAMESPACE, CONFIG_MAP_NAME))
    except NotFound:
        return from_config_map(None)


def serving_runtimes(cluster: Any, namespace: str):
    """The ServingRuntimes KServe may pick from (``runtimes.installed_runtimes``): a fresh
    installation's, and the ServingRuntime objects the cluster has (none when it keeps none)."""
    found = {}
    for kind, ns in ((KIND_CLUSTER_RUNTIME, None), (KIND_RUNTIME, namespace)):
        try:
            found[kind] = cluster.list_objects(kind, ns)
        except Exception:  # any cluster that keeps no runtimes has a fresh installation's
            found[kind] = []
    return installed_runtimes(found[KIND_CLUSTER_RUNTIME], found[KIND_RUNTIME])


def list_inferenceservices(namespace: str | None = None, *, cluster: Any = None) -> list[dict[str, Any]]:
    cluster = cluster or get_cluster()
    if not supported(cluster):
        return []
    return cluster.list_objects(KIND, namespace)


def inferenceservice_state(
    namespace: str,
    name: str,
    *,
    cluster: Any = None,
    router: RouterPort | None = None,
    config=None,
    now: float | None = None,
) -> dict[str, Any]:
    """``inferenceservice_view`` of the live objects (at ``now``, default the backend's clock).
    Raises ``NotFound``."""
    cluster = cluster or get_cluster()
    if not supported(cluster):
        raise NotFound(f"inferenceservice {namespace}/{name}: {NOT_SUPPORTED}")
    isvc = cluster.get_object(KIND, namespace, name)
    deployments = cluster.list_objects("Deployment", namespace, owner=name)
    rss = [rs for d in deployments for rs in cluster.list_objects("ReplicaSet", namespace, owner=apps.name(d))]
    pods = [p for rs in rss for p in cluster.list_controlled_pods(namespace, apps.name(rs))]
    in_flight = in_flight_of(router or get_router(), namespace, pods)
    config = config if config is not None else deploy_config(cluster)
    now = get_clock().now() if now is None else now
    return inferenceservice_view(
        isvc, deployments, rss, pods, config, now, in_flight=in_flight, runtimes=serving_runtimes(cluster, namespace)
    )
