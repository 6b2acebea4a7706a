"""A setWeight step needs ``canary.trafficRouting`` on Kubernetes (the weight is written to an
HTTPRoute there): validate and apply refuse it naming the field; the embedded cluster routes by
weight itself and accepts it."""

from __future__ import annotations

import pytest
import yaml

from rolloutui.services import cluster, manifests
from tests.factories import group_strategy, with_canary

from .helpers import manifest, unique_name

pytestmark = pytest.mark.django_db


def weighted_text(routing=None) -> str:
    m = manifest(unique_name("w"))
    m["spec"]["rolloutStrategy"] = with_canary(
        group_strategy(maxUnavailable=1), [{"setPartition": "75%"}, {"setWeight": 10}]
    )
    if routing is not None:
        m["spec"]["rolloutStrategy"]["canary"]["trafficRouting"] = routing
    return yaml.safe_dump(m)


@pytest.fixture
def on_kubernetes(settings, monkeypatch):
    """The Kubernetes backend's validation; the embedded cluster answers whether the object exists."""
    sim = cluster.get_cluster()
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    monkeypatch.setattr(manifests, "get_cluster", lambda: sim)


def test_a_set_weight_step_without_traffic_routing_is_refused_on_kubernetes_naming_the_field(on_kubernetes):
    out = manifests.validate(weighted_text())
    (error,) = out["errors"]
    assert error["path"] == "spec.rolloutStrategy.canary.trafficRouting"
    assert "required on Kubernetes with setWeight steps" in error["message"]
    assert manifests.validate(weighted_text({"gatewayAPI": {"httpRoute": "chat-route"}}))["errors"] == []


def test_the_embedded_cluster_accepts_a_set_weight_step_without_traffic_routing():
    assert manifests.validate(weighted_text())["errors"] == []
