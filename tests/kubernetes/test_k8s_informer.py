"""The informer-style pod cache (``controller.k8s.informer``) against the API server double: one
LIST, then WATCH from its version with bookmarks, 410 -> relist, reconnects, deletes, and the cached
adapter's pod lists (shared objects, its own writes seen at once)."""

from __future__ import annotations

import kubernetes
import pytest

from controller.core import naming
from controller.core.observe import observe
from controller.core.ports import SharedObjects
from controller.k8s import KubernetesCluster
from controller.k8s.informer import CachedKubernetesCluster, RedisWrittenVersions, WrittenVersions, pod_informer
from tests import waiting
from tests.factories import modelserving, role

NS = "default"
PODS = "/v1/pods"  # the double's key of the pods resource


def manifest(name: str = "chat") -> dict:
    return modelserving(name=name, namespace=NS, replicas=1, roles=[role("decode", image="engine:v1", gpus=None)])


def pod(name: str, ms: str = "chat") -> dict:
    return {
        "metadata": {"name": name, "namespace": NS, "labels": {naming.LABEL_NAME: ms, naming.LABEL_ROLE: "decode"}},
        "spec": {"containers": [{"name": "engine", "image": "engine:v1"}]},
    }


def names(objs) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def pod_lists(apiserver) -> int:
    return len([c for c in apiserver.emu.list_calls("/pods") if c[1].endswith("/pods")])


def wait_until(predicate, what: str):
    return waiting.wait_until(predicate, what=what, timeout=5, interval=0.01)


@pytest.fixture
def plain(api_client) -> KubernetesCluster:
    cluster = KubernetesCluster(api_client)
    cluster.create_modelserving(manifest())
    cluster.create_modelserving(manifest("other"))
    return cluster


@pytest.fixture
def informer(api_client):
    made = pod_informer(api_client, backoff=(0.02, 0.1), idle_timeout=2.0)
    yield made
    made.stop(timeout=5)


def test_the_informer_lists_once_then_applies_watch_events_in_name_order(plain, informer, apiserver):
    plain.create_pod(pod("chat-1"))
    plain.create_pod(pod("other-0", ms="other"))
    informer.start()
    assert informer.wait_synced(5)
    assert names(informer.store.by_index(NS, "chat")) == ["chat-1"]
    plain.create_pod(pod("chat-0"))
    wait_until(lambda: names(informer.store.by_index(NS, "chat")) == ["chat-0", "chat-1"], "chat-0 in the store")
    assert names(informer.store.by_index(NS, "other")) == ["other-0"]
    assert informer.stats["lists"] == 1
    assert pod_lists(apiserver) == 1


def test_an_unchanged_pod_is_the_same_object_from_one_list_to_the_next_and_a_changed_one_is_new(plain, informer):
    plain.create_pod(pod("chat-0"))
    plain.create_pod(pod("chat-1"))
    informer.start().wait_synced(5)
    first = informer.store.by_index(NS, "chat")
    assert isinstance(first, SharedObjects)
    plain.patch_pod(NS, "chat-1", {"metadata": {"annotations": {"seen": "yes"}}})
    wait_until(
        lambda: informer.store.get(NS, "chat-1")["metadata"].get("annotations", {}).get("seen"), "the patch event"
    )
    second = informer.store.by_index(NS, "chat")
    assert second[0] is first[0]
    assert second[1] is not first[1]
    assert first[1]["metadata"].get("annotations", {}).get("seen") is None  # handed out, never changed


def test_a_deleted_pod_leaves_the_store(plain, informer):
    plain.create_pod(pod("chat-0"))
    plain.create_pod(pod("chat-1"))
    informer.start().wait_synced(5)
    plain.delete_pod(NS, "chat-0")
    wait_until(lambda: names(informer.store.by_index(NS, "chat")) == ["chat-1"], "chat-0 gone from the store")
    assert informer.store.get(NS, "chat-0") is None


def test_a_bookmark_moves_the_version_a_dropped_watch_resumes_from(plain, informer, apiserver):
    plain.create_pod(pod("chat-0"))
    informer.start().wait_synced(5)
    wait_until(lambda: apiserver.call(lambda: len(apiserver.emu.watchers)) == 1, "the watch to open")
    apiserver.call(apiserver.emu.touch)  # another resource's write: no pod event carries this version
    version = str(apiserver.call(lambda: apiserver.emu.rv))
    assert apiserver.call(apiserver.emu.bookmark) == 1
    wait_until(lambda: informer.stats["bookmarks"] == 1, "the bookmark")
    apiserver.call(apiserver.emu.drop_watches)
    wait_until(lambda: len(apiserver.emu.watch_calls("/pods")) == 2, "the watch to reopen")
    assert apiserver.emu.watch_calls("/pods")[1][2]["resourceVersion"] == version
    assert apiserver.emu.watch_calls("/pods")[0][2]["allowWatchBookmarks"] == "true"
    assert informer.stats["lists"] == 1


def test_a_watch_cut_mid_stream_reconnects_from_its_version_without_relisting(plain, informer, apiserver):
    plain.create_pod(pod("chat-0"))
    informer.start().wait_synced(5)
    wait_until(lambda: apiserver.call(lambda: len(apiserver.emu.watchers)) == 1, "the watch to open")
    apiserver.call(apiserver.emu.drop_watches, abort=True)
    plain.create_pod(pod("chat-1"))
    wait_until(lambda: names(informer.store.by_index(NS, "chat")) == ["chat-0", "chat-1"], "chat-1 after the cut")
    assert informer.stats["watches"] >= 2
    assert informer.stats["lists"] == 1
    assert informer.stats["expired"] == 0


def test_a_410_gone_relists_and_a_delete_the_watch_never_saw_leaves_the_store(plain, informer, apiserver):
    plain.create_pod(pod("chat-0"))
    plain.create_pod(pod("chat-1"))
    informer.start().wait_synced(5)
    kept = informer.store.get(NS, "chat-1")
    wait_until(lambda: apiserver.call(lambda: len(apiserver.emu.watchers)) == 1, "the watch to open")

    def lose_chat_0_and_compact() -> None:
        # chat-0 is removed with its event compacted away, as after a long disconnection.
        emu = apiserver.emu
        del emu.store[(PODS, NS, "chat-0")]
        emu.rv += 1
        emu.compact()
        emu.drop_watches()

    apiserver.call(lose_chat_0_and_compact)
    wait_until(lambda: informer.stats["lists"] == 2, "the relist")
    wait_until(lambda: names(informer.store.by_index(NS, "chat")) == ["chat-1"], "chat-0 gone after the relist")
    assert informer.stats["expired"] == 1
    assert informer.store.get(NS, "chat-1") is kept  # unchanged across the relist: the same object


def test_the_cached_adapter_lists_shared_pods_and_sees_its_own_writes_at_once(plain, informer, api_client, apiserver):
    plain.create_pod(pod("chat-0"))
    informer.start().wait_synced(5)
    cluster = CachedKubernetesCluster(api_client, pods=informer)
    first = cluster.list_pods(NS, "chat")
    assert isinstance(first, SharedObjects) and names(first) == ["chat-0"]
    lists = pod_lists(apiserver)
    cluster.create_pod(pod("chat-1"))
    assert names(cluster.list_pods(NS, "chat")) == ["chat-0", "chat-1"]
    cluster.delete_pod(NS, "chat-0")
    assert names(cluster.list_pods(NS, "chat")) == ["chat-1"]
    cluster.set_pod_condition(NS, "chat-1", {"type": naming.CONDITION_INPLACE_READY, "status": "True"})
    conditions = cluster.list_pods(NS, "chat")[0]["status"]["conditions"]
    assert {"type": naming.CONDITION_INPLACE_READY, "status": "True"}.items() <= conditions[-1].items()
    assert pod_lists(apiserver) == lists  # every list above came from the store
    assert cluster.cache_misses == 0


def test_a_pass_observes_an_unchanged_list_from_the_cache_as_the_same_groups(plain, informer, api_client):
    for i in range(3):
        plain.create_pod(pod(f"chat-0-decode-0-{i}"))
    informer.start().wait_synced(5)
    cluster = CachedKubernetesCluster(api_client, pods=informer)
    one = cluster.list_pods(NS, "chat")
    two = cluster.list_pods(NS, "chat")
    assert all(a is b for a, b in zip(one, two, strict=True))
    assert observe(two).groups == observe(one).groups


def test_without_a_synced_cache_the_adapter_lists_from_the_api_server_at_once(plain, api_client):
    never_started = pod_informer(api_client)
    plain.create_pod(pod("chat-0"))
    cluster = CachedKubernetesCluster(api_client, pods=never_started, wait_seconds=60)
    assert names(cluster.list_pods(NS, "chat")) == ["chat-0"]
    assert cluster.cache_misses == 1


def test_an_informer_whose_watch_thread_is_gone_is_not_read_even_though_it_synced_once(plain, informer, api_client):
    """A cache whose watch thread is gone (stopped, or inherited by a forked process) would never
    change again: the adapter lists from the API server instead."""
    informer.start().wait_synced(5)
    informer.stop(timeout=5)
    informer._stop.clear()  # as in a process forked after the start: the thread gone, nothing stopped
    plain.create_pod(pod("chat-0"))
    cluster = CachedKubernetesCluster(api_client, pods=informer)
    assert names(cluster.list_pods(NS, "chat")) == ["chat-0"]
    assert cluster.cache_misses == 1


def test_a_pod_write_of_another_worker_process_is_waited_for_through_the_shared_versions(
    plain, informer, api_client, apiserver
):
    """Two adapters, two caches (two worker processes), one record of written versions (Redis in
    the live app): a pass in the second process sees the first one's write, or reads the API server."""
    informer.start().wait_synced(5)
    shared = WrittenVersions()
    other_informer = pod_informer(api_client)
    other = CachedKubernetesCluster(api_client, pods=other_informer, written=shared)
    mine = CachedKubernetesCluster(api_client, pods=informer, written=shared)
    # The other process's cache is not running: its write can only be seen through the version.
    created = other.create_pod(pod("chat-0"))
    assert shared.newest(NS, "chat") == int(created["metadata"]["resourceVersion"])
    assert names(mine.list_pods(NS, "chat")) == ["chat-0"]
    assert mine.cache_misses == 0  # waited for its own cache to hold the write


def test_redis_shares_the_written_versions_between_processes(redis_client):
    one = RedisWrittenVersions(redis_client, prefix=redis_client.test_prefix)
    two = RedisWrittenVersions(redis_client, prefix=redis_client.test_prefix)
    assert two.newest(NS, "chat") is None
    one.note(NS, "chat", 41)
    assert two.newest(NS, "chat") == 41


def test_a_group_rolling_update_converges_with_every_pass_reading_pods_from_the_cache(informer, api_client, apiserver):
    from test_k8s_rollout import Clock, converged_on, drive, modelserving

    core = kubernetes.client.CoreV1Api(api_client)
    informer.start().wait_synced(5)
    cluster = CachedKubernetesCluster(api_client, pods=informer)
    clock = Clock()
    cluster.create_modelserving(
        modelserving({"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}})
    )
    drive(cluster, core, clock, until=lambda: converged_on(cluster, "engine:v1"))
    first_uids = {p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    cluster.patch_modelserving(NS, "chat", {"spec": {"template": modelserving({}, "engine:v2")["spec"]["template"]}})
    drive(cluster, core, clock, until=lambda: converged_on(cluster, "engine:v2"))
    assert not first_uids & {p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    # Only the informer's LIST and the test's kubelet listed pods: no pass did.
    pod_lists_by_label = [c for c in apiserver.emu.list_calls("/pods") if c[1].endswith("/pods")]
    assert all(c[2].get("labelSelector") == naming.LABEL_NAME for c in pod_lists_by_label)
    assert cluster.cache_misses == 0


def test_the_runtime_gives_the_controllers_passes_one_cached_adapter_per_process_when_enabled(
    api_client, settings, monkeypatch
):
    from controller.runtime import backend

    settings.ROLLOUTUI_BACKEND = "kubernetes"
    monkeypatch.setattr(backend, "_api_client", lambda: api_client)
    settings.ROLLOUTUI_KUBERNETES_POD_CACHE = False
    assert type(backend.get_cluster(actor="controller")) is KubernetesCluster
    settings.ROLLOUTUI_KUBERNETES_POD_CACHE = True
    backend._pod_cache_of.cache_clear()
    try:
        one, two = backend.get_cluster(actor="controller"), backend.get_cluster(actor="controller")
        assert isinstance(one, CachedKubernetesCluster) and one is not two
        assert one.pods is two.pods and one.written is two.written  # the process's cache, shared
        assert type(backend.get_cluster(actor="operator")) is KubernetesCluster  # the dashboard reads as before
    finally:
        informer, _ = backend._pod_cache()
        informer.stop(timeout=5)
        backend._pod_cache_of.cache_clear()
