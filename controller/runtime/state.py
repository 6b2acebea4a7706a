"""The state view of one ModelServing built from the live objects (``controller.core.view``).

The same serializer as the reconcile pass's ``ReconcileResult.view``, the REST GET and the websocket.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from controller.core.observe import Observed, observe
from controller.core.passcache import PassCache
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


class StateRead(NamedTuple):
    """The view and what it was built from, for a caller that derives more from the same read (the
    detail page's probe advice measures load times on these pods instead of listing them again)."""

    view: dict[str, Any]
    modelserving: dict[str, Any]
    observed: Observed
    cache: PassCache


def read_state(
    namespace: str, name: str, *, cluster: ClusterPort | None = None, router: RouterPort | None = None
) -> StateRead:
    """``current_state`` with the objects it read. Raises ``NotFound``."""
    cluster = cluster or get_cluster()
    router = router or get_router()
    ms = cluster.get_modelserving(namespace, name)
    pods = cluster.list_pods(namespace, name)
    revisions = cluster.list_revisions(namespace, name)
    in_flight = in_flight_of(router, namespace, pods)
    cache = cache_for(namespace, name)
    # What build_view would observe itself (the same call), kept for the caller.
    observed = observe(pods, in_flight, cache)
    view = build_view(
        ms,
        pods,
        revisions,
        in_flight,
        get_clock().now(),
        observed=observed,
        routed=routed_pods(router, cluster, namespace, name, pods),
        cache=cache,
    )
    return StateRead(view, ms, observed, cache)


def current_state(
    namespace: str, name: str, *, cluster: ClusterPort | None = None, router: RouterPort | None = None
) -> dict[str, Any]:
    """Raises ``NotFound``."""
    return read_state(namespace, name, cluster=cluster, router=router).view
