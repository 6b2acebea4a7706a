"""Pod DNS through the Kubernetes adapter: one headless Service per ModelServing, owned by it, and
every pod named in it, so the ENTRY_ADDRESS a worker gets resolves."""

from __future__ import annotations

import json

import kubernetes

from controller.core import naming
from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.k8s import KubernetesCluster
from tests.factories import modelserving, role

NS = "default"


class Clock:
    def now(self) -> float:
        return 1000.0


def multinode(name: str) -> dict:
    return modelserving(
        name=name, namespace=NS, replicas=1, roles=[role("prefill", workers=2, image="vllm:1", gpus=None)]
    )


def services(apiserver) -> dict:
    items = apiserver.call(lambda: [o for (r, _, _), o in apiserver.emu.store.items() if r == "/v1/services"])
    return {s["metadata"]["name"]: s for s in items}


def test_a_multi_pod_instance_gets_a_headless_service_and_resolvable_hostnames(apiserver, api_client):
    cluster = KubernetesCluster(api_client)
    ms = cluster.create_modelserving(multinode("chat"))
    assert reconcile(cluster, NoRouter(), Clock(), NS, "chat").error is None
    svc = services(apiserver)["chat-pods"]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {naming.LABEL_NAME: "chat"}
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["metadata"]["ownerReferences"][0]["uid"] == ms["metadata"]["uid"]
    pods = {p["metadata"]["name"]: p for p in cluster.list_pods(NS, "chat")}
    assert sorted(pods) == ["chat-0-prefill-0-0", "chat-0-prefill-0-1", "chat-0-prefill-0-2"]
    for name, pod in pods.items():
        assert pod["spec"]["hostname"] == name
        assert pod["spec"]["subdomain"] == "chat-pods"
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert env["ENTRY_ADDRESS"] == "chat-0-prefill-0-0.chat-pods.default.svc"


def test_the_service_is_put_back_when_deleted_and_garbage_collected_with_its_modelserving(apiserver, api_client):
    cluster = KubernetesCluster(api_client)
    cluster.create_modelserving(multinode("chat"))
    reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    core = kubernetes.client.CoreV1Api(api_client)
    core.delete_namespaced_service("chat-pods", NS, _preload_content=False)
    assert "chat-pods" not in services(apiserver)
    reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    assert "chat-pods" in services(apiserver)
    cluster.delete_modelserving(NS, "chat")
    assert services(apiserver) == {}
    assert json.loads(core.list_namespaced_pod(NS, _preload_content=False).data)["items"] == []
