"""Serving gates on a Kubernetes cluster: computed from pod conditions read through the adapter, and
the verification request sent over real HTTP by ``HttpVerifier`` (a local server plays the model
server; the pods' IP is 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import kubernetes
import pytest
from test_k8s_rollout import MERGE, NS, Clock, modelserving

from controller.core import naming
from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.core.view import build_view
from controller.k8s import KubernetesCluster
from controller.k8s.verifier import HttpVerifier


class ModelServer:
    """Answers GET /v1/models with ``status`` (200 by default); /slow never in time."""

    def __init__(self) -> None:
        self.status = 200
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                outer.requests.append(self.path)
                if self.path == "/slow":
                    threading.Event().wait(2)  # a slow endpoint on purpose (the probe's timeout)
                body = json.dumps({"data": [{"id": "demo"}]}).encode()
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def model_server():
    server = ModelServer()
    yield server
    server.close()


def pod_at(port: int) -> dict:
    return {
        "status": {"podIP": "127.0.0.1"},
        "spec": {"containers": [{"name": "e", "ports": [{"containerPort": port}]}]},
    }


def test_the_http_verifier_passes_on_the_expected_status(model_server):
    answer = HttpVerifier().verify(NS, pod_at(model_server.port), {"path": "/v1/models", "expectStatus": 200})
    assert answer["passed"] and answer["status"] == 200 and '"demo"' in answer["body"]
    assert model_server.requests == ["/v1/models"]


def test_the_http_verifier_fails_on_another_status_and_says_which(model_server):
    model_server.status = 503
    answer = HttpVerifier().verify(NS, pod_at(model_server.port), {"path": "/v1/models", "expectStatus": 200})
    assert not answer["passed"] and answer["error"] == "status 503, expected 200"


def test_the_http_verifier_fails_on_a_timeout(model_server):
    answer = HttpVerifier().verify(
        NS, pod_at(model_server.port), {"path": "/slow", "expectStatus": 200, "timeoutSeconds": 0.3}
    )
    assert not answer["passed"] and "Timeout" in answer["error"]


def test_the_http_verifier_fails_when_nothing_listens():
    answer = HttpVerifier().verify(NS, pod_at(1), {"path": "/v1/models", "port": 1})
    assert not answer["passed"] and "ConnectionError" in answer["error"]


def kubelet_with_times(core: kubernetes.client.CoreV1Api, clock: Clock) -> None:
    """A node agent that stamps every transition with the time, as a real kubelet does."""
    stamp = f"2026-11-30T10:{int(clock.t) // 60 % 60:02d}:{int(clock.t) % 60:02d}Z"
    pods = core.list_namespaced_pod(NS, label_selector=naming.LABEL_NAME, _preload_content=False)
    for pod in json.loads(pods.data)["items"]:
        status = pod.get("status") or {}
        if any(c["type"] == "Ready" for c in status.get("conditions") or []):
            continue
        new_status = {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c["image"],
                    "imageID": f"sha256:{abs(hash(c['image'])):x}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": stamp}},
                }
                for c in pod["spec"]["containers"]
            ],
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": stamp},
                {"type": "Ready", "status": "True", "lastTransitionTime": stamp},
            ],
        }
        core.patch_namespaced_pod_status(
            pod["metadata"]["name"],
            NS,
            {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": new_status},
            _content_type=MERGE,
            _preload_content=False,
        )


def endpoint_controller(api_client: kubernetes.client.ApiClient) -> None:
    """What Kubernetes' endpoint controller does for the ModelServing's headless Service: one
    EndpointSlice with every pod's address, ``serving`` as the pod is Ready (the Service publishes
    not-ready addresses, so ``ready`` is always true). The Routed gate reads it."""
    core = kubernetes.client.CoreV1Api(api_client)
    discovery = kubernetes.client.DiscoveryV1Api(api_client)
    pods = json.loads(core.list_namespaced_pod(NS, label_selector=naming.LABEL_NAME, _preload_content=False).data)
    endpoints = [
        {
            "addresses": ["127.0.0.1"],
            "targetRef": {"kind": "Pod", "name": p["metadata"]["name"]},
            "conditions": {
                "ready": True,
                "serving": any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in (p.get("status") or {}).get("conditions") or []
                ),
                "terminating": bool(p["metadata"].get("deletionTimestamp")),
            },
        }
        for p in pods["items"]
    ]
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "chat-pods-x1",
            "labels": {naming.LABEL_NAME: "chat", "kubernetes.io/service-name": "chat-pods"},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
    }
    try:
        discovery.delete_namespaced_endpoint_slice("chat-pods-x1", NS)
    except kubernetes.client.ApiException:
        pass
    discovery.create_namespaced_endpoint_slice(NS, body)


def test_gates_from_pod_conditions_and_verification_over_http_through_the_adapter(api_client, model_server):
    core = kubernetes.client.CoreV1Api(api_client)
    cluster = KubernetesCluster(api_client)
    clock = Clock()
    manifest = modelserving({"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}})
    manifest["spec"]["verification"] = {"path": "/v1/models", "expectStatus": 200, "port": model_server.port}
    cluster.create_modelserving(manifest)

    def view() -> dict:
        ms = cluster.get_modelserving(NS, "chat")
        pods = cluster.list_pods(NS, "chat")
        routed = cluster.routable_pods(NS, "chat", pods)
        return build_view(ms, pods, cluster.list_revisions(NS, "chat"), {}, clock.now(), routed=routed)

    for _ in range(12):
        reconcile(cluster, NoRouter(), clock, NS, "chat", verifier=HttpVerifier())
        kubelet_with_times(core, clock)
        endpoint_controller(api_client)
        clock.t += 1
    state = view()
    assert {i["gate"] for i in state["instances"]} == {"Serving"}
    assert model_server.requests.count("/v1/models") == len(state["instances"])  # one per instance
    instance = state["instances"][0]
    assert list(instance["gateTimes"]) == ["Created", "Scheduled", "Started", "Loaded", "Routed", "Verified", "Serving"]
    assert state["gateFunnel"][-1] == {"gate": "Serving", "count": len(state["instances"]), "slowest": None}

    # The model server starts answering 500: the next revision's first group is Ready, routed, and
    # fails verification; it counts as unavailable, so no further group is replaced.
    model_server.status = 500
    cluster.patch_modelserving(NS, "chat", {"spec": {"template": modelserving({}, "engine:v2")["spec"]["template"]}})
    for _ in range(12):
        reconcile(cluster, NoRouter(), clock, NS, "chat", verifier=HttpVerifier())
        kubelet_with_times(core, clock)
        endpoint_controller(api_client)
        clock.t += 1
    state = view()
    new = [i for i in state["instances"] if i["revision"] == state["updateRevision"]]
    assert new and {i["group"] for i in new} == {1}
    assert {(i["gate"], i["gateFailed"]) for i in new} == {("Routed", "Verified")}
    status = cluster.get_modelserving(NS, "chat")["status"]
    assert status["phase"] == "Blocked"
    assert any("verification of" in w["reason"] and "status 500" in w["reason"] for w in status["waiting"])
