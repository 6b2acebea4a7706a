"""Which cluster, router and clock the live app uses: ``settings.ROLLOUTUI_BACKEND``.

- ``"sim"`` (default): the database-backed simulated cluster (``controller.simcluster.database``),
  wired here to the app: every change enqueues a reconcile (``enqueue.reconcile_soon``) and its
  simulated requests live in Redis (``RedisTraffic``); the in-flight counts are read through the
  Kubernetes adapter's own ``RedisInFlightRouter`` (``NoRouter`` when there is no Redis), and the
  clock is the simulated cluster's.
- ``"kubernetes"``: ``KubernetesCluster`` over the official client (KUBECONFIG or in-cluster
  config), ``RedisInFlightRouter`` on ``ROLLOUTUI_ROUTER_REDIS_URL`` (the router's Redis; default
  ``REDIS_URL``), and the wall clock.

``rolloutui.services.cluster`` re-exports these for the dashboard; the controller's tasks use them
directly (the controller never imports the dashboard).
"""

from __future__ import annotations

import os
from functools import lru_cache

from django.conf import settings

from controller.core.ports import ClusterPort, NoRouter, RouterPort, VerifierPort
from controller.k8s.router import DEFAULT_KEY
from controller.simcluster.database.clock import live_clock
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.traffic import RedisTraffic

from . import enqueue, redisconn
from .clock import WallClock


def backend_name() -> str:
    return getattr(settings, "ROLLOUTUI_BACKEND", "sim") or "sim"


def get_cluster(*, actor: str = "operator") -> ClusterPort:
    if backend_name() == "kubernetes":
        if actor == "controller":  # the reconcile passes: ModelServings, never an InferenceService
            return _kubernetes_cluster(cached=pod_cache_enabled())
        return _kubernetes_cluster(workloads=workload_cache_enabled())
    return sim_cluster(actor=actor)


def sim_cluster(*, actor: str = "operator") -> DatabaseCluster:
    """The database-backed simulated cluster, wired to the app (reconciles, traffic in Redis)."""
    from . import interruptions

    return DatabaseCluster(
        actor=actor, on_change=enqueue.reconcile_soon, traffic=sim_traffic(), on_interrupted=interruptions.report
    )


def sim_traffic() -> RedisTraffic | None:
    """The simulated cluster's requests in the state Redis; ``None`` without Redis."""
    client = redisconn.state_redis()
    if client is None:
        return None
    return RedisTraffic(client, inflight_key=inflight_key(), key_prefix=redisconn.KEY_PREFIX)


def inflight_key() -> str:
    """The router's hash of in-flight counts (the router contract: ``controller.k8s.router``)."""
    return getattr(settings, "ROLLOUTUI_INFLIGHT_KEY", None) or DEFAULT_KEY


@lru_cache(maxsize=1)
def _api_client():
    from controller.k8s import build_api_client

    return build_api_client()


def pod_cache_enabled() -> bool:
    """``ROLLOUTUI_KUBERNETES_POD_CACHE`` (setting or environment, default off): the controller's
    reconcile passes read pods from an informer-style cache (``controller.k8s.informer``)."""
    value = getattr(settings, "ROLLOUTUI_KUBERNETES_POD_CACHE", None)
    if value is None:
        value = os.environ.get("ROLLOUTUI_KUBERNETES_POD_CACHE", "")
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _pod_cache():
    return _pod_cache_of(os.getpid())


@lru_cache(maxsize=1)
def _pod_cache_of(pid: int):
    """This process's pod informer, started on first use (in a Celery pool process: after the fork;
    keyed by the process id, so a child forked after its parent made one starts its own), and the
    record of pod writes it shares with the other worker processes through Redis."""
    from controller.k8s.informer import RedisWrittenVersions, WrittenVersions, pod_informer

    informer = pod_informer(_api_client()).start()
    client = redisconn.state_redis()
    written = RedisWrittenVersions(client, prefix=redisconn.KEY_PREFIX) if client is not None else WrittenVersions()
    return informer, written


def workload_cache_enabled() -> bool:
    """``ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE`` (setting or environment, default off): InferenceServices
    and their Deployments are read from a watch-fed cache (``controller.k8s.kserve_cache``), and a
    change the watch sees is sent to the InferenceService's open pages at once."""
    value = getattr(settings, "ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE", None)
    if value is None:
        value = os.environ.get("ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE", "")
    return str(value).strip().lower() in ("1", "true", "yes", "on")


@lru_cache(maxsize=1)
def _workload_cache():
    """This process's cache of InferenceServices and their Deployments, started on first use."""
    from django.utils.module_loading import import_string

    from controller.k8s.kserve_cache import WorkloadCache

    # By name, as the hooks are (controller.runtime.hooks): publish reads the state module, which
    # reads this one.
    publish = import_string("controller.runtime.publish.publish_inferenceservice")
    return WorkloadCache(_api_client(), on_change=publish).start()


def _kubernetes_cluster(*, cached: bool = False, workloads: bool = False) -> ClusterPort:
    from controller.k8s import KubernetesCluster

    from . import interruptions

    if workloads:
        from controller.k8s.kserve_cache import CachedWorkloadCluster

        return CachedWorkloadCluster(_api_client(), workloads=_workload_cache(), on_interrupted=interruptions.report)
    # Requests a drain timeout cut off (the router's in-flight counts) reach the audit as on the
    # simulated cluster.
    if cached:
        from controller.k8s.informer import CachedKubernetesCluster

        informer, written = _pod_cache()
        return CachedKubernetesCluster(
            _api_client(), pods=informer, written=written, on_interrupted=interruptions.report
        )
    return KubernetesCluster(_api_client(), on_interrupted=interruptions.report)


def get_verifier() -> VerifierPort:
    """Who sends ``spec.verification``: an HTTP request to the entry pod on Kubernetes; on the
    simulated cluster the simulated model server's answer (from the image profiles)."""
    if backend_name() == "kubernetes":
        from controller.k8s.verifier import HttpVerifier

        return HttpVerifier()
    from controller.simcluster.routing import SimulatedVerifier

    cluster = sim_cluster(actor="controller")
    return SimulatedVerifier(lambda: cluster.config)


def get_router() -> RouterPort:
    from controller.k8s import RedisInFlightRouter

    if backend_name() == "kubernetes":
        url = (
            getattr(settings, "ROLLOUTUI_ROUTER_REDIS_URL", None)
            or os.environ.get("ROLLOUTUI_ROUTER_REDIS_URL")
            or redisconn.redis_url()
        )
        return RedisInFlightRouter(url=url) if url else NoRouter()
    client = redisconn.state_redis()
    if client is None:
        return NoRouter()
    return RedisInFlightRouter(client, key=inflight_key())


def get_clock():
    return WallClock() if backend_name() == "kubernetes" else live_clock()
