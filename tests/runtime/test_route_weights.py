"""After a reconcile pass the runtime hands a canary weight to the Kubernetes adapter's traffic
routing (``controller.k8s.traffic_routing.sync``): only on the Kubernetes backend, only when the
status has a weight, and a refused write is logged, never failing the pass."""

from __future__ import annotations

import logging

import pytest

from controller.core.ports import ClusterError
from controller.k8s import traffic_routing
from controller.runtime import reconciler

WEIGHTED = {"canary": {"stable": "a", "revision": "b", "weight": 10}}


@pytest.fixture
def synced(monkeypatch):
    calls = []
    monkeypatch.setattr(traffic_routing, "sync", lambda cluster, ns, name, status: calls.append((ns, name, status)))
    return calls


def test_on_kubernetes_a_weight_in_the_status_is_routed(settings, synced):
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    reconciler._route_weights(object(), "default", "chat", WEIGHTED)
    assert synced == [("default", "chat", WEIGHTED)]


@pytest.mark.parametrize(
    ("backend", "status"),
    [("sim", WEIGHTED), ("kubernetes", {"canary": {"stable": "a", "revision": "b"}}), ("kubernetes", {})],
    ids=["the embedded cluster routes by itself", "no setWeight step", "no canary"],
)
def test_nothing_is_routed_without_kubernetes_or_without_a_weight(settings, synced, backend, status):
    settings.ROLLOUTUI_BACKEND = backend
    reconciler._route_weights(object(), "default", "chat", status)
    assert synced == []


def test_a_refused_route_write_is_logged_and_the_pass_goes_on(settings, monkeypatch, caplog):
    settings.ROLLOUTUI_BACKEND = "kubernetes"

    def refuse(*args):
        raise ClusterError("the cluster does not serve HTTPRoute")

    monkeypatch.setattr(traffic_routing, "sync", refuse)
    with caplog.at_level(logging.WARNING, logger="controller.runtime.reconciler"):
        reconciler._route_weights(object(), "default", "chat", WEIGHTED)
    assert "canary weight of default/chat not routed: the cluster does not serve HTTPRoute" in caplog.text
