"""The Routed gate on Kubernetes: a pod is Routed once its address is ready in an EndpointSlice of
the ModelServing's Services (``controller.k8s.endpoints``), not when the kubelet says it is Ready.

The API double serves EndpointSlices; the tests play the endpoint controller by writing them."""

from __future__ import annotations

import time

import kubernetes
import pytest
from test_k8s_gates import kubelet_with_times
from test_k8s_rollout import NS, Clock, modelserving

from controller.core import naming
from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.k8s import KubernetesCluster
from controller.k8s.endpoints import routed_in_slices


def endpoint(pod: str, **conditions) -> dict:
    return {"addresses": ["10.0.0.1"], "targetRef": {"kind": "Pod", "name": pod}, "conditions": conditions}


@pytest.mark.parametrize(
    "endpoints,routed",
    [
        ([endpoint("a", ready=True)], {"a"}),
        ([endpoint("a")], {"a"}),
        ([endpoint("a", ready=False)], set()),
        ([endpoint("a", ready=True, serving=False)], set()),
        ([endpoint("a", ready=True, serving=True, terminating=True)], set()),
        ([{"addresses": ["10.0.0.9"], "conditions": {"ready": True}}], set()),
        ([{**endpoint("a", ready=True), "targetRef": {"kind": "Node", "name": "a"}}], set()),
    ],
    ids=[
        "an address ready in the slice routes its pod",
        "conditions the endpoint controller left out count as ready and serving",
        "an address not ready is not routed",
        "a Service publishing not-ready addresses: serving false is the pod not Ready, not routed",
        "a terminating endpoint takes no new requests",
        "an address without a pod reference names no pod",
        "a reference to something else than a pod names no pod",
    ],
)
def test_which_endpoints_route_their_pod(endpoints, routed):
    assert routed_in_slices([{"endpoints": endpoints}]) == routed


def _slice(name: str, service: str, endpoints: list[dict]) -> dict:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {naming.LABEL_NAME: "chat", "kubernetes.io/service-name": service},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
    }


def test_a_ready_pod_is_routed_once_its_address_is_ready_in_an_endpointslice(api_client):
    core = kubernetes.client.CoreV1Api(api_client)
    discovery = kubernetes.client.DiscoveryV1Api(api_client)
    cluster = KubernetesCluster(api_client)
    clock = Clock()
    # The API server stamps creation with the real time, after the kubelet's stamps: the endpoint
    # table's clock runs ahead of both by the test clock's seconds.
    start = time.time()
    cluster.endpoints.clock = lambda: start + clock.t
    cluster.create_modelserving(modelserving({"type": "ServingGroupRollingUpdate"}))

    def passes(n: int) -> dict:
        for _ in range(n):
            reconcile(cluster, NoRouter(), clock, NS, "chat")
            kubelet_with_times(core, clock)
            clock.t += 1
        return reconcile(cluster, NoRouter(), clock, NS, "chat").view

    # Every pod Ready, but no Service routes to any of them yet: each instance waits at Routed.
    state = passes(12)
    assert state["instances"] and {(i["gate"], i["gateWaiting"]["gate"]) for i in state["instances"]} == {
        ("Loaded", "Routed")
    }
    entries = sorted(
        p["metadata"]["name"]
        for p in cluster.list_pods(NS, "chat")
        if p["metadata"]["labels"].get(naming.LABEL_POD_INDEX) == "0"
    )
    late = entries[0]

    # The endpoint controller publishes every entry but one: those are Routed from the pass that
    # first sees them; the other stays at Loaded while the kubelet has it Ready.
    clock.t += 5
    discovery.create_namespaced_endpoint_slice(
        NS,
        _slice(
            "chat-pods-abcde",
            "chat-pods",
            [endpoint(n, ready=True, serving=n != late, terminating=False) for n in entries],
        ),
    )
    state = reconcile(cluster, NoRouter(), clock, NS, "chat").view
    by_entry = {f"chat-{i['group']}-{i['role']}-{i['ordinal']}-0": i for i in state["instances"]}
    assert by_entry[late]["gate"] == "Loaded" and by_entry[late]["gateWaiting"]["gate"] == "Routed"
    routed = [i for name, i in by_entry.items() if name != late]
    assert routed and {i["gate"] for i in routed} == {"Serving"}
    for i in routed:
        assert i["gateTimes"]["Routed"] - i["gateTimes"]["Loaded"] >= 5
    funnel = {f["gate"]: f for f in state["gateFunnel"]}
    assert funnel["Routed"]["fromLoaded"]["instances"] == len(routed)
    assert funnel["Routed"]["fromLoaded"]["maxSeconds"] >= 5

    # Still listed on the next pass: the time it was first seen routed stands.
    clock.t += 3
    again = reconcile(cluster, NoRouter(), clock, NS, "chat").view
    times = {(i["group"], i["role"]): i["gateTimes"].get("Routed") for i in again["instances"]}
    assert times == {(i["group"], i["role"]): i["gateTimes"].get("Routed") for i in state["instances"]}


def test_without_the_discovery_api_routed_is_inferred_from_the_pods(api_client, monkeypatch):
    from controller.k8s.client import Forbidden

    core = kubernetes.client.CoreV1Api(api_client)
    cluster = KubernetesCluster(api_client)
    clock = Clock()

    def refused(namespace: str, ms_name: str) -> list:
        raise Forbidden("endpointslices is forbidden")

    monkeypatch.setattr(cluster.endpoints, "slices", refused)
    cluster.create_modelserving(modelserving({"type": "ServingGroupRollingUpdate"}))
    for _ in range(12):
        reconcile(cluster, NoRouter(), clock, NS, "chat")
        kubelet_with_times(core, clock)
        clock.t += 1
    state = reconcile(cluster, NoRouter(), clock, NS, "chat").view
    assert {i["gate"] for i in state["instances"]} == {"Serving"}


def test_a_ready_pod_the_router_does_not_list_yet_is_not_verified_and_the_pass_looks_again_soon(api_client):
    core = kubernetes.client.CoreV1Api(api_client)
    cluster = KubernetesCluster(api_client)
    clock = Clock()
    manifest = modelserving({"type": "ServingGroupRollingUpdate"})
    manifest["spec"]["verification"] = {"path": "/v1/models", "expectStatus": 200, "port": 1}
    cluster.create_modelserving(manifest)
    for _ in range(12):
        reconcile(cluster, NoRouter(), clock, NS, "chat")
        kubelet_with_times(core, clock)
        clock.t += 1
    result = reconcile(cluster, NoRouter(), clock, NS, "chat")
    assert {i["gate"] for i in result.view["instances"]} == {"Loaded"}
    assert not [a for a in result.actions if a.verb == "verify"]  # nothing sent to a pod not routed
    assert result.requeue_after is not None and result.requeue_after <= 2.0
