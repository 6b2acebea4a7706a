"""``deploymentStrategy.type: Recreate`` in Standard mode: KServe copies the strategy as written and
the Deployment controller stops every old pod before it starts a new one (kube's
``rolloutRecreate``). The mode is named (Recreate: an outage by design) and the preview shows the gap."""

from __future__ import annotations

import json

import pytest

from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.errors import KServeError
from controller.core.kserve.materialize import deployments
from controller.core.kserve.spec import parse_inferenceservice
from controller.simcluster.kserve.preview import preview_inferenceservice
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import parse_scenario
from tests.factories import inferenceservice

STANDARD = json.dumps({"defaultDeploymentMode": "Standard"})
MODEL = {
    "model": {
        "modelFormat": {"name": "vLLM"},
        "image": "vllm/vllm-openai:v0.9.1",
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
}


def recreate(**extra) -> dict:
    return {**MODEL, "minReplicas": 4, "deploymentStrategy": {"type": "Recreate", **extra}}


STRATEGIES = [
    (
        "KServe createRawDefaultDeployment: a Recreate strategy is copied as written",
        recreate(),
        "predictor",
        {"type": "Recreate"},
    ),
    (
        "KServe createRawWorkerDeployment: the multi-node override is for RollingUpdate, a Recreate worker stays",
        {
            "model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://m"},
            "workerSpec": {"pipelineParallelSize": 2},
            "deploymentStrategy": {"type": "Recreate"},
        },
        "predictor-worker",
        {"type": "Recreate"},
    ),
]


@pytest.mark.parametrize("predictor,component,written", [r[1:] for r in STRATEGIES], ids=[r[0] for r in STRATEGIES])
def test_kserve_writes_the_recreate_strategy_on_the_deployment(predictor, component, written):
    config = parse_deploy_config(STANDARD)
    manifest = inferenceservice(predictor=predictor)
    manifest["metadata"]["annotations"] = {"serving.kserve.io/autoscalerClass": "none"}  # as multi-node needs
    plans = {p.component: p for p in deployments(parse_inferenceservice(manifest, config), config)}
    plan = plans[component]
    assert plan.strategy.deployment_strategy() == written
    assert plan.strategy.to_json(4)["mode"] == "Recreate"


REFUSED = [
    (
        "apps/v1 ValidateDeploymentStrategy: rollingUpdate may not be given with type Recreate",
        recreate(rollingUpdate={"maxSurge": 1}),
        "spec.predictor.deploymentStrategy.rollingUpdate",
        "Recreate",
    ),
    (
        "apps/v1 ValidateDeploymentStrategy: a type other than Recreate or RollingUpdate",
        {**MODEL, "deploymentStrategy": {"type": "BlueGreen"}},
        "spec.predictor.deploymentStrategy.type",
        "Recreate or RollingUpdate",
    ),
]


@pytest.mark.parametrize("predictor,field,words", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_a_strategy_kubernetes_would_refuse_is_refused_naming_the_field(predictor, field, words):
    with pytest.raises(KServeError) as err:
        parse_inferenceservice(inferenceservice(predictor=predictor), parse_deploy_config(STANDARD))
    assert err.value.field == field and words in err.value.rule


def scenario(predictor: dict) -> dict:
    return {
        "name": "recreate",
        "seed": 4,
        "until": 1500,
        "cluster": {
            "nodes": 2,
            "gpusPerNode": 8,
            "timing": {"schedule": 1, "pull": 5, "start": 2, "load": [20, 40], "terminate": 3},
        },
        "kserveConfig": {"deploy": STANDARD},
        "inferenceService": inferenceservice(predictor=predictor),
        "events": [{"at": 0, "do": "apply"}, {"at": 150, "do": "setImage", "image": "vllm/vllm-openai:v0.9.2"}],
    }


def test_a_recreate_rollout_has_no_new_pod_until_every_old_pod_is_gone():
    # kube's rolloutRecreate: scale the old ReplicaSets to 0, wait for their pods, then scale up.
    trace = run_scenario(parse_scenario(scenario(recreate())))
    assert trace["converged"]
    old = {i["revision"] for i in [f for f in trace["frames"] if f["t"] < 150][-1]["instances"]}
    for f in trace["frames"]:
        if f["t"] < 150:
            continue
        revisions = {i["revision"] for i in f["instances"]}
        assert not (revisions & old and revisions - old), f"t={f['t']}: old and new pods at once: {f['instances']}"
    during = [f for f in trace["frames"] if 150 < f["t"] < trace["convergedAt"]]
    assert min(sum(1 for i in f["instances"] if i["state"] == "Ready") for f in during) == 0  # the outage


def test_the_view_names_the_recreate_mode_as_an_outage_by_design():
    trace = run_scenario(parse_scenario(scenario(recreate())))
    strategy = trace["frames"][-1]["strategy"]["predictor"]
    assert strategy["mode"] == "Recreate"
    assert "outage" in strategy["note"]


def test_the_preview_of_a_recreate_rollout_shows_the_capacity_gap():
    manifest = inferenceservice(predictor=recreate())
    patch = {"spec": {"predictor": {"model": {"image": "vllm/vllm-openai:v0.9.2"}}}}
    timeline = preview_inferenceservice(manifest, patch, deploy=STANDARD, nodes=2, gpus_per_node=8)
    assert timeline["converged"] and timeline["desired"] == 4
    assert timeline["minAvailable"] == 0
    assert timeline["gapSeconds"] > 0  # seconds with no predictor pod serving
    assert timeline["capacity"][0][1] == 4 and timeline["capacity"][-1][1] == 4
    rolling = preview_inferenceservice(
        inferenceservice(predictor={**MODEL, "minReplicas": 4}), patch, deploy=STANDARD, nodes=2, gpus_per_node=8
    )
    assert rolling["gapSeconds"] == 0 and rolling["minAvailable"] == 3  # 25% may be unavailable
