"""The watch-fed cache of InferenceServices and their Deployments (``controller.k8s.kserve_cache``)
against the API server double: the InferenceService's state read through the cached adapter is the
state read from the API server, repeated reads send no LIST or GET of those kinds, a control's
patch is seen by the next read, and a change of the InferenceService or of one of its Deployments
names the InferenceService to ``on_change`` (what tells its open pages)."""

from __future__ import annotations

import threading

import pytest

from controller.core.kserve import controls
from controller.k8s.kserve_cache import CachedWorkloadCluster, WorkloadCache
from controller.runtime.kserve import state as runtime_kserve
from tests import waiting
from tests.kubernetes.test_k8s_kserve import world  # noqa: F401 (the fixture)

ISVC_PATH = "inferenceservices"
DEPLOYMENT_PATH = "/deployments"


class Changes:
    def __init__(self):
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, namespace: str, name: str) -> None:
        with self.lock:
            self.seen.append((namespace, name))

    def count(self) -> int:
        with self.lock:
            return len(self.seen)


@pytest.fixture
def cache(api_client):
    changes = Changes()
    made = WorkloadCache(api_client, on_change=changes, backoff=(0.02, 0.1), idle_timeout=2.0)
    made.changes = changes
    yield made
    made.stop(timeout=5)


def reads(apiserver, part: str) -> int:
    gets = [c for c in apiserver.emu.calls if c[0] == "GET" and "watch" not in c[2] and part in c[1]]
    return len(gets)


def state(cluster):
    return runtime_kserve.inferenceservice_state("default", "llm", cluster=cluster, now=1000.0)


def test_the_cached_adapter_reads_the_same_state_without_asking_the_api_server_again(
    world,  # noqa: F811
    cache,
    api_client,
    apiserver,
):
    _, plain = world
    cache.start()
    assert cache.wait_synced(5)
    cached = CachedWorkloadCluster(api_client, workloads=cache)
    assert state(cached) == state(plain)
    before = (reads(apiserver, ISVC_PATH), reads(apiserver, DEPLOYMENT_PATH))
    for _ in range(5):
        state(cached)
        runtime_kserve.list_inferenceservices(cluster=cached)
    assert (reads(apiserver, ISVC_PATH), reads(apiserver, DEPLOYMENT_PATH)) == before
    assert [d["metadata"]["name"] for d in cached.list_objects("Deployment", "default", owner="llm")] == [
        d["metadata"]["name"] for d in plain.list_objects("Deployment", "default", owner="llm")
    ]


def test_a_controls_patch_is_seen_by_the_next_read_and_names_the_inferenceservice_to_on_change(
    world,  # noqa: F811
    cache,
    api_client,
):
    cache.start()
    assert cache.wait_synced(5)
    waiting.wait_until(lambda: ("default", "llm") in cache.changes.seen, what="the listed InferenceService", timeout=5)
    cached = CachedWorkloadCluster(api_client, workloads=cache)
    isvc = cached.get_object("InferenceService", "default", "llm")
    config = runtime_kserve.deploy_config(cached)
    heard = cache.changes.count()
    cached.patch_object(
        "InferenceService",
        "default",
        "llm",
        controls.start_canary(isvc, config, percent=20, image="vllm/vllm-openai:v0.9.2"),
        resource_version=isvc["metadata"]["resourceVersion"],
    )
    after = cached.get_object("InferenceService", "default", "llm")
    assert after["spec"] != isvc["spec"]
    assert after["metadata"]["resourceVersion"] != isvc["metadata"]["resourceVersion"]
    assert cache.changes.count() > heard and cache.changes.seen[-1] == ("default", "llm")

    # A Deployment's change (its pause) names the InferenceService it belongs to.
    deployment = cached.list_objects("Deployment", "default", owner="llm")[0]
    heard = cache.changes.count()
    cached.patch_object("Deployment", "default", deployment["metadata"]["name"], {"spec": {"paused": True}})
    assert cached.get_object("Deployment", "default", deployment["metadata"]["name"])["spec"]["paused"] is True
    assert cache.changes.count() > heard and cache.changes.seen[-1] == ("default", "llm")


def test_the_runtime_reads_inferenceservices_through_the_processs_cache_when_enabled(
    world,  # noqa: F811
    api_client,
    settings,
    monkeypatch,
):
    from controller.k8s import KubernetesCluster
    from controller.runtime import backend

    settings.ROLLOUTUI_BACKEND = "kubernetes"
    monkeypatch.setattr(backend, "_api_client", lambda: api_client)
    settings.ROLLOUTUI_KUBERNETES_POD_CACHE = False
    settings.ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE = False
    assert type(backend.get_cluster()) is KubernetesCluster
    settings.ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE = True
    backend._workload_cache.cache_clear()
    try:
        web, other = backend.get_cluster(), backend.get_cluster()
        assert isinstance(web, CachedWorkloadCluster) and web.workloads is other.workloads
        assert web.workloads.wait_synced(5)
        assert state(web) == state(world[1])
        # The reconcile passes read no InferenceService: their adapter has no such cache.
        assert not isinstance(backend.get_cluster(actor="controller"), CachedWorkloadCluster)
    finally:
        backend._workload_cache().stop(timeout=5)
        backend._workload_cache.cache_clear()


def test_the_inferenceservice_page_reads_the_api_too_only_on_kubernetes_without_the_cache(settings):
    from rolloutui.services import cluster

    settings.ROLLOUTUI_BACKEND = "sim"
    assert cluster.inferenceservice_changes_pushed() is True
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    settings.ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE = False
    assert cluster.inferenceservice_changes_pushed() is False
    settings.ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE = True
    assert cluster.inferenceservice_changes_pushed() is True
