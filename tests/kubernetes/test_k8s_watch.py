"""ClusterWatcher against the API server double: events reach enqueue, through drops and 410s."""

from __future__ import annotations

import threading
import time

import kubernetes
import pytest

from controller.core import naming
from controller.k8s import ClusterWatcher, KubernetesCluster
from controller.k8s.watch import owner_of
from tests import waiting
from tests.factories import modelserving, role

NS = "default"


class Recorder:
    """The enqueue callback: remembers every (namespace, name) and lets a test wait for one."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self._cond = threading.Condition()

    def __call__(self, namespace: str, name: str) -> None:
        with self._cond:
            self.calls.append((namespace, name))
            self._cond.notify_all()

    def wait_for(self, key: tuple[str, str], *, after: int = 0, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while key not in self.calls[after:]:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{key} was not enqueued within {timeout}s; got {self.calls[after:]}")
                self._cond.wait(remaining)


def ms(name: str) -> dict:
    return modelserving(
        name=name, namespace=NS, replicas=1, roles=[role("a", image="i", container_name="c", gpus=None)]
    )


def wait_until(predicate, timeout: float = 5.0, message: str = "condition") -> None:
    waiting.wait_until(predicate, what=message, timeout=timeout, interval=0.02)


@pytest.fixture
def cluster(api_client) -> KubernetesCluster:
    return KubernetesCluster(api_client)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def watcher(api_client, recorder):
    w = ClusterWatcher(api_client, recorder, backoff=(0.05, 0.2), idle_timeout=2.0)
    yield w
    w.stop(timeout=5)


def test_the_watch_enqueues_existing_modelservings_at_start_and_every_change_after(cluster, watcher, recorder):
    cluster.create_modelserving(ms("before"))
    watcher.start()
    recorder.wait_for((NS, "before"))
    seen = len(recorder.calls)
    cluster.create_modelserving(ms("after"))
    recorder.wait_for((NS, "after"), after=seen)
    seen = len(recorder.calls)
    cluster.patch_modelserving(NS, "before", {"spec": {"paused": True}})
    recorder.wait_for((NS, "before"), after=seen)


def test_a_status_only_update_enqueues_nothing_but_a_spec_change_does(cluster, watcher, recorder, apiserver):
    created = cluster.create_modelserving(ms("chat"))
    watcher.start()
    recorder.wait_for((NS, "chat"))
    wait_until(lambda: len(apiserver.emu.watchers) >= 2, message="both watches open")
    seen = len(recorder.calls)
    # The controller's own status write: generation unchanged, so no new pass is asked for.
    cluster.replace_modelserving_status(
        NS, "chat", {"replicas": 1}, resource_version=created["metadata"]["resourceVersion"]
    )
    wait_until(lambda: watcher.stats["modelservings"]["events"] >= 1, message="status event seen")
    assert recorder.calls[seen:] == []
    cluster.patch_modelserving(NS, "chat", {"spec": {"replicas": 2}})
    recorder.wait_for((NS, "chat"), after=seen)


def test_a_pod_event_enqueues_the_modelserving_named_by_its_label(api_client, watcher, recorder):
    watcher.start()
    wait_until(lambda: watcher.stats["pods"]["watches"] >= 1, message="pod watch open")
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": "chat-0-a-0-0", "labels": {naming.LABEL_NAME: "chat"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    )
    recorder.wait_for((NS, "chat"))
    assert watcher.stats["pods"]["events"] >= 1


def test_pods_of_other_workloads_enqueue_nothing(api_client, watcher, recorder, apiserver):
    watcher.start()
    wait_until(lambda: watcher.stats["pods"]["watches"] >= 1, message="pod watch open")
    core = kubernetes.client.CoreV1Api(api_client)
    core.create_namespaced_pod(
        NS, {"metadata": {"name": "nginx"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    )
    core.create_namespaced_pod(
        NS,
        {
            "metadata": {"name": "ours", "labels": {naming.LABEL_NAME: "ours"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    )
    recorder.wait_for((NS, "ours"))
    assert all(name != "nginx" for _, name in recorder.calls)
    # The pod watch asked the server for our pods only.
    assert all(c[2].get("labelSelector") == naming.LABEL_NAME for c in apiserver.emu.watch_calls("/pods"))


def test_a_pod_maps_to_its_modelserving_by_label_or_else_by_controller_owner_reference():
    labelled = {"metadata": {"namespace": "ns", "name": "p", "labels": {naming.LABEL_NAME: "chat"}}}
    owned = {
        "metadata": {
            "namespace": "ns",
            "name": "p",
            "ownerReferences": [
                {
                    "apiVersion": naming.API_VERSION,
                    "kind": "ModelServing",
                    "name": "chat",
                    "uid": "u",
                    "controller": True,
                }
            ],
        }
    }
    foreign = {
        "metadata": {
            "namespace": "ns",
            "name": "p",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u"}],
        }
    }
    assert owner_of(labelled) == ("ns", "chat")
    assert owner_of(owned) == ("ns", "chat")
    assert owner_of(foreign) is None
    assert owner_of({"metadata": {"name": "bare"}}) is None


def test_the_watch_reconnects_after_the_server_cuts_the_connection(cluster, watcher, recorder, apiserver):
    cluster.create_modelserving(ms("first"))
    watcher.start()
    recorder.wait_for((NS, "first"))
    wait_until(lambda: len(apiserver.emu.watchers) >= 2, message="both watches open")
    watches_before = len(apiserver.emu.watch_calls("/modelservings"))

    assert apiserver.call(apiserver.emu.drop_watches, abort=True) >= 1
    wait_until(lambda: watcher.stats["modelservings"]["errors"] >= 1, message="the broken stream noticed")
    seen = len(recorder.calls)
    cluster.create_modelserving(ms("second"))
    recorder.wait_for((NS, "second"), after=seen)
    assert len(apiserver.emu.watch_calls("/modelservings")) > watches_before
    # It resumed from the version it had reached (no relist needed after a plain disconnect).
    assert watcher.stats["modelservings"]["lists"] == 1
    resumed = apiserver.emu.watch_calls("/modelservings")[-1]
    assert resumed[2].get("resourceVersion")


def test_the_watch_continues_after_the_server_ends_the_stream_cleanly(cluster, watcher, recorder, apiserver):
    watcher.start()
    wait_until(lambda: len(apiserver.emu.watchers) >= 2, message="both watches open")
    watches_before = len(apiserver.emu.watch_calls("/modelservings"))
    apiserver.call(apiserver.emu.drop_watches)
    wait_until(lambda: len(apiserver.emu.watch_calls("/modelservings")) > watches_before, message="watch re-opened")
    cluster.create_modelserving(ms("later"))
    recorder.wait_for((NS, "later"))


def test_an_expired_resource_version_makes_the_watch_relist_and_carry_on(cluster, watcher, recorder, apiserver):
    cluster.create_modelserving(ms("old"))
    watcher.start()
    recorder.wait_for((NS, "old"))
    wait_until(lambda: len(apiserver.emu.watchers) >= 2, message="both watches open")
    assert watcher.stats["modelservings"]["lists"] == 1

    # etcd compacted the history: every version the watch holds is now too old (410 Gone).
    apiserver.call(apiserver.emu.compact)
    seen = len(recorder.calls)
    apiserver.call(apiserver.emu.drop_watches)
    wait_until(lambda: watcher.stats["modelservings"]["expired"] >= 1, message="410 noticed")
    wait_until(lambda: watcher.stats["modelservings"]["lists"] >= 2, message="relisted")
    recorder.wait_for((NS, "old"), after=seen)  # the relist enqueues everything again

    seen = len(recorder.calls)
    cluster.create_modelserving(ms("new"))
    recorder.wait_for((NS, "new"), after=seen)


def test_an_unreachable_api_server_is_retried_with_backoff_until_stopped(recorder):
    client = kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9"))
    w = ClusterWatcher(client, recorder, backoff=(0.02, 0.05), idle_timeout=1.0).start()
    wait_until(lambda: w.stats["modelservings"]["errors"] >= 3, message="several reconnect attempts")
    started = time.monotonic()
    w.stop(timeout=5)
    assert time.monotonic() - started < 2
    assert recorder.calls == []


def test_stop_ends_both_watch_threads_promptly_even_on_a_quiet_stream(watcher, apiserver):
    watcher.start()
    wait_until(lambda: len(apiserver.emu.watchers) >= 2, message="both watches open")
    started = time.monotonic()
    watcher.stop(timeout=5)
    assert time.monotonic() - started < 3
    assert not any(t.is_alive() for t in watcher._threads)


def test_a_failing_enqueue_does_not_kill_the_shared_watch(cluster, api_client):
    calls: list[tuple[str, str]] = []

    def flaky(namespace: str, name: str) -> None:
        calls.append((namespace, name))
        if name == "boom":
            raise RuntimeError("broker down")

    w = ClusterWatcher(api_client, flaky, backoff=(0.05, 0.2), idle_timeout=2.0).start()
    try:
        cluster.create_modelserving(ms("boom"))
        wait_until(lambda: (NS, "boom") in calls, message="boom enqueued")
        cluster.create_modelserving(ms("fine"))
        wait_until(lambda: (NS, "fine") in calls, message="fine enqueued after the failure")
    finally:
        w.stop(timeout=5)
