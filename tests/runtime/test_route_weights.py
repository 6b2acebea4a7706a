"""After a reconcile pass the runtime hands a canary weight to the cluster port
(``ClusterPort.route_canary_weight``), whatever the backend: only when the status has a weight, and
a refused write is logged, never failing the pass. The Kubernetes adapter writes the HTTPRoute
(``controller.k8s.traffic_routing.sync``); the embedded clusters' routers read the weight from the
status, so theirs does nothing."""

from __future__ import annotations

import logging

import pytest

from controller.core.ports import ClusterError
from controller.k8s import KubernetesCluster, traffic_routing
from controller.runtime import reconciler

WEIGHTED = {"canary": {"stable": "a", "revision": "b", "weight": 10}}


class RoutingCluster:
    """The traffic half of a cluster port: notes each weight it is asked to route, or refuses."""

    def __init__(self, refusal: str | None = None) -> None:
        self.routed: list[tuple[str, str, dict]] = []
        self.refusal = refusal

    def route_canary_weight(self, namespace, name, status):
        if self.refusal:
            raise ClusterError(self.refusal)
        self.routed.append((namespace, name, status))


def test_a_weight_in_the_status_is_handed_to_the_cluster_port():
    cluster = RoutingCluster()
    reconciler._route_weights(cluster, "default", "chat", WEIGHTED)
    assert cluster.routed == [("default", "chat", WEIGHTED)]


@pytest.mark.parametrize(
    "status",
    [{"canary": {"stable": "a", "revision": "b"}}, {}, None],
    ids=["no setWeight step", "no canary", "no status"],
)
def test_nothing_is_routed_without_a_weight(status):
    cluster = RoutingCluster()
    reconciler._route_weights(cluster, "default", "chat", status)
    assert cluster.routed == []


def test_a_refused_route_write_is_logged_and_the_pass_goes_on(caplog):
    cluster = RoutingCluster(refusal="the cluster does not serve HTTPRoute")
    with caplog.at_level(logging.WARNING, logger="controller.runtime.reconciler"):
        reconciler._route_weights(cluster, "default", "chat", WEIGHTED)
    assert "canary weight of default/chat not routed: the cluster does not serve HTTPRoute" in caplog.text


def test_the_kubernetes_adapter_routes_the_weight_through_the_httproute_sync(monkeypatch):
    synced = []
    monkeypatch.setattr(traffic_routing, "sync", lambda cluster, ns, name, status: synced.append((ns, name, status)))
    adapter = KubernetesCluster.__new__(KubernetesCluster)  # no API server is asked: sync is replaced
    adapter.route_canary_weight("default", "chat", WEIGHTED)
    assert synced == [("default", "chat", WEIGHTED)]
