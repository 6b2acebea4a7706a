"""The workload read port (``controller.core.ports.WorkloadReadPort``): every backend reads
ModelServings and InferenceServices through the same methods, so the InferenceService pages, API
and periodic passes (``controller.runtime.kserve``) work on each of them."""

from __future__ import annotations

import pytest

from controller.core.ports import NoRouter, NotFound, WorkloadReadPort
from controller.k8s.cluster import KubernetesCluster
from controller.k8s.informer import CachedKubernetesCluster
from controller.k8s.kserve_cache import CachedWorkloadCluster
from controller.runtime.kserve import state as runtime_kserve
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.memory.store import InMemoryStore

from .test_kserve_strategy import isvc
from .test_kserve_view import cluster, gpu_model

BACKENDS = {
    "the embedded database cluster": DatabaseCluster,
    "the in-memory simulator's store": InMemoryStore,
    "the Kubernetes adapter": KubernetesCluster,
    "the Kubernetes adapter with its pod informer": CachedKubernetesCluster,
    "the Kubernetes adapter with its workload cache": CachedWorkloadCluster,
}


@pytest.mark.parametrize("backend", BACKENDS.values(), ids=BACKENDS.keys())
def test_every_backend_implements_the_workload_read_port(backend):
    assert issubclass(backend, WorkloadReadPort)


class ModelServingsOnly:
    """A cluster adapter that reads ModelServings but not the other workload objects."""

    def list_modelservings(self, namespace=None):
        return []


def test_a_cluster_without_the_workload_reads_lists_no_inferenceservice_and_says_why_on_a_read():
    other = ModelServingsOnly()
    assert not runtime_kserve.supported(other)
    assert runtime_kserve.list_inferenceservices(cluster=other) == []
    with pytest.raises(NotFound, match=runtime_kserve.NOT_SUPPORTED):
        runtime_kserve.inferenceservice_state("default", "llm", cluster=other, router=NoRouter(), now=0.0)


def test_the_runtime_reads_an_inferenceservice_from_the_in_memory_simulators_store():
    c = cluster(isvc({**gpu_model(), "minReplicas": 2}))
    c.loop.run_until(60)
    assert runtime_kserve.list_inferenceservices(cluster=c.store)[0]["metadata"]["name"] == "llm"
    state = runtime_kserve.inferenceservice_state(
        "default", "llm", cluster=c.store, router=NoRouter(), now=c.loop.now()
    )
    assert state["converged"]
    assert [(i["state"], i["gate"]) for i in state["instances"]] == [("Ready", "Serving")] * 2
