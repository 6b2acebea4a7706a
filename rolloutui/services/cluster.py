"""The active cluster backend: ``settings.ROLLOUTUI_BACKEND`` ("sim" by default, or "kubernetes").

- "sim": ``controller.simcluster.database.store.DatabaseCluster`` (the database-backed simulated cluster) and the
  Kubernetes adapter's ``RedisInFlightRouter`` over the in-flight counts the simulated traffic
  keeps in Redis;
- "kubernetes": ``controller.k8s.KubernetesCluster`` and ``RedisInFlightRouter`` on the router's
  Redis (``ROLLOUTUI_ROUTER_REDIS_URL``, default ``REDIS_URL``).

The selection itself lives in ``controller.runtime.backend`` because the controller's Celery tasks need
it too and the controller never imports the dashboard package.
"""

from __future__ import annotations

from controller.core.ports import ClusterPort, RouterPort
from controller.runtime import backend


def get_cluster() -> ClusterPort:
    return backend.get_cluster(actor="operator")


def get_router() -> RouterPort:
    return backend.get_router()


def get_clock():
    return backend.get_clock()


def backend_name() -> str:
    return backend.backend_name()


def canary_weights_need_a_route() -> bool:
    """Whether a canary's ``setWeight`` steps need a Gateway API HTTPRoute to write the weight to: on
    Kubernetes; the embedded cluster's router splits by the weight itself."""
    return backend_name() == "kubernetes"


def reviews_access() -> bool:
    """Whether the cluster can answer who may do what (Kubernetes SubjectAccessReviews): only a real
    API server can; ``settings.ROLLOUTUI_K8S_ACCESS_REVIEW`` turns the use of it on."""
    return backend_name() == "kubernetes"


def inferenceservice_changes_pushed() -> bool:
    """Whether every change of an InferenceService reaches its page's websocket: on the embedded
    cluster (the tick publishes it) and on Kubernetes with the InferenceService cache (its watch);
    otherwise only the changes made through RolloutUI do."""
    return backend.backend_name() != "kubernetes" or backend.workload_cache_enabled()


def cluster_settings() -> dict:
    """The cluster-wide strategy settings in force and their origin, as the page shows them:
    ``{deploymentMode, defaultRollout: {maxUnavailable?, maxSurge?}, multiNodeOverride, origin, error}``
    (``origin``: ``environment`` or ``configmap NAMESPACE/NAME``; ``error``: why a ConfigMap was not used)."""
    from controller.runtime import clustersettings

    return clustersettings.current().to_json()
