"""The services reach the simulated cluster's extras through the runtime's ``SimulatorPort``, which
the Kubernetes backend does not provide, and never import ``controller.simcluster``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controller.core.controls import ControlError
from controller.core.listing import ms_summary
from controller.core.ports import SimulatorPort
from controller.runtime.reconciler import run_reconcile
from controller.runtime.simulator import get_simulator
from controller.simcluster.database.store import DatabaseCluster
from rolloutui.services import simulation, state

from .helpers import manifest

SERVICES = Path(__file__).resolve().parents[2] / "rolloutui" / "services"


def test_the_embedded_backend_hands_out_the_simulator_port_and_kubernetes_none(settings):
    settings.ROLLOUTUI_BACKEND = "sim"
    assert isinstance(get_simulator(), SimulatorPort)
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    assert get_simulator() is None


@pytest.mark.django_db
def test_the_embedded_cluster_lists_the_core_row_of_each_modelserving(settings):
    settings.ROLLOUTUI_BACKEND = "sim"
    cluster = DatabaseCluster(actor="test")
    cluster.add_node(8)
    cluster.create_modelserving(manifest("b-small"))
    cluster.create_modelserving(manifest("a-small", replicas=1))
    run_reconcile("default", "a-small")
    expected = [ms_summary(cluster.get_modelserving("default", n)) for n in ("a-small", "b-small")]
    assert cluster.list_summaries() == expected
    assert state.list_summaries() == expected
    assert state.list_summaries(within={"elsewhere"}) == []
    assert state.modelserving_namespaces() == {"default"}


class _ListingOnly:
    def __init__(self, objects):
        self.objects = objects

    def list_modelservings(self, namespace=None):
        return [o for o in self.objects if namespace in (None, o["metadata"]["namespace"])]


def test_on_kubernetes_the_list_rows_are_the_core_row_of_the_listed_objects(settings, monkeypatch):
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    objects = [manifest("b"), manifest("a")]
    objects[0]["metadata"]["namespace"] = "team"
    monkeypatch.setattr(state, "get_cluster", lambda: _ListingOnly(objects))
    assert state.list_summaries() == [ms_summary(objects[1]), ms_summary(objects[0])]
    assert state.list_summaries(within={"team"}) == [ms_summary(objects[0])]
    assert state.modelserving_namespaces() == {"default", "team"}


def test_on_kubernetes_the_simulator_services_refuse_naming_the_backend(settings):
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    with pytest.raises(ControlError) as refused:
        simulation.list_nodes()
    assert refused.value.field == "backend"
    assert "kubernetes" in str(refused.value)


def test_no_service_module_imports_the_simulated_cluster():
    offenders = []
    for path in sorted(SERVICES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("controller.simcluster")]
    assert offenders == []


@pytest.mark.django_db
def test_capacity_reads_the_simulated_load_through_the_port_and_none_on_kubernetes(settings, monkeypatch):
    from controller.models import SimTraffic
    from rolloutui.services import capacity

    settings.ROLLOUTUI_BACKEND = "sim"
    cluster = DatabaseCluster(actor="test")
    cluster.add_node(8)
    cluster.create_modelserving(manifest())
    run_reconcile("default", "small")
    assert cluster.traffic_of("default", "small") is None
    SimTraffic.objects.create(namespace="default", name="small", rps=2, duration_low=4, duration_high=6)
    assert cluster.traffic_of("default", "small")["rps"] == 2
    signals = capacity.capacity("default", "small")
    assert signals["backend"] == "sim" and signals["traffic"]["rps"] == 2

    settings.ROLLOUTUI_BACKEND = "kubernetes"
    monkeypatch.setattr("rolloutui.services.cluster.get_cluster", lambda: cluster)
    monkeypatch.setattr(capacity.state, "get_state", lambda ns, name: {"instances": []})
    signals = capacity.capacity("default", "small")
    assert signals["backend"] == "kubernetes" and signals["traffic"] is None
