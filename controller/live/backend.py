"""Which cluster, router and clock the live app uses: ``settings.ROLLOUTUI_BACKEND``.

- ``"sim"`` (default): the database-backed simulated cluster (``DatabaseCluster``), the in-flight
  counts the simulated traffic keeps in Redis read through the Kubernetes adapter's own
  ``RedisInFlightRouter`` (``NoRouter`` when there is no Redis), and the simulated clock.
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

from controller.core.ports import ClusterPort, NoRouter, RouterPort

from . import redisconn
from .clock import WallClock, live_clock


def backend_name() -> str:
    return getattr(settings, "ROLLOUTUI_BACKEND", "sim") or "sim"


def get_cluster(*, actor: str = "operator") -> ClusterPort:
    if backend_name() == "kubernetes":
        return _kubernetes_cluster()
    from .store import DatabaseCluster

    return DatabaseCluster(actor=actor)


@lru_cache(maxsize=1)
def _api_client():
    from controller.k8s import build_api_client

    return build_api_client()


def _kubernetes_cluster() -> ClusterPort:
    from controller.k8s import KubernetesCluster

    return KubernetesCluster(_api_client())


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
    from .traffic import inflight_key

    return RedisInFlightRouter(client, key=inflight_key())


def get_clock():
    return WallClock() if backend_name() == "kubernetes" else live_clock()
