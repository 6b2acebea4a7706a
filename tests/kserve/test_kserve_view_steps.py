"""The named steps of ``inferenceservice_view``, one table each: which ReplicaSets and pods belong
to which Deployment, a ReplicaSet's and a pod's entries, when a Deployment's rollout is complete,
each component's strategy, why the InferenceService as a whole waits, and when it has converged.
The view read from the simulated cluster at chosen moments is in ``test_kserve_view.py``."""

from __future__ import annotations

import pytest

from controller.core.kserve import apps
from controller.core.kserve.config import DeployConfig
from controller.core.kserve.strategy import resolve_rollout
from controller.core.kserve.view import (
    STATE_DELETING,
    STATE_READY,
    _converged,
    _deployment_done,
    _deployment_rollout,
    _instance,
    _isvc_reasons,
    _owned,
    _replica_set_view,
    _Rollout,
    _Routes,
    _strategy_by_component,
)


def owned_by(kind: str, owner: str | None) -> list:
    return [{"kind": kind, "name": owner, "controller": True}] if owner else []


def obj(name: str, *, owner: str | None = None, kind: str = "Deployment", **fields) -> dict:
    return {"metadata": {"name": name, "ownerReferences": owned_by(kind, owner)}, **fields}


def rs(name: str, owner: str, *, hash_: str = "h1", revision: str = "1", replicas: int = 1, ready: int = 1) -> dict:
    meta = {
        "name": name,
        "ownerReferences": owned_by("Deployment", owner),
        "labels": {apps.LABEL_TEMPLATE_HASH: hash_},
        "annotations": {apps.ANNOTATION_REVISION: revision},
    }
    return {"metadata": meta, "spec": {"replicas": replicas}, "status": {"readyReplicas": ready}}


def pod(name: str, owner: str, *, node: str | None = "node-0") -> dict:
    return {"metadata": {"name": name, "ownerReferences": owned_by("ReplicaSet", owner)}, "spec": {"nodeName": node}}


def deployment(name: str = "llm-predictor", *, replicas: int = 1, generation: int = 1, status=None) -> dict:
    meta = {"name": name, "generation": generation, "labels": {"component": "predictor"}}
    return {"metadata": meta, "spec": {"replicas": replicas}, "status": status or {}}


DONE = {"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1, "observedGeneration": 1}


@pytest.mark.parametrize(
    "replica_sets, pods, expected",
    [
        pytest.param(
            [rs("a-1", "a"), rs("a-2", "a")],
            [pod("p2", "a-1"), pod("p1", "a-1")],
            ({"a": ["a-1", "a-2"]}, {"a-1": ["p1", "p2"]}),
            id="a deployments replica sets and their pods in name order",
        ),
        pytest.param(
            [rs("x-1", "x")], [pod("p", "x-1")], ({}, {}), id="a replica set of another controller is left out"
        ),
        pytest.param([rs("a-1", "a")], [pod("p", "b-1")], ({"a": ["a-1"]}, {}), id="a pod of another replica set"),
        pytest.param([obj("a-1")], [obj("p")], ({}, {}), id="objects without a controller are left out"),
    ],
)
def test_the_owned_step_groups_replica_sets_and_pods_by_their_controller(replica_sets, pods, expected):
    by_rs, by_pod = _owned({"a": deployment("a")}, replica_sets, pods)
    names = (
        {k: [apps.name(x) for x in v] for k, v in by_rs.items()},
        {k: [apps.name(x) for x in v] for k, v in by_pod.items()},
    )
    assert names == expected


def test_the_replica_set_step_shows_its_revision_hash_counts_and_pods():
    view = _replica_set_view(rs("a-1", "a", hash_="h9", revision="3", replicas=2, ready=1), True, [pod("p", "a-1")])
    assert view == {
        "name": "a-1",
        "revision": 3,
        "hash": "h9",
        "new": True,
        "replicas": 2,
        "readyReplicas": 1,
        "availableReplicas": 0,
        "pods": ["p"],
    }


@pytest.mark.parametrize(
    "in_flight, node, expected",
    [
        pytest.param({"p": 3}, "node-0", (3, "node-0"), id="a pods in flight requests are counted"),
        pytest.param({}, None, (0, None), id="a pod without requests or node has none"),
    ],
)
def test_the_instance_step_places_a_pod_and_counts_its_requests(in_flight, node, expected):
    instance = _instance(pod("p", "a-1", node=node), "predictor", "a", rs("a-1", "a"), "h1", False, in_flight)
    assert (instance["pod"], instance["component"], instance["deployment"], instance["replicaSet"]) == (
        "p",
        "predictor",
        "a",
        "a-1",
    )
    assert (instance["inFlight"], instance["node"]) == expected
    assert list(instance)[-3:] == ["node", "restarts", "inFlight"]


@pytest.mark.parametrize(
    "d, knative, desired, pods_by_rs, expected",
    [
        pytest.param(deployment(status=DONE), None, 1, {}, True, id="every replica updated and available is complete"),
        pytest.param(
            deployment(status={**DONE, "availableReplicas": 0}), None, 1, {}, False, id="an unavailable replica is not"
        ),
        pytest.param(
            deployment(generation=2, status=DONE), None, 1, {}, False, id="an unobserved generation is not complete"
        ),
        pytest.param(deployment(), "rev-1", 0, {}, True, id="a knative revision scaled to zero without pods is done"),
        pytest.param(
            deployment(), "rev-1", 0, {"a-1": [pod("p", "a-1")]}, False, id="a knative revision with a pod left is not"
        ),
    ],
)
def test_the_done_step_says_when_a_deployments_rollout_is_complete(d, knative, desired, pods_by_rs, expected):
    assert bool(_deployment_done(d, knative, desired, [{"name": "a-1"}], pods_by_rs)) is expected


def rollout(component: str, **strategy) -> _Rollout:
    return _Rollout({}, [], [], True, component, strategy)


@pytest.mark.parametrize(
    "rollouts, expected",
    [
        pytest.param([], {}, id="no deployments have no strategy"),
        pytest.param(
            [rollout("predictor", maxSurge=1, mode="Custom", other=2)],
            {"predictor": {"maxSurge": 1, "mode": "Custom"}},
            id="the fields the page shows are kept",
        ),
        pytest.param(
            [rollout("predictor", maxSurge=1), rollout("predictor", maxSurge=2), rollout("transformer", note="n")],
            {"predictor": {"maxSurge": 1}, "transformer": {"note": "n"}},
            id="a components first deployment gives its strategy",
        ),
    ],
)
def test_the_strategy_step_gives_each_component_its_first_deployments_strategy(rollouts, expected):
    assert _strategy_by_component(rollouts) == expected


@pytest.mark.parametrize(
    "error, observed, expected",
    [
        pytest.param(None, 2, [], id="a reconciled generation gives no reason"),
        pytest.param(
            None, 1, ["KServe has not reconciled generation 2 yet (observed 1)"], id="an older observed generation"
        ),
        pytest.param(
            {"source": "spec", "field": "spec.predictor", "rule": "bad"},
            1,
            ["KServe refuses the spec: spec.predictor: bad"],
            id="a refused spec is the only reason, whatever the generation",
        ),
        pytest.param(
            {"source": "configMap", "field": "deploy", "rule": "bad"},
            2,
            ["KServe cannot read its ConfigMap: deploy: bad"],
            id="an unreadable config map is named",
        ),
    ],
)
def test_the_isvc_reasons_step_says_why_the_whole_inferenceservice_waits(error, observed, expected):
    reasons = _isvc_reasons(error, {"observedGeneration": observed}, 2)
    assert [r["reason"] for r in reasons] == expected
    assert all(r["component"] == "InferenceService" for r in reasons)


def isvc(*, ready: str = "True", observed: int = 1) -> dict:
    return {
        "metadata": {"name": "llm", "generation": 1},
        "status": {"observedGeneration": observed, "conditions": [{"type": "Ready", "status": ready}]},
    }


READY = [{"state": STATE_READY}]


@pytest.mark.parametrize(
    "isvc_obj, error, managed, complete, settled, instances, canary, expected",
    [
        pytest.param(isvc(), None, True, True, True, READY, None, True, id="ready complete and settled converges"),
        pytest.param(isvc(ready="False"), None, True, True, True, READY, None, False, id="not ready does not"),
        pytest.param(isvc(ready="False"), None, False, True, True, READY, None, True, id="modelmesh needs no ready"),
        pytest.param(isvc(observed=0), None, False, True, True, READY, None, False, id="an unobserved generation"),
        pytest.param(isvc(), {"field": "x"}, True, True, True, READY, None, False, id="a refused spec never converges"),
        pytest.param(isvc(), None, True, False, True, READY, None, False, id="an incomplete deployment does not"),
        pytest.param(isvc(), None, True, True, False, READY, None, False, id="an unsettled knative revision"),
        pytest.param(
            isvc(), None, True, True, True, [{"state": STATE_DELETING}], None, False, id="a terminating pod does not"
        ),
        pytest.param(
            isvc(), None, True, True, True, READY, {"canaries": [{"ready": False}]}, False, id="a canary not ready"
        ),
        pytest.param(
            isvc(), None, True, True, True, READY, {"canaries": [{"ready": True}, {}]}, True, id="ready canaries"
        ),
    ],
)
def test_the_converged_step_wants_everything_where_the_spec_puts_it(
    isvc_obj, error, managed, complete, settled, instances, canary, expected
):
    assert _converged(isvc_obj, error, managed, complete, settled, instances, canary) is expected


def test_the_deployment_step_lists_old_then_new_replica_sets_and_marks_routed_pods():
    d = deployment("llm-predictor", replicas=1, status=DONE)
    d["spec"]["template"] = {"metadata": {"labels": {}}, "spec": {"containers": [{"name": "c"}]}}
    old = rs("llm-predictor-1", "llm-predictor", hash_="old", revision="1", replicas=0, ready=0)
    new = rs("llm-predictor-2", "llm-predictor", hash_="new", revision="2")
    new["spec"]["template"] = d["spec"]["template"]  # the ReplicaSet that runs the Deployment's template is new
    pods_by_rs = {"llm-predictor-2": [pod("p", "llm-predictor-2")]}
    effective = resolve_rollout(None, DeployConfig(), multi_node_worker=False)
    result = _deployment_rollout(d, effective, [new, old], pods_by_rs, _Routes(set(), {"llm-predictor"}), {})
    assert [r["name"] for r in result.view["replicaSets"]] == ["llm-predictor-1", "llm-predictor-2"]
    assert [r["new"] for r in result.view["replicaSets"]] == [False, True]
    assert [i["pod"] for i in result.instances] == ["p"]
    assert (result.component, result.complete, result.view["complete"]) == ("predictor", True, True)
