"""The state of an InferenceService from the live objects (``controller.core.kserve.view``).

The cluster must offer the workload-object reads of ``controller.simcluster.workloads.WorkloadStore``
(``list_objects``, ``get_object``, ``list_controlled_pods``): the simulated cluster and the Kubernetes adapter
(``controller.k8s.cluster``, reading them from the API server at each request) do. For any other
cluster ``supported(cluster)`` is False and the reads say so.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import redis

from controller.core.kserve import apps, handover
from controller.core.kserve.config import CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE, DeployConfig, from_config_map
from controller.core.kserve.runtimes import KIND_CLUSTER as KIND_CLUSTER_RUNTIME
from controller.core.kserve.runtimes import KIND_NAMESPACED as KIND_RUNTIME
from controller.core.kserve.runtimes import installed_runtimes
from controller.core.kserve.view import inferenceservice_view
from controller.core.ports import ClusterError, NotFound, RouterPort

from .backend import get_clock, get_cluster, get_router
from .state import in_flight_of

log = logging.getLogger(__name__)

KIND = "InferenceService"
NOT_SUPPORTED = "this cluster adapter does not read InferenceServices yet"


def supported(cluster: Any) -> bool:
    return all(hasattr(cluster, m) for m in ("list_objects", "get_object", "list_controlled_pods"))


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


def advance_handovers(*, cluster: Any = None) -> list[dict[str, Any]]:
    """Take the next step of every promote or rollback of a Standard-mode canary the product is
    handing over (``controller.core.kserve.handover``) whose current step KServe has done. Called
    after every tick of the simulated cluster and at every resync, so a step waits at most one
    resync (30 s) on Kubernetes. The patch carries the resourceVersion it was decided on: a user
    who changed the InferenceService meanwhile wins, and the next pass decides again.
    Returns what it did: ``[{namespace, name, step}]``."""
    cluster = cluster or get_cluster()
    if not supported(cluster):
        return []
    done = []
    config = None
    for isvc in cluster.list_objects(KIND):
        if handover.ANNOTATION not in apps.annotations(isvc):
            continue
        meta = apps.meta(isvc)
        namespace, name = meta.get("namespace") or "default", apps.name(isvc)
        config = config if config is not None else deploy_config(cluster)
        deployments = cluster.list_objects("Deployment", namespace, owner=name)
        patch, step = handover.advance(isvc, deployments, config)
        if patch is None:
            continue
        try:
            cluster.patch_object(KIND, namespace, name, patch, resource_version=meta.get("resourceVersion"))
        except ClusterError as err:
            # Conflict, NotFound, or an API server error: nothing was changed, the next pass decides again.
            log.info("handover of %s/%s not advanced: %s", namespace, name, err)
            continue
        log.info("handover of %s/%s: step %s", namespace, name, step)
        done.append({"namespace": namespace, "name": name, "step": step})
    return done


# How long the fingerprint of an InferenceService's last published state is kept (a deleted one's
# key goes away by itself).
PUBLISHED_TTL_SECONDS = 3600


def _fingerprint(state: dict[str, Any]) -> str:
    """What the pages show of ``state``, without its ``time`` (which moves at every read)."""
    from .publish import encode_state

    return hashlib.sha256(encode_state({k: v for k, v in state.items() if k != "time"})).hexdigest()


def publish_changed(*, cluster: Any = None) -> list[tuple[str, str]]:
    """Tell the pages of every InferenceService whose state changed since the last call
    (``publish.publish_inferenceservice``): called after every tick of the simulated cluster and at
    every resync, and by the controls. What was last published is a fingerprint in Redis, shared by
    the worker processes; without Redis every InferenceService is published. Returns which."""
    from . import redisconn
    from .publish import publish_inferenceservice

    cluster = cluster or get_cluster()
    if not supported(cluster):
        return []
    client = redisconn.state_redis()
    config = None
    published = []
    for isvc in cluster.list_objects(KIND):
        meta = apps.meta(isvc)
        namespace, name = meta.get("namespace") or "default", apps.name(isvc)
        config = config if config is not None else deploy_config(cluster)
        try:
            fingerprint = _fingerprint(inferenceservice_state(namespace, name, cluster=cluster, config=config))
        except NotFound:
            continue
        if client is not None:
            key = redisconn.key("isvc-published", namespace, name)
            try:
                pipe = client.pipeline()
                pipe.get(key)
                pipe.set(key, fingerprint, ex=PUBLISHED_TTL_SECONDS)
                before, _ = pipe.execute()
            except redis.RedisError as exc:
                log.warning("could not compare the state of inferenceservice %s/%s: %s", namespace, name, exc)
                before = None
            if before is not None and before.decode() == fingerprint:
                continue
        publish_inferenceservice(namespace, name)
        published.append((namespace, name))
    return published
