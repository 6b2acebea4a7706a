"""What KServe makes of an InferenceService: Deployments, canary replicas, traffic."""

from __future__ import annotations

from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.materialize import deployments, serverless_traffic
from controller.core.kserve.spec import parse_inferenceservice

from .test_kserve_strategy import MODEL, isvc

STANDARD = parse_deploy_config('{"defaultDeploymentMode": "Standard"}')


def plans(manifest, ready=frozenset()):
    return {d.name: d for d in deployments(parse_inferenceservice(manifest, STANDARD), STANDARD, ready_canaries=ready)}


def test_each_component_becomes_a_deployment_named_as_kserve_names_it():
    model = {**MODEL["model"], "storageUri": "pvc://m/v1"}
    manifest = isvc(
        {"model": model, "minReplicas": 4, "workerSpec": {"pipelineParallelSize": 3}},
        transformer={"containers": [{"image": "tok:1"}]},
    )
    out = plans(manifest)
    assert set(out) == {"llm-predictor", "llm-predictor-worker", "llm-transformer"}
    assert out["llm-predictor"].replicas == 4
    # 3 GPUs, none declared: 3 nodes of one GPU, RAY_NODE_COUNT - 1 = 2 workers whatever the head's replicas.
    assert out["llm-predictor-worker"].replicas == 2
    assert out["llm-predictor"].template["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.9.1"
    env = out["llm-predictor"].template["spec"]["containers"][0]["env"]
    assert {"name": "STORAGE_URI", "value": "pvc://m/v1"} in env


def test_a_canary_gets_its_share_of_replicas_and_weight_only_once_ready():
    manifest = isvc(
        {**MODEL, "minReplicas": 4},
        canary=[{"predictor": {"name": "v2", **MODEL}, "trafficPercent": 10}],
    )
    before = plans(manifest)
    assert before["llm-v2-predictor"].replicas == 1  # ceil(4 x 10%)
    assert before["llm-v2-predictor"].traffic_percent == 0
    assert (before["llm-predictor"].replicas, before["llm-predictor"].traffic_percent) == (4, 100)
    after = plans(manifest, ready=frozenset({"v2"}))
    assert (after["llm-v2-predictor"].traffic_percent, after["llm-predictor"].traffic_percent) == (10, 90)
    assert after["llm-predictor"].replicas == 3  # gives up the Ready canary's replica


def test_the_stable_predictor_never_goes_below_one_replica():
    manifest = isvc({**MODEL, "minReplicas": 1}, canary=[{"predictor": {"name": "v2", **MODEL}, "trafficPercent": 90}])
    assert plans(manifest, ready=frozenset({"v2"}))["llm-predictor"].replicas == 1


def test_promoting_by_renaming_the_predictor_keeps_the_canary_deployment():
    promoted = isvc({**MODEL, "name": "v2"})
    assert set(plans(promoted)) == {"llm-v2-predictor"}


def test_serverless_traffic_follows_canary_traffic_percent():
    assert serverless_traffic(None, "r2", "r1") == [("r2", 100)]
    assert serverless_traffic(10, "r2", "r1") == [("r2", 10), ("r1", 90)]
    assert serverless_traffic(0, "r2", "r1") == [("r1", 100)]
    assert serverless_traffic(10, "r1", "r1") == [("r1", 100)]
    assert serverless_traffic(10, None, "r1") == [("r1", 100)]
    assert serverless_traffic(None, "r1", None) == [("r1", 100)]
