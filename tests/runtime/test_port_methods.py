"""Every method a port offers is a method of its protocol (``controller.core.ports``), and every
adapter implements each one: the reconcile pass and the runtime call them without asking whether
they exist. A backend that cannot answer says so through the method (None: "not known here";
nothing done), as the protocol's docstrings say."""

from __future__ import annotations

import inspect

import pytest

from controller.core import ports
from controller.core.gpu import GpuFigures
from controller.k8s.cluster import KubernetesCluster
from controller.k8s.informer import CachedKubernetesCluster
from controller.k8s.kserve_cache import CachedWorkloadCluster
from controller.k8s.router import RedisInFlightRouter
from controller.k8s.verifier import HttpVerifier
from controller.records.figures import DatabaseMetrics
from controller.records.prometheus import PrometheusMetrics
from controller.runtime.analysis import AnalysisMetrics, RefusedQueries
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.kserve.router import InferenceServiceRouter
from controller.simcluster.memory.router import SimRouter
from controller.simcluster.memory.store import InMemoryStore
from controller.simcluster.routing import SimulatedVerifier
from tests.core.harness import CountingRouter, MiniCluster

ADAPTERS = [
    (ports.ClusterPort, KubernetesCluster),
    (ports.ClusterPort, CachedKubernetesCluster),
    (ports.ClusterPort, CachedWorkloadCluster),
    (ports.ClusterPort, DatabaseCluster),
    (ports.ClusterPort, InMemoryStore),
    (ports.ClusterPort, MiniCluster),
    (ports.RouterPort, RedisInFlightRouter),
    (ports.RouterPort, SimRouter),
    (ports.RouterPort, InferenceServiceRouter),
    (ports.RouterPort, ports.NoRouter),
    (ports.RouterPort, CountingRouter),
    (ports.MetricsPort, GpuFigures),
    (ports.MetricsPort, SimRouter),
    (ports.MetricsPort, DatabaseMetrics),
    (ports.MetricsPort, PrometheusMetrics),
    (ports.MetricsPort, AnalysisMetrics),
    (ports.MetricsPort, RefusedQueries),
    (ports.VerifierPort, HttpVerifier),
    (ports.VerifierPort, SimulatedVerifier),
    (ports.SimulatorPort, DatabaseCluster),
]


def protocol_methods(protocol: type) -> dict[str, inspect.Signature]:
    """The methods a protocol declares, by name, with their signatures."""
    return {
        name: inspect.signature(value)
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def accepts(declared: inspect.Signature, implemented: inspect.Signature) -> bool:
    """Whether a call written against ``declared`` works on ``implemented``: every parameter the
    protocol names is accepted under that name (or by ``*args`` / ``**kwargs``)."""
    params = implemented.parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()) and any(
        p.kind is p.VAR_POSITIONAL for p in params.values()
    ):
        return True
    return all(name in params for name in declared.parameters if name != "self")


@pytest.mark.parametrize(
    ("protocol", "adapter"), ADAPTERS, ids=[f"{a.__name__} as a {p.__name__}" for p, a in ADAPTERS]
)
def test_every_adapter_implements_every_method_of_its_port_with_the_protocols_parameters(protocol, adapter):
    declared = protocol_methods(protocol)
    missing = sorted(name for name in declared if not callable(getattr(adapter, name, None)))
    assert missing == [], f"{adapter.__name__} lacks {missing}"
    differ = sorted(
        name
        for name, signature in declared.items()
        if not accepts(signature, inspect.signature(getattr(adapter, name)))
    )
    assert differ == [], f"{adapter.__name__}'s {differ} do not take the protocol's parameters"


def test_the_optional_port_methods_are_part_of_their_protocols():
    # The methods the pass once probed for with getattr / hasattr.
    assert {"in_flight_many", "routable_pods"} <= set(protocol_methods(ports.RouterPort))
    assert {"list_owned", "annotate_revision", "report_interrupted", "routable_pods", "route_canary_weight"} <= set(
        protocol_methods(ports.ClusterPort)
    )
