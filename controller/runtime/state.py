"""The state view of one ModelServing built from the live objects (``controller.core.view``).

The same serializer as the reconcile pass's ``ReconcileResult.view``, the REST GET and the websocket.
"""

from __future__ import annotations

from typing import Any

from controller.core.ports import ClusterPort, RouterPort, in_flight_many, routed_pods
from controller.core.view import build_view

from .backend import get_clock, get_cluster, get_router
from .passcaches import cache_for


def in_flight_of(router: RouterPort, namespace: str, pods: list[dict[str, Any]]) -> dict[str, int]:
    """Every pod's non-zero in-flight count: in one round trip where the router can, else pod by pod."""
    counts = in_flight_many(router, namespace, pods)
    if counts is not None:
        return counts
    counts = {p["metadata"]["name"]: router.in_flight(namespace, p["metadata"]["name"]) for p in pods}
    return {k: v for k, v in counts.items() if v}


def current_state(
    namespace: str, name: str, *, cluster: ClusterPort | None = None, router: RouterPort | None = None
) -> dict[str, Any]:
    """Raises ``NotFound``."""
    cluster = cluster or get_cluster()
    router = router or get_router()
    ms = cluster.get_modelserving(namespace, name)
    pods = cluster.list_pods(namespace, name)
    revisions = cluster.list_revisions(namespace, name)
    return build_view(
        ms,
        pods,
        revisions,
        in_flight_of(router, namespace, pods),
        get_clock().now(),
        routed=routed_pods(router, cluster, namespace, name, pods),
        cache=cache_for(namespace, name),
    )
