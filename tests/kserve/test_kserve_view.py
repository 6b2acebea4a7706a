"""The read side of an InferenceService (core/kserve/view.py): states, gates, why it waits.

The objects come from the simulated cluster (the simulated KServe and Deployment controllers on
the pod physics), read at chosen moments."""

from __future__ import annotations

import pytest

from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.view import inferenceservice_phase, inferenceservice_view
from controller.simcluster.config import ClusterConfig, ImageBehaviour
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.memory.cluster import SimCluster
from controller.simcluster.objects import DEPLOYMENT, INFERENCESERVICE, REPLICASET

from .test_kserve_strategy import MODEL, isvc

DEPLOY = '{"defaultDeploymentMode": "Standard"}'


def cluster(manifest, *, nodes=2, gpus=4, images=None):
    c = SimCluster(ClusterConfig(nodes=nodes, gpus_per_node=gpus, images=images or {}), seed=3)
    c.store.create_object(kserve_controller.config_map(DEPLOY))
    c.store.create_object(manifest)
    return c


def view(c):
    store = c.store
    deployments = store.list_objects(DEPLOYMENT, "default", owner="llm")
    rss = [rs for d in deployments for rs in store.list_objects(REPLICASET, "default", owner=d["metadata"]["name"])]
    pods = [p for rs in rss for p in store.list_controlled_pods("default", rs["metadata"]["name"])]
    isvc_obj = store.get_object(INFERENCESERVICE, "default", "llm")
    return inferenceservice_view(isvc_obj, deployments, rss, pods, parse_deploy_config(DEPLOY), c.loop.now())


def gpu_model(image="vllm/vllm-openai:v0.9.1"):
    return {"model": {**MODEL["model"], "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}}


def test_pods_go_through_the_gates_to_routed_and_the_view_converges():
    c = cluster(isvc({**gpu_model(), "minReplicas": 2}))
    c.loop.run_until(0.5)
    assert {i["gate"] for i in view(c)["instances"]} == {"Created"}
    c.loop.run_until(1.5)
    assert {(i["state"], i["gate"]) for i in view(c)["instances"]} == {("Creating", "Scheduled")}
    c.loop.run_until(10)
    assert {i["gate"] for i in view(c)["instances"]} == {"Started"}
    c.loop.run_until(60)
    v = view(c)
    assert {(i["state"], i["gate"], i["gateFailed"]) for i in v["instances"]} == {("Ready", "Serving", None)}
    assert v["converged"] and v["blocked"] == []


def test_a_paused_deployment_says_so_and_does_not_converge():
    c = cluster(isvc({**gpu_model(), "minReplicas": 2}))
    c.loop.run_until(60)
    c.store.patch_object(DEPLOYMENT, "default", "llm-predictor", {"spec": {"paused": True}})
    c.store.patch_object(INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"model": {"image": "v2"}}}})
    c.loop.run_until(120)
    v = view(c)
    assert [b["reason"].split(":")[0] for b in v["blocked"]] == ["paused"]
    assert not v["converged"] and v["deployments"][0]["paused"]


def test_a_crash_looping_new_image_is_named_and_the_old_pods_keep_serving():
    images = {"v2-crash": ImageBehaviour(crash=True)}
    c = cluster(isvc({**gpu_model(), "minReplicas": 4}), images=images)
    c.loop.run_until(60)
    c.store.patch_object(INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"model": {"image": "v2-crash"}}}})
    c.loop.run_until(200)
    v = view(c)
    reasons = [b["reason"] for b in v["blocked"]]
    assert any("CrashLoopBackOff" in r for r in reasons), reasons
    assert any(r.startswith("maxUnavailable reached: 3 available") for r in reasons), reasons
    assert sum(1 for i in v["instances"] if i["state"] == "Ready") == 3
    assert {i["state"] for i in v["instances"] if i["revision"] == v["deployments"][0]["replicaSets"][-1]["hash"]} == {
        "Failed"
    }


def test_a_spec_kserve_refuses_is_reported_with_its_field():
    c = cluster(isvc({**gpu_model(), "minReplicas": 2}))
    c.loop.run_until(60)
    bad = {"spec": {"predictor": {"deploymentStrategy": {"type": "BlueGreen"}}}}
    c.store.patch_object(INFERENCESERVICE, "default", "llm", bad)
    c.loop.run_until(61)
    v = view(c)
    assert v["error"]["field"] == "spec.predictor.deploymentStrategy.type"
    assert v["blocked"][0]["reason"].startswith("KServe refuses the spec: spec.predictor.deploymentStrategy.type")
    assert not v["converged"]
    assert {"type": "Ready", "status": "False", "reason": "InvalidSpec"}.items() <= v["conditions"][0].items()


def test_a_multi_node_predictors_workers_roll_with_the_override_and_never_lose_a_pod():
    model = {**gpu_model()["model"], "storageUri": "pvc://m/v1"}
    manifest = isvc({"model": model, "minReplicas": 2, "workerSpec": {"pipelineParallelSize": 2}})
    c = cluster(manifest, nodes=2, gpus=8)
    c.loop.run_until(60)
    v = view(c)
    # 2 GPUs: the head's one and one one-GPU worker (KServe's computeRayNodeAndGPUs), for both heads.
    assert v["strategy"]["predictor-worker"] == {
        "maxSurge": {"value": "100%", "source": "multiNodeOverride", "count": 1},
        "maxUnavailable": {"value": "0%", "source": "multiNodeOverride", "count": 0},
        "mode": "Availability",
        "surgeGpus": 1,
    }
    assert v["strategy"]["predictor"]["maxSurge"]["source"] == "default" and v["converged"]
    c.store.patch_object(INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"model": {"image": "v2"}}}})
    worst = 1
    while c.loop.now() < 300:
        c.loop.run_until(c.loop.now() + 1)
        workers = [i for i in view(c)["instances"] if i["component"] == "predictor-worker" and i["state"] == "Ready"]
        worst = min(worst, len(workers))
    assert worst == 1 and view(c)["converged"]


def _deployment(*, deadline=False, paused=False):
    return {"progressDeadlineExceeded": deadline, "paused": paused}


@pytest.mark.parametrize(
    "view, phase",
    [
        ({"error": {"field": "spec", "rule": "x"}, "deployments": [], "converged": False}, "Degraded"),
        ({"error": None, "deployments": [_deployment(deadline=True)], "converged": False}, "Degraded"),
        ({"error": None, "deployments": [_deployment(paused=True, deadline=True)], "converged": True}, "Degraded"),
        ({"error": None, "deployments": [_deployment(), _deployment(paused=True)], "converged": False}, "Paused"),
        ({"error": None, "deployments": [_deployment()], "converged": True}, "Healthy"),
        ({"error": None, "deployments": [_deployment()], "converged": False}, "Progressing"),
    ],
    ids=[
        "a spec KServe refuses is Degraded",
        "a Deployment past its progress deadline is Degraded",
        "the deadline outranks a pause",
        "a paused Deployment makes it Paused",
        "converged is Healthy",
        "not yet converged is Progressing",
    ],
)
def test_the_phase_of_an_inferenceservice_in_the_words_of_the_list(view, phase):
    """One rule for the list, the page's badge and the websocket (the page read its own copy)."""
    assert inferenceservice_phase(view) == phase
