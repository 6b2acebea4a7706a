"""The simulated cluster models pod DNS as Kubernetes does: the ModelServing's headless Service is
stored (owned, garbage-collected with it) and the view names each instance's entry address."""

from __future__ import annotations

from controller.core.ports import SERVICE, NoRouter
from controller.core.reconcile import reconcile
from controller.simcluster.memory.clock import VirtualClock
from controller.simcluster.memory.store import InMemoryStore
from tests.factories import modelserving, role


def manifest() -> dict:
    return modelserving(
        name="chat", namespace="llm", replicas=1, roles=[role("prefill", workers=1, image="vllm:1", gpus=None)]
    )


def test_the_simulated_cluster_holds_the_service_names_the_entry_address_and_collects_the_service():
    clock = VirtualClock()
    store = InMemoryStore(clock)
    store.create_modelserving(manifest())
    result = reconcile(store, NoRouter(), clock, "llm", "chat")
    assert [s["metadata"]["name"] for s in store.list_owned(SERVICE, "llm", "chat")] == ["chat-pods"]
    assert [i["address"] for i in result.view["instances"]] == ["chat-0-prefill-0-0.chat-pods.llm.svc"]
    store.delete_modelserving("llm", "chat")
    assert store.list_owned(SERVICE, "llm", "chat") == []
