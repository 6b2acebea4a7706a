"""The periodic passes over every InferenceService: take the next step of a handover the product
is making (``advance_handovers``) and tell the pages whose state changed (``publish_changed``).
Called after every tick of the simulated cluster and at every resync (``controller.runtime.periodic``).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import redis

from controller.core.kserve import apps, handover
from controller.core.ports import ClusterError, NotFound

from ..backend import get_cluster
from .state import KIND, deploy_config, inferenceservice_state, supported

log = logging.getLogger(__name__)


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
    from ..publish import encode_state

    return hashlib.sha256(encode_state({k: v for k, v in state.items() if k != "time"})).hexdigest()


def publish_changed(*, cluster: Any = None) -> list[tuple[str, str]]:
    """Tell the pages of every InferenceService whose state changed since the last call
    (``publish.publish_inferenceservice``): called after every tick of the simulated cluster and at
    every resync, and by the controls. What was last published is a fingerprint in Redis, shared by
    the worker processes; without Redis every InferenceService is published. Returns which."""
    from .. import redisconn
    from ..publish import publish_inferenceservice

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
