"""Canary weights on Kubernetes (``controller.k8s.traffic_routing``) against the API server double:
the two Services (or InferencePools) the ModelServing owns, the weights in the named HTTPRoute's
rule, and what a real API server refuses (the kind without its CRD, a weight out of range)."""

from __future__ import annotations

import copy

import kubernetes
import pytest
from apiserver_double import (
    GATEWAY_RESOURCES,
    GATEWAY_VALIDATORS,
    HTTPROUTES,
    INFERENCEPOOLS,
    MODELSERVINGS,
    RESOURCES,
    RunningApiServer,
)
from crd_jsonschema import crd_schema, modelserving_causes

from controller.core import naming
from controller.core.canary import TRAFFIC_ROUTING_FIELD, kubernetes_refusal
from controller.core.ports import NoRouter, NotFound
from controller.core.reconcile import reconcile
from controller.core.spec import parse_modelserving
from controller.k8s import KubernetesCluster, traffic_routing
from controller.k8s.client import Invalid, raw_json
from tests.factories import group_strategy, modelserving, role, with_canary

NS = "default"
STEPS = [{"setPartition": "75%"}, {"setWeight": 10}, {"pause": {}}]
ROUTE = {"gatewayAPI": {"httpRoute": "chat-route"}}


def weighted(routing=ROUTE) -> dict:
    strategy = with_canary(group_strategy(maxUnavailable=1), STEPS, None)
    m = modelserving(name="chat", namespace=NS, replicas=4, roles=[role("serve", image="vllm:1", gpus=None)])
    m["spec"]["rolloutStrategy"] = strategy
    if routing is not None:
        m["spec"]["rolloutStrategy"]["canary"]["trafficRouting"] = routing
    return m


def serve(resources, validators=None):
    validators = {MODELSERVINGS: modelserving_causes, **(validators or {})}
    return RunningApiServer(resources, {MODELSERVINGS}, validators, {MODELSERVINGS: crd_schema()})


@pytest.fixture
def gateway_api():
    """An API server with the Gateway API and Inference Extension CRDs installed."""
    with serve({**RESOURCES, **GATEWAY_RESOURCES}, GATEWAY_VALIDATORS) as server:
        client = server.api_client()
        yield server, KubernetesCluster(client)
        client.close()


def stored(server, resource: str) -> dict:
    items = server.call(lambda: [o for (r, _, _), o in server.emu.store.items() if r == resource])
    return {o["metadata"]["name"]: copy.deepcopy(o) for o in items}


def status(weight: int) -> dict:
    return {"canary": {"stable": "6d4f", "revision": "9b1c", "weight": weight, "phase": "Paused"}}


def test_the_controller_owns_a_stable_and_a_canary_service_and_writes_the_weights_to_a_new_httproute(gateway_api):
    server, cluster = gateway_api
    ms = cluster.create_modelserving(weighted())
    wrote = traffic_routing.sync(cluster, NS, "chat", status(10))
    assert wrote == {"route": "chat-route", "weights": [90, 10], "backends": ["chat-stable", "chat-canary"]}
    services = stored(server, "/v1/services")
    for side, revision in (("stable", "6d4f"), ("canary", "9b1c")):
        svc = services[f"chat-{side}"]
        assert svc["spec"]["selector"] == {
            naming.LABEL_NAME: "chat",
            naming.LABEL_REVISION: revision,
            naming.LABEL_ENTRY: "true",
        }
        assert svc["spec"]["ports"][0]["port"] == 8000
        (owner,) = svc["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("ModelServing", ms["metadata"]["uid"], True)
    route = stored(server, HTTPROUTES)["chat-route"]
    assert route["metadata"]["ownerReferences"][0]["uid"] == ms["metadata"]["uid"]
    refs = route["spec"]["rules"][0]["backendRefs"]
    assert [(r["name"], r["port"], r["weight"]) for r in refs] == [("chat-stable", 8000, 90), ("chat-canary", 8000, 10)]


def test_an_existing_route_keeps_its_parents_matches_and_other_rules_and_only_our_rule_gets_the_weights(gateway_api):
    server, cluster = gateway_api
    cluster.create_modelserving(weighted())
    other = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/admin"}}],
        "backendRefs": [{"name": "admin", "port": 80}],
    }
    ours = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
        "backendRefs": [{"name": "chat-stable", "port": 8000, "weight": 100}],
    }
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "chat-route", "namespace": NS},
        "spec": {"parentRefs": [{"name": "inference-gateway"}], "rules": [other, ours]},
    }
    raw_json(
        cluster.api_client,
        "POST",
        f"/apis/gateway.networking.k8s.io/v1/namespaces/{NS}/httproutes",
        body=route,
        what="route",
    )
    traffic_routing.sync(cluster, NS, "chat", status(25))
    after = stored(server, HTTPROUTES)["chat-route"]
    assert after["spec"]["parentRefs"] == [{"name": "inference-gateway"}]
    assert after["spec"]["rules"][0] == other
    assert after["spec"]["rules"][1]["matches"] == ours["matches"]
    assert [(r["name"], r["weight"]) for r in after["spec"]["rules"][1]["backendRefs"]] == [
        ("chat-stable", 75),
        ("chat-canary", 25),
    ]
    version = after["metadata"]["resourceVersion"]
    traffic_routing.sync(cluster, NS, "chat", status(25))  # already so: no write
    assert stored(server, HTTPROUTES)["chat-route"]["metadata"]["resourceVersion"] == version
    traffic_routing.sync(cluster, NS, "chat", status(0))  # rolled back: all to stable
    assert [r["weight"] for r in stored(server, HTTPROUTES)["chat-route"]["spec"]["rules"][1]["backendRefs"]] == [
        100,
        0,
    ]


def test_the_weight_of_a_real_reconcile_pass_reaches_the_route(gateway_api):
    server, cluster = gateway_api
    cluster.create_modelserving(weighted())
    clock = type("Clock", (), {"now": lambda self: 1000.0})()
    reconcile(cluster, NoRouter(), clock, NS, "chat")
    ms = cluster.get_modelserving(NS, "chat")
    ms["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["image"] = "vllm:2"
    cluster.patch_modelserving(NS, "chat", {"spec": {"template": ms["spec"]["template"]}})
    result = reconcile(cluster, NoRouter(), clock, NS, "chat")
    assert result.status["canary"]["weight"] == 0  # the first step (setPartition) has no weight yet
    traffic_routing.sync(cluster, NS, "chat", result.status)
    refs = stored(server, HTTPROUTES)["chat-route"]["spec"]["rules"][0]["backendRefs"]
    assert [r["weight"] for r in refs] == [100, 0]
    canary = stored(server, "/v1/services")["chat-canary"]
    assert canary["spec"]["selector"][naming.LABEL_REVISION] == result.status["canary"]["revision"]


def test_inference_pools_are_the_backends_with_backend_kind_inference_pool(gateway_api):
    server, cluster = gateway_api
    routing = {
        "gatewayAPI": {
            "httpRoute": "chat-route",
            "backendKind": "InferencePool",
            "endpointPickerRef": {"name": "chat-epp"},
        }
    }
    cluster.create_modelserving(weighted(routing))
    traffic_routing.sync(cluster, NS, "chat", status(10))
    pools = stored(server, INFERENCEPOOLS)
    assert sorted(pools) == ["chat-canary", "chat-stable"]
    spec = pools["chat-canary"]["spec"]
    assert spec["selector"]["matchLabels"][naming.LABEL_REVISION] == "9b1c"
    assert spec["targetPorts"] == [{"number": 8000}]
    assert spec["endpointPickerRef"] == {"name": "chat-epp", "port": {"number": 9002}}
    refs = stored(server, HTTPROUTES)["chat-route"]["spec"]["rules"][0]["backendRefs"]
    assert [(r["group"], r["kind"], r["name"], r["weight"]) for r in refs] == [
        ("inference.networking.k8s.io", "InferencePool", "chat-stable", 90),
        ("inference.networking.k8s.io", "InferencePool", "chat-canary", 10),
    ]
    assert "chat-stable" not in stored(server, "/v1/services")


def test_without_the_gateway_api_crds_the_error_says_to_install_them():
    with serve(RESOURCES) as server:
        client = server.api_client()
        cluster = KubernetesCluster(client)
        cluster.create_modelserving(weighted())
        with pytest.raises(NotFound) as err:
            traffic_routing.sync(cluster, NS, "chat", status(10))
        client.close()
    assert "does not serve HTTPRoute (gateway.networking.k8s.io/v1)" in str(err.value)


def test_the_double_refuses_a_backend_weight_out_of_range_and_a_service_reference_without_a_port(gateway_api):
    server, cluster = gateway_api
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "bad", "namespace": NS},
        "spec": {"rules": [{"backendRefs": [{"name": "a", "port": 80, "weight": -1}, {"name": "b"}]}]},
    }
    with pytest.raises(Invalid) as err:
        raw_json(
            cluster.api_client,
            "POST",
            f"/apis/gateway.networking.k8s.io/v1/namespaces/{NS}/httproutes",
            body=route,
            what="route",
        )
    fields = {c["field"] for c in err.value.causes}
    assert fields == {"spec.rules[0].backendRefs[0].weight", "spec.rules[0].backendRefs[1]"}
    core = kubernetes.client.CoreV1Api(cluster.api_client)
    body = {"metadata": {"name": "noports", "namespace": NS}, "spec": {"selector": {"a": "b"}}}
    with pytest.raises(kubernetes.client.ApiException) as refused:
        core.create_namespaced_service(NS, body, _preload_content=False)
    assert refused.value.status == 422 and "spec.ports" in str(refused.value.body)


def test_a_set_weight_step_without_traffic_routing_is_refused_for_kubernetes_naming_the_field(gateway_api):
    refused = kubernetes_refusal(parse_modelserving(weighted(routing=None)).canary)
    assert refused.field == TRAFFIC_ROUTING_FIELD and "HTTPRoute" in refused.rule
    assert kubernetes_refusal(parse_modelserving(weighted()).canary) is None
    # A manifest that got around validation (kubectl): a warning Event, and no route is written.
    server, cluster = gateway_api
    cluster.create_modelserving(weighted(routing=None))
    for _ in range(3):  # pass after pass: one Event for this revision and weight
        assert traffic_routing.sync(cluster, NS, "chat", status(10)) is None
    events = [e for e in stored(server, "/v1/events").values() if e["reason"] == "TrafficRoutingMissing"]
    assert len(events) == 1 and TRAFFIC_ROUTING_FIELD in events[0]["message"] and events[0]["type"] == "Warning"
    traffic_routing.sync(cluster, NS, "chat", status(50))  # the next weight is said again
    assert len([e for e in stored(server, "/v1/events").values() if e["reason"] == "TrafficRoutingMissing"]) == 2
    assert stored(server, HTTPROUTES) == {}
