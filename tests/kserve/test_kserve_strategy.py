"""KServe's rollout strategy resolution, row by row (the seed article's precedence table and the
test cases of KServe's ``deployment_reconciler_test.go`` it names), and the validation KServe and
the API server apply. Every row is a sentence."""

from __future__ import annotations

import json

import pytest

from controller.core.kserve.config import NO_CONFIG, parse_deploy_config
from controller.core.kserve.errors import KServeError
from controller.core.kserve.materialize import deployments
from controller.core.kserve.spec import parse_inferenceservice
from tests.factories import inferenceservice


def isvc(predictor: dict, *, mode: str | None = "Standard", **spec) -> dict:
    manifest = inferenceservice(predictor=predictor, mode=mode, **spec)
    if "workerSpec" in predictor:
        # KServe's validateMultiNodeVariables: a multi-node model needs the autoscaler class none.
        manifest["metadata"].setdefault("annotations", {})["serving.kserve.io/autoscalerClass"] = "none"
    return manifest


MODEL = {
    "model": {"modelFormat": {"name": "huggingface"}, "image": "vllm/vllm-openai:v0.9.1", "storageUri": "s3://m/v1"}
}


def strategy(rolling: dict | None = None, **extra) -> dict:
    out = {"type": "RollingUpdate", **extra}
    if rolling is not None:
        out["rollingUpdate"] = rolling
    return out


def config(mode: str, rollout: dict | None = None) -> str:
    body: dict = {"defaultDeploymentMode": mode}
    if rollout is not None:
        body["deploymentRolloutStrategy"] = {"defaultRollout": rollout}
    return json.dumps(body)


def effective(manifest: dict, deploy: str | None, replicas: int = 8) -> dict[str, dict]:
    cfg = parse_deploy_config(deploy)
    parsed = parse_inferenceservice(manifest, cfg)
    return {d.component: d.strategy.to_json(replicas) for d in deployments(parsed, cfg)}


def brief(value: dict) -> tuple:
    return (
        value["maxSurge"]["value"],
        value["maxSurge"]["source"],
        value["maxUnavailable"]["value"],
        value["maxUnavailable"]["source"],
        value["mode"],
    )


# A multi-node model reads its weights from a pvc or oci storage (KServe's validateMultiNodeVariables).
MULTI_NODE = {
    "model": {**MODEL["model"], "storageUri": "pvc://m/v1"},
    "workerSpec": {"pipelineParallelSize": 3, "tensorParallelSize": 4},
}

PRECEDENCE = [
    (
        "with no ConfigMap and no strategy KServe's default 25%/25% applies",
        isvc(MODEL),
        None,
        "predictor",
        ("25%", "default", "25%", "default", "Custom"),
    ),
    (
        "No rollout strategy configured: a ConfigMap without a default rollout keeps 25%/25%",
        isvc(MODEL),
        config("Standard"),
        "predictor",
        ("25%", "default", "25%", "default", "Custom"),
    ),
    (
        "Apply rollout strategy with RawDeployment mode: the ConfigMap's 1/1 lands exactly",
        isvc(MODEL),
        config("RawDeployment", {"maxSurge": "1", "maxUnavailable": "1"}),
        "predictor",
        (1, "configMap", 1, "configMap", "Custom"),
    ),
    (
        "the ConfigMap's default rollout applies in Standard mode",
        isvc(MODEL),
        config("Standard", {"maxSurge": "1", "maxUnavailable": "0"}),
        "predictor",
        (1, "configMap", 0, "configMap", "Availability"),
    ),
    (
        "No rollout strategy applied for Serverless mode: the ConfigMap's 50%/25% is ignored",
        isvc({**MODEL}, mode=None),
        config("Serverless", {"maxSurge": "50%", "maxUnavailable": "25%"}),
        "predictor",
        ("25%", "default", "25%", "default", "Custom"),
    ),
    (
        "the ConfigMap's mode decides, not the InferenceService's annotation",
        isvc(MODEL, mode="Standard"),
        config("Serverless", {"maxSurge": "0", "maxUnavailable": "1"}),
        "predictor",
        ("25%", "default", "25%", "default", "Custom"),
    ),
    (
        "a ConfigMap with only maxSurge keeps the default maxUnavailable",
        isvc(MODEL),
        config("Standard", {"maxSurge": "1"}),
        "predictor",
        (1, "configMap", "25%", "default", "Custom"),
    ),
    (
        "a ConfigMap with only maxUnavailable keeps the default maxSurge",
        isvc(MODEL),
        config("Standard", {"maxUnavailable": "0"}),
        "predictor",
        ("25%", "default", 0, "configMap", "Availability"),
    ),
    (
        "precedence: the component's deploymentStrategy wins over the ConfigMap",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": 0, "maxUnavailable": 1})}),
        config("Standard", {"maxSurge": "1", "maxUnavailable": "1"}),
        "predictor",
        (0, "deploymentStrategy", 1, "deploymentStrategy", "ResourceAware"),
    ),
    (
        "a deploymentStrategy giving only maxUnavailable leaves maxSurge at the API server's 25%",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxUnavailable": 0})}),
        None,
        "predictor",
        ("25%", "default", 0, "deploymentStrategy", "Availability"),
    ),
    (
        "Availability mode: a new pod first, none unavailable",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": 1, "maxUnavailable": 0})}),
        None,
        "predictor",
        (1, "deploymentStrategy", 0, "deploymentStrategy", "Availability"),
    ),
    (
        "ResourceAware mode: no surge, one old pod goes first",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": 0, "maxUnavailable": "25%"})}),
        None,
        "predictor",
        (0, "deploymentStrategy", "25%", "deploymentStrategy", "ResourceAware"),
    ),
    (
        "the multi-node override beats the ConfigMap on the worker Deployment",
        isvc(MULTI_NODE),
        config("Standard", {"maxSurge": "1", "maxUnavailable": "1"}),
        "predictor-worker",
        ("100%", "multiNodeOverride", "0%", "multiNodeOverride", "Availability"),
    ),
    (
        "the multi-node override beats the user's deploymentStrategy on the worker Deployment",
        isvc({**MULTI_NODE, "deploymentStrategy": strategy({"maxSurge": 0, "maxUnavailable": 2})}),
        None,
        "predictor-worker",
        ("100%", "multiNodeOverride", "0%", "multiNodeOverride", "Availability"),
    ),
    (
        "the head of a multi-node predictor follows the user's strategy, not the override",
        isvc({**MULTI_NODE, "deploymentStrategy": strategy({"maxSurge": 0, "maxUnavailable": 2})}),
        None,
        "predictor",
        (0, "deploymentStrategy", 2, "deploymentStrategy", "ResourceAware"),
    ),
]


@pytest.mark.parametrize(
    "manifest,deploy,component,expected", [r[1:] for r in PRECEDENCE], ids=[r[0] for r in PRECEDENCE]
)
def test_rollout_precedence(manifest, deploy, component, expected):
    assert brief(effective(manifest, deploy)[component]) == expected


def test_every_deployment_gets_a_revision_history_of_10_and_a_progress_deadline_of_600_seconds():
    for value in effective(isvc({**MULTI_NODE}, transformer={"containers": [{"image": "t:1"}]}), None).values():
        assert (value["revisionHistoryLimit"], value["progressDeadlineSeconds"]) == (10, 600)


@pytest.mark.parametrize(
    "replicas,surge,unavailable",
    [(8, 2, 2), (6, 2, 1), (2, 1, 0), (1, 1, 0)],
    ids=[
        "8 replicas at 25%/25% surge 2 and lose at most 2",
        "25% of 6 rounds surge up to 2 and unavailable down to 1",
        "2 replicas at 25% may not lose any (so it is Availability)",
        "a single replica always surges one",
    ],
)
def test_the_default_percentages_round_surge_up_and_unavailable_down(replicas, surge, unavailable):
    value = effective(isvc(MODEL), None, replicas=replicas)["predictor"]
    assert (value["maxSurge"]["count"], value["maxUnavailable"]["count"]) == (surge, unavailable)


INVALID = [
    (
        "a deploymentStrategy in Serverless mode is refused",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": 1})}, mode="Serverless"),
        None,
        "spec.predictor.deploymentStrategy",
        "only supported for the Standard",
    ),
    (
        "a strategy type other than RollingUpdate or Recreate is refused",
        isvc({**MODEL, "deploymentStrategy": {"type": "BlueGreen"}}),
        None,
        "spec.predictor.deploymentStrategy.type",
        "must be Recreate or RollingUpdate",
    ),
    (
        "a maxSurge that is neither a number nor a percentage is refused",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": "lots"})}),
        None,
        "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge",
        "percentage",
    ),
    (
        "a number written as a string is refused as the API server would",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": "1"})}),
        None,
        "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge",
        "without quotes",
    ),
    (
        "a maxUnavailable above 100% is refused",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxUnavailable": "150%"})}),
        None,
        "spec.predictor.deploymentStrategy.rollingUpdate.maxUnavailable",
        "at most 100%",
    ),
    (
        "a negative maxSurge is refused",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": -1})}),
        None,
        "spec.predictor.deploymentStrategy.rollingUpdate.maxSurge",
        "negative",
    ),
    (
        "maxSurge and maxUnavailable both 0 are refused",
        isvc({**MODEL, "deploymentStrategy": strategy({"maxSurge": 0, "maxUnavailable": "0%"})}),
        None,
        "spec.predictor.deploymentStrategy.rollingUpdate.maxUnavailable",
        "may not be 0",
    ),
    (
        "a ConfigMap deploy key that is not JSON is refused",
        isvc(MODEL),
        "{not json",
        "inferenceservice-config.deploy",
        "not valid JSON",
    ),
    (
        "an unknown deployment mode in the ConfigMap is refused",
        isvc(MODEL),
        config("Raw"),
        "inferenceservice-config.deploy.defaultDeploymentMode",
        "must be one of",
    ),
    (
        "a malformed ConfigMap rollout value is refused",
        isvc(MODEL),
        config("Standard", {"maxSurge": "a lot"}),
        "inferenceservice-config.deploy.deploymentRolloutStrategy.defaultRollout.maxSurge",
        "percentage",
    ),
    (
        "canaryTrafficPercent above 100 is refused",
        isvc({**MODEL, "canaryTrafficPercent": 120}, mode="Serverless"),
        None,
        "spec.predictor.canaryTrafficPercent",
        "at most 100",
    ),
    (
        "spec.canary outside Standard mode is refused",
        isvc(MODEL, mode="Serverless", canary=[{"predictor": {"name": "v2", **MODEL}, "trafficPercent": 10}]),
        None,
        "spec.canary",
        "only supported in Standard",
    ),
    (
        "two canaries with one name are refused",
        isvc(MODEL, canary=[{"predictor": {"name": "v2", **MODEL}, "trafficPercent": 10}] * 2),
        None,
        "spec.canary[1].predictor.name",
        "used twice",
    ),
    (
        "a canary named like the stable predictor is refused",
        isvc({**MODEL, "name": "v1"}, canary=[{"predictor": {"name": "v1", **MODEL}, "trafficPercent": 10}]),
        None,
        "spec.canary[0].predictor.name",
        "must differ",
    ),
    (
        "canary traffic adding up to more than 100% is refused",
        isvc(
            MODEL,
            canary=[
                {"predictor": {"name": "a", **MODEL}, "trafficPercent": 60},
                {"predictor": {"name": "b", **MODEL}, "trafficPercent": 50},
            ],
        ),
        None,
        "spec.canary",
        "more than 100%",
    ),
    (
        "a multi-node canary is refused",
        isvc(MODEL, canary=[{"predictor": {"name": "v2", **MULTI_NODE}, "trafficPercent": 10}]),
        None,
        "spec.canary[0].predictor.workerSpec",
        "multi-node",
    ),
    (
        "a canary with autoscaling fields is refused",
        isvc(MODEL, canary=[{"predictor": {"name": "v2", "maxReplicas": 3, **MODEL}, "trafficPercent": 10}]),
        None,
        "spec.canary[0].predictor.maxReplicas",
        "autoscaling",
    ),
    (
        "a canary with more minReplicas than the stable predictor is refused",
        isvc(
            {**MODEL, "minReplicas": 2},
            canary=[{"predictor": {"name": "v2", "minReplicas": 3, **MODEL}, "trafficPercent": 10}],
        ),
        None,
        "spec.canary[0].predictor.minReplicas",
        "must not exceed",
    ),
    (
        "a component without model or containers is refused",
        isvc({"minReplicas": 1}),
        None,
        "spec.predictor",
        "exactly one of",
    ),
]


@pytest.mark.parametrize("manifest,deploy,field,words", [r[1:] for r in INVALID], ids=[r[0] for r in INVALID])
def test_kserve_refuses(manifest, deploy, field, words):
    with pytest.raises(KServeError) as err:
        parse_inferenceservice(manifest, parse_deploy_config(deploy) if deploy is not None else NO_CONFIG)
    assert err.value.field == field
    assert words in err.value.rule
