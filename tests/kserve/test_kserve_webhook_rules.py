"""What KServe's defaulting and validating webhooks make of the forms its own samples use, row by
row, each named after the KServe rule it mirrors: the per-framework predictor fields, the built-in
explainer, which container is the implementation, canaryTrafficPercent outside Knative mode,
minReplicas 0, the autoscaling fields, and the ServingRuntime that serves a model."""

from __future__ import annotations

import json

import pytest

from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.errors import KServeError
from controller.core.kserve.materialize import deployments
from controller.core.kserve.runtimes import DEFAULT_RUNTIMES, runtime_from_object
from controller.core.kserve.spec import parse_inferenceservice
from controller.simcluster.config import ClusterConfig
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.memory.cluster import SimCluster
from controller.simcluster.objects import DEPLOYMENT, INFERENCESERVICE, REPLICASET
from tests.factories import inferenceservice

STANDARD = parse_deploy_config(json.dumps({"defaultDeploymentMode": "Standard"}))
KNATIVE = parse_deploy_config(json.dumps({"defaultDeploymentMode": "Knative"}))
URI = "gs://kfserving-examples/models/example"


def isvc(predictor: dict, *, annotations: dict | None = None, **spec) -> dict:
    manifest = inferenceservice(predictor=predictor, **spec)
    if annotations:
        manifest["metadata"]["annotations"] = dict(annotations)
    return manifest


def parse(manifest: dict, config=STANDARD):
    return parse_inferenceservice(manifest, config)


# -- per-framework predictor fields ---------------------------------------------------------------

FRAMEWORKS = [
    # (framework, protocol KServe's defaulting sets, runtime a fresh installation picks)
    ("sklearn", None, "kserve-sklearnserver"),
    ("tensorflow", None, "kserve-tensorflow-serving"),
    ("xgboost", None, "kserve-xgbserver"),
    ("pytorch", None, "kserve-torchserve"),
    ("triton", "v2", "kserve-tritonserver"),
    ("onnx", "v2", "kserve-tritonserver"),
    ("huggingface", "v2", "kserve-huggingfaceserver"),
    ("pmml", None, "kserve-pmmlserver"),
    ("lightgbm", None, "kserve-lgbserver"),
    ("paddle", None, "kserve-paddleserver"),
]


@pytest.mark.parametrize(
    "framework,protocol,runtime",
    FRAMEWORKS,
    ids=[f"KServe setPredictorModelDefaults: {f} becomes model {f}, served by {r}" for f, _, r in FRAMEWORKS],
)
def test_a_per_framework_predictor_becomes_a_model_of_that_format_served_by_its_runtime(framework, protocol, runtime):
    parsed = parse(isvc({framework: {"storageUri": URI}}))
    predictor = parsed.predictor
    assert predictor.runtime == runtime and predictor.runtime_problem is None
    (container,) = predictor.containers
    assert container["name"] == "kserve-container"
    assert {"name": "STORAGE_URI", "value": URI} in container["env"]


def test_a_framework_field_keeps_its_container_fields_over_the_runtimes():
    # KServe's MergeRuntimeContainers: the predictor's fields win, its args follow the runtime's.
    parsed = parse(isvc({"pytorch": {"storageUri": URI, "args": ["--enable-model-api"], "image": "ts:1"}}))
    (container,) = parsed.predictor.containers
    assert container["image"] == "ts:1"
    assert container["args"][-1] == "--enable-model-api" and container["args"][0] == "torchserve"


REFUSED = [
    (
        "KServe validatePredictor: the 'name' field is not allowed in standard predictor",
        isvc({"sklearn": {"name": "my-model", "storageUri": URI}}),
        "spec.predictor.sklearn.name",
        "not allowed",
    ),
    (
        "KServe validateExactlyOneImplementation: two frameworks",
        isvc({"sklearn": {"storageUri": URI}, "xgboost": {"storageUri": URI}}),
        "spec.predictor",
        "exactly one of",
    ),
    (
        "KServe validateExactlyOneImplementation: model and a kserve-container",
        isvc(
            {
                "model": {"modelFormat": {"name": "sklearn"}, "storageUri": URI},
                "containers": [{"name": "kserve-container", "image": "server:1"}],
            }
        ),
        "spec.predictor",
        "found model, containers",
    ),
    (
        "KServe validateExactlyOneImplementation: a predictor with nothing to run",
        isvc({"minReplicas": 1}),
        "spec.predictor",
        "exactly one of",
    ),
    (
        "KServe validateExactlyOneImplementation: an explainer with nothing to run",
        isvc({"sklearn": {"storageUri": URI}}, explainer={"minReplicas": 1}),
        "spec.explainer",
        "exactly one of art or containers",
    ),
    (
        "KServe validateCollocationStorageURI: no STORAGE_URI in the transformer-container",
        isvc(
            {
                "model": {"modelFormat": {"name": "sklearn"}, "storageUri": URI},
                "containers": [
                    {"name": "transformer-container", "image": "t:1", "env": [{"name": "STORAGE_URI", "value": URI}]}
                ],
            }
        ),
        "spec.predictor.containers",
        "storage uri should not be specified",
    ),
    (
        "KServe validateCanarySpecs: canary requires a stable predictor with a model",
        isvc(
            {"containers": [{"name": "kserve-container", "image": "server:1"}]},
            annotations={"serving.kserve.io/deploymentMode": "Standard"},
            canary=[
                {
                    "predictor": {"name": "v2", "containers": [{"name": "kserve-container", "image": "server:2"}]},
                    "trafficPercent": 10,
                }
            ],
        ),
        "spec.canary",
        "requires a stable predictor with a model",
    ),
    (
        "KServe CRD: modelFormat is required on a model",
        isvc({"model": {"storageUri": URI, "image": "x:1"}}),
        "spec.predictor.model.modelFormat",
        "required",
    ),
]


@pytest.mark.parametrize("manifest,field,words", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_kserve_refuses_the_implementations_it_cannot_choose_between(manifest, field, words):
    with pytest.raises(KServeError) as err:
        parse(manifest)
    assert err.value.field == field
    assert words in err.value.rule, err.value.rule


# -- the implementation's container ---------------------------------------------------------------

IMPLEMENTATIONS = [
    (
        "KServe buildPodSpec: a model with a collocated transformer-container runs both, the model's first",
        {
            "model": {"modelFormat": {"name": "pytorch"}, "storageUri": URI},
            "containers": [{"name": "transformer-container", "image": "kserve/image-transformer:latest"}],
        },
        ["kserve-container", "transformer-container"],
        "pytorch/torchserve-kfs:0.9.0",
    ),
    (
        "KServe buildPodSpec: containers other than the transformer-container beside a model are not run",
        {
            "model": {"modelFormat": {"name": "sklearn"}, "storageUri": URI},
            "containers": [{"name": "logger", "image": "fluentbit:1"}],
        },
        ["kserve-container"],
        "kserve/sklearnserver:latest",
    ),
    (
        "KServe GetImplementations: the container named kserve-container is the implementation",
        {"containers": [{"name": "sidecar", "image": "proxy:1"}, {"name": "kserve-container", "image": "server:1"}]},
        ["sidecar", "kserve-container"],
        "server:1",
    ),
    (
        "KServe GetImplementations: without a kserve-container the first container is the implementation",
        {"containers": [{"name": "custom", "image": "codait/max-object-detector"}]},
        ["kserve-container"],
        "codait/max-object-detector",
    ),
]


@pytest.mark.parametrize("predictor,names,image", [r[1:] for r in IMPLEMENTATIONS], ids=[r[0] for r in IMPLEMENTATIONS])
def test_the_pod_runs_the_implementation_kserve_picks(predictor, names, image):
    parsed = parse(isvc(predictor))
    assert [c["name"] for c in parsed.predictor.containers] == names
    assert parsed.predictor.image == image


def test_the_built_in_art_explainer_runs_kserves_art_image():
    parsed = parse(
        isvc(
            {"sklearn": {"storageUri": URI}},
            explainer={"art": {"type": "SquareAttack", "config": {"nb_classes": "10"}}},
        )
    )
    (container,) = parsed.components["explainer"].containers
    assert container["image"] == "kserve/art-explainer:latest"
    assert "--nb_classes=10" in container["args"]


# -- canaryTrafficPercent, minReplicas ------------------------------------------------------------


def test_canary_traffic_percent_in_standard_mode_is_accepted_and_ignored_with_a_warning():
    # KServe's webhook admits it in Standard mode; nothing reads it there.
    parsed = parse(isvc({"sklearn": {"storageUri": URI}, "canaryTrafficPercent": 10}))
    assert parsed.predictor.canary_traffic_percent is None
    (warning,) = parsed.warnings
    assert warning.field == "spec.predictor.canaryTrafficPercent" and "ignores it" in warning.message
    assert parse(isvc({"sklearn": {"storageUri": URI}, "canaryTrafficPercent": 10}), KNATIVE).warnings == ()


MIN_REPLICAS = [
    ("KServe hpa reconciler: an HPA keeps at least 1 pod for minReplicas 0", {}, 1),
    ("KServe keda reconciler: the same for KEDA's minimum", {"serving.kserve.io/autoscalerClass": "keda"}, 1),
    (
        "KServe createRawDefaultDeployment: autoscalerClass none sets the Deployment's replicas to minReplicas, 0",
        {"serving.kserve.io/autoscalerClass": "none"},
        0,
    ),
]


@pytest.mark.parametrize("annotations,pods", [r[1:] for r in MIN_REPLICAS], ids=[r[0] for r in MIN_REPLICAS])
def test_min_replicas_0_in_standard_mode_runs_the_pods_kserve_keeps(annotations, pods):
    parsed = parse(isvc({"sklearn": {"storageUri": URI}, "minReplicas": 0}, annotations=annotations))
    (plan,) = deployments(parsed, STANDARD)
    assert plan.replicas == pods


# -- autoscaling fields ---------------------------------------------------------------------------

AUTOSCALING = [
    (
        "KServe CRD: scaleMetric is one of cpu, memory, concurrency, rps",
        {"scaleMetric": "qps"},
        {},
        STANDARD,
        "spec.predictor.scaleMetric",
    ),
    (
        "KServe CRD: scaleMetricType is one of Utilization, Value, AverageValue",
        {"scaleMetricType": "Average"},
        {},
        STANDARD,
        "spec.predictor.scaleMetricType",
    ),
    (
        "KServe validateHPAMetrics: the HPA takes cpu or memory",
        {"scaleMetric": "rps"},
        {"serving.kserve.io/autoscalerClass": "hpa"},
        STANDARD,
        "spec.predictor.scaleMetric",
    ),
    (
        "KServe validateScalingHPACompExtension: a cpu target above 100%",
        {"scaleMetric": "cpu", "scaleTarget": 150},
        {"serving.kserve.io/autoscalerClass": "hpa"},
        STANDARD,
        "spec.predictor.scaleTarget",
    ),
    (
        "KServe validateScalingKedaCompExtension: ScaleMetric is not supported for KEDA",
        {"scaleMetric": "cpu"},
        {"serving.kserve.io/autoscalerClass": "keda"},
        STANDARD,
        "spec.predictor.scaleMetric",
    ),
    (
        "KServe validateKPAMetrics: Knative's autoscaler takes concurrency or rps",
        {"scaleMetric": "cpu"},
        {},
        KNATIVE,
        "spec.predictor.scaleMetric",
    ),
    (
        "KServe validateInferenceServiceAutoscaler: an autoscaler class KServe does not know",
        {},
        {"serving.kserve.io/autoscalerClass": "vpa"},
        STANDARD,
        "metadata.annotations[serving.kserve.io/autoscalerClass]",
    ),
    (
        "KServe CRD ExtMetricAuthentication: authenticationRef holds authenticationRef.name (KEDA's trigger)",
        {
            "autoScaling": {
                "metrics": [
                    {
                        "type": "External",
                        "external": {
                            "metric": {"backend": "prometheus", "query": "q"},
                            "authenticationRef": {"name": "keda-prom-creds"},
                            "target": {"type": "Value", "value": "2"},
                        },
                    }
                ]
            }
        },
        {"serving.kserve.io/autoscalerClass": "keda"},
        STANDARD,
        "spec.predictor.autoScaling.metrics[0].external.authenticationRef.authenticationRef",
    ),
    (
        "KServe validateScalingKedaCompExtension: an External metric without a query",
        {
            "autoScaling": {
                "metrics": [{"type": "External", "external": {"metric": {}, "target": {"type": "Value", "value": "2"}}}]
            }
        },
        {"serving.kserve.io/autoscalerClass": "keda"},
        STANDARD,
        "spec.predictor.autoScaling.metrics[0].external.metric.query",
    ),
    (
        "KServe CRD: a metric type is one of Resource, External, PodMetric",
        {"autoScaling": {"metrics": [{"type": "Pods"}]}},
        {},
        STANDARD,
        "spec.predictor.autoScaling.metrics[0].type",
    ),
]


@pytest.mark.parametrize(
    "fields,annotations,config,field", [r[1:] for r in AUTOSCALING], ids=[r[0] for r in AUTOSCALING]
)
def test_kserve_refuses_autoscaling_fields_outside_their_allowed_values(fields, annotations, config, field):
    with pytest.raises(KServeError) as err:
        parse(isvc({"sklearn": {"storageUri": URI}, **fields}, annotations=annotations), config)
    assert err.value.field == field


def test_a_pod_metric_without_a_query_is_checked_only_for_keda():
    # KServe checks the query in validateScalingKedaCompExtension only.
    fields = {
        "autoScaling": {
            "metrics": [{"type": "PodMetric", "podmetric": {"metric": {}, "target": {"type": "Value", "value": "4"}}}]
        }
    }
    assert parse(isvc({"sklearn": {"storageUri": URI}, **fields}))
    with pytest.raises(KServeError):
        parse(
            isvc({"sklearn": {"storageUri": URI}, **fields}, annotations={"serving.kserve.io/autoscalerClass": "keda"})
        )


# -- ServingRuntimes ------------------------------------------------------------------------------

RUNTIMES = [
    (
        "KServe GetSupportingRuntimes: sklearn v1 -> kserve-sklearnserver",
        {"modelFormat": {"name": "sklearn"}},
        "kserve-sklearnserver",
        None,
    ),
    (
        "KServe sortSupportedRuntimeByPriority: sklearn v2 -> kserve-mlserver (priority 2 over 1)",
        {"modelFormat": {"name": "sklearn"}, "protocolVersion": "v2"},
        "kserve-mlserver",
        None,
    ),
    (
        "KServe reconcileModel: the runtime the model names",
        {"modelFormat": {"name": "sklearn"}, "runtime": "kserve-mlserver"},
        "kserve-mlserver",
        None,
    ),
    (
        "KServe RuntimeSupportsModel: a runtime named explicitly may serve a format it does not auto-select",
        {"modelFormat": {"name": "sklearn"}, "runtime": "kserve-predictiveserver"},
        "kserve-predictiveserver",
        None,
    ),
    (
        "KServe GetSupportingRuntimes: format names are matched exactly (vllm is not vLLM)",
        {"modelFormat": {"name": "vllm"}},
        None,
        "no runtime found to support predictor with model type vllm",
    ),
    (
        "KServe GetSupportingRuntimes: vLLM -> kserve-vllmserver",
        {"modelFormat": {"name": "vLLM"}},
        "kserve-vllmserver",
        None,
    ),
    (
        "KServe reconcileModel: a runtime that does not exist",
        {"modelFormat": {"name": "sklearn"}, "runtime": "my-runtime"},
        None,
        "runtime 'my-runtime' not found",
    ),
    (
        "KServe reconcileModel: a named runtime must support the format",
        {"modelFormat": {"name": "sklearn"}, "runtime": "kserve-tritonserver"},
        None,
        "does not support format sklearn",
    ),
]


@pytest.mark.parametrize("model,runtime,problem", [r[1:] for r in RUNTIMES], ids=[r[0] for r in RUNTIMES])
def test_a_model_is_served_by_the_runtime_kserve_picks(model, runtime, problem):
    # No runtime is not a webhook refusal: KServe admits it and its controller fails the predictor.
    predictor = parse(isvc({"model": {**model, "storageUri": URI}})).predictor
    assert predictor.runtime == runtime
    if problem is None:
        assert predictor.runtime_problem is None
    else:
        assert problem in predictor.runtime_problem


def test_runtime_version_replaces_the_runtime_images_tag():
    predictor = parse(isvc({"tensorflow": {"storageUri": URI, "runtimeVersion": "1.14.0"}})).predictor
    assert predictor.image == "tensorflow/serving:1.14.0"


def test_a_namespace_servingruntime_is_picked_before_the_cluster_ones():
    runtime = runtime_from_object(
        {
            "apiVersion": "serving.kserve.io/v1alpha1",
            "kind": "ServingRuntime",
            "metadata": {"name": "team-sklearn", "namespace": "default"},
            "spec": {
                "supportedModelFormats": [{"name": "sklearn", "version": "1", "autoSelect": True}],
                "containers": [{"name": "kserve-container", "image": "team/sklearn:2"}],
            },
        }
    )
    parsed = parse_inferenceservice(isvc({"sklearn": {"storageUri": URI}}), STANDARD, (*DEFAULT_RUNTIMES, runtime))
    assert (parsed.predictor.runtime, parsed.predictor.image) == ("team-sklearn", "team/sklearn:2")


def cluster_with(manifest: dict, deploy: str) -> SimCluster:
    c = SimCluster(ClusterConfig(nodes=2, gpus_per_node=8), seed=1)
    c.store.create_object(kserve_controller.config_map(deploy))
    c.store.create_object(manifest)
    return c


def test_a_model_without_a_runtime_fails_the_predictor_as_kserves_controller_does():
    c = cluster_with(
        isvc({"model": {"modelFormat": {"name": "vllm"}, "image": "vllm/vllm-openai:v1"}}),
        json.dumps({"defaultDeploymentMode": "Standard"}),
    )
    c.loop.run_until(30)
    assert c.store.list_objects(DEPLOYMENT, "default", owner="llm") == []
    conditions = {x["type"]: x for x in c.store.get_object(INFERENCESERVICE, "default", "llm")["status"]["conditions"]}
    assert conditions["PredictorReady"]["reason"] == "NoSupportingRuntime"
    assert "no runtime found" in conditions["PredictorReady"]["message"]


@pytest.mark.parametrize("mode", ["Standard", "Knative"])
def test_a_change_of_model_runtime_swaps_the_container_and_makes_a_new_revision(mode):
    deploy = json.dumps({"defaultDeploymentMode": mode})
    c = cluster_with(isvc({"minReplicas": 1, "model": {"modelFormat": {"name": "sklearn"}, "storageUri": URI}}), deploy)
    c.loop.run_until(120)
    c.store.patch_object(
        INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"model": {"runtime": "kserve-mlserver"}}}}
    )
    c.loop.run_until(400)
    images = set()
    templates = set()
    for d in c.store.list_objects(DEPLOYMENT, "default", owner="llm"):
        for rs in c.store.list_objects(REPLICASET, "default", owner=d["metadata"]["name"]):
            templates.add((d["metadata"]["name"], rs["metadata"]["name"]))
            for pod in c.store.list_controlled_pods("default", rs["metadata"]["name"]):
                if not pod["metadata"].get("deletionTimestamp"):
                    images.add(pod["spec"]["containers"][0]["image"])
    assert len(templates) == 2  # a second ReplicaSet (Standard) or revision (Knative)
    assert images == {"docker.io/seldonio/mlserver:1.7.1"}


GPU = {"resources": {"limits": {"nvidia.com/gpu": "1"}}}
IMAGE_TAGS = [
    (
        "KServe UpdateImageTag: a GPU Hugging Face server runs its -gpu tag",
        {"modelFormat": {"name": "huggingface"}, **GPU},
        "kserve/huggingfaceserver:latest-gpu",
    ),
    (
        "KServe UpdateImageTag: a GPU model image of a TorchServe runtime gets the -gpu tag too",
        {"modelFormat": {"name": "pytorch"}, "image": "pytorch/torchserve:0.9.0", **GPU},
        "pytorch/torchserve:0.9.0-gpu",
    ),
    (
        "KServe UpdateImageTag: vLLM without a GPU runs the -cpu repository",
        {"modelFormat": {"name": "vLLM"}, "image": "vllm/vllm-openai:v0.9.1"},
        "vllm/vllm-openai-cpu:v0.9.1",
    ),
    (
        "KServe UpdateImageTag: vLLM with a GPU runs the image as written",
        {"modelFormat": {"name": "vLLM"}, "image": "vllm/vllm-openai:v0.9.1", **GPU},
        "vllm/vllm-openai:v0.9.1",
    ),
    (
        "KServe UpdateImageTag: runtimeVersion sets the tag, also of an image the model writes",
        {"modelFormat": {"name": "tensorflow"}, "image": "mirror/serving:2.6.2", "runtimeVersion": "1.14.0"},
        "mirror/serving:1.14.0",
    ),
]


@pytest.mark.parametrize("model,image", [r[1:] for r in IMAGE_TAGS], ids=[r[0] for r in IMAGE_TAGS])
def test_the_runtime_image_is_tagged_as_kserve_tags_it(model, image):
    assert parse(isvc({"model": {**model, "storageUri": URI}})).predictor.image == image
