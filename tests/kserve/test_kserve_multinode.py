"""A multi-node predictor's worker count and GPUs, as KServe computes them for its default (ray)
backend and for mp, row by row after KServe's own tests (``rawkube_controller_test.go``, "multinode"
cases, whose ServingRuntime has pipelineParallelSize 2 and tensorParallelSize 1); and the rules of
its webhook's ``validateMultiNodeVariables``. The worker count decides what the multi-node
override's ``maxSurge: 100%`` costs: the view shows the GPUs it needs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.errors import KServeError
from controller.core.kserve.materialize import deployments
from controller.core.kserve.multinode import InsufficientGPUs, multinode
from controller.core.kserve.runtimes import DEFAULT_RUNTIMES, runtime_from_object
from controller.core.kserve.spec import parse_inferenceservice
from controller.core.kserve.view import inferenceservice_view
from controller.simcluster.config import ClusterConfig
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.memory.cluster import SimCluster
from controller.simcluster.objects import DEPLOYMENT, INFERENCESERVICE, REPLICASET
from tests.factories import inferenceservice

STANDARD_JSON = json.dumps({"defaultDeploymentMode": "Standard"})
STANDARD = parse_deploy_config(STANDARD_JSON)
NONE = {"serving.kserve.io/autoscalerClass": "none"}
# The ServingRuntime of KServe's multi-node tests: huggingface, pipelineParallelSize 2, tensorParallelSize 1.
TEST_RUNTIME = runtime_from_object(
    {
        "kind": "ServingRuntime",
        "metadata": {"name": "huggingface-server-multinode", "namespace": "default"},
        "spec": {
            "supportedModelFormats": [{"name": "huggingface", "version": "2", "autoSelect": True}],
            "containers": [{"name": "kserve-container", "image": "kserve/huggingfaceserver:latest-gpu"}],
            "workerSpec": {
                "pipelineParallelSize": 2,
                "tensorParallelSize": 1,
                "containers": [{"name": "worker-container", "image": "kserve/huggingfaceserver:latest-gpu"}],
            },
        },
    }
)
RUNTIMES = (*DEFAULT_RUNTIMES, TEST_RUNTIME)


def gpus(n: int) -> dict:
    return {"resources": {"requests": {"nvidia.com/gpu": str(n)}, "limits": {"nvidia.com/gpu": str(n)}}}


def predictor(worker: dict, head_resources: dict | None = None, worker_container: dict | None = None) -> dict:
    spec = {"model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://llama", **(head_resources or {})}}
    worker = dict(worker)
    if worker_container is not None:
        worker["containers"] = [{"name": "worker-container", **worker_container}]
    return {**spec, "workerSpec": worker}


def parsed(pred: dict, runtimes=RUNTIMES):
    manifest = inferenceservice(predictor=pred)
    manifest["metadata"]["annotations"] = {"serving.kserve.io/deploymentMode": "Standard", **NONE}
    return parse_inferenceservice(manifest, STANDARD, runtimes)


def env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or []}


# (KServe test, workerSpec, head resources, worker container, RAY_NODE_COUNT, worker replicas, head GPUs, worker GPUs)
CASES = [
    ("computeRayNodeAndGPUs: the runtime's sizes when the isvc sets none", {}, None, None, 2, 1, 1, 1),
    (
        "Should use WorkerSpec.PipelineParallelSize value in isvc when it is set",
        {"pipelineParallelSize": 5},
        None,
        None,
        5,
        4,
        1,
        1,
    ),
    (
        "Should use WorkerSpec.TensorParallelSize value in isvc when it is set",
        {"tensorParallelSize": 16},
        None,
        None,
        32,
        31,
        1,
        1,
    ),
    (
        "Should use head container GPU resource value in isvc when it is set",
        {"tensorParallelSize": 4},
        gpus(2),
        None,
        7,
        6,
        2,
        1,
    ),
    (
        "Should use worker container GPU resource value in isvc when it is set",
        {"tensorParallelSize": 4},
        None,
        gpus(2),
        4,
        3,
        2,
        2,
    ),
    ("computeRayNodeAndGPUs: head and worker GPUs both set", {"tensorParallelSize": 4}, gpus(4), gpus(4), 2, 1, 4, 4),
    (
        "Should run head node only, worker node replicas should be set 0 when head node gpu count is equal to total",
        {"tensorParallelSize": 4},
        gpus(8),
        gpus(2),
        1,
        0,
        8,
        0,
    ),
    (
        "Should run head node only, worker node replicas should be set 0 when worker node gpu count is equal to total",
        {"tensorParallelSize": 4},
        None,
        gpus(8),
        1,
        0,
        8,
        0,
    ),
]


@pytest.mark.parametrize(
    "worker,head,worker_container,nodes,replicas,head_gpus,worker_gpus",
    [c[1:] for c in CASES],
    ids=[f"KServe {c[0]}" for c in CASES],
)
def test_kserve_sizes_the_multinode_predictor_by_its_ray_backend(
    worker, head, worker_container, nodes, replicas, head_gpus, worker_gpus
):
    isvc = parsed(predictor(worker, head, worker_container))
    plans = {p.component: p for p in deployments(isvc, STANDARD)}
    head_container = plans["predictor"].template["spec"]["containers"][0]
    worker_pod = plans["predictor-worker"].template["spec"]["containers"][0]
    assert plans["predictor-worker"].replicas == replicas
    assert env(head_container)["RAY_NODE_COUNT"] == env(worker_pod)["RAY_NODE_COUNT"] == str(nodes)
    assert env(head_container)["REQUEST_GPU_COUNT"] == str(head_gpus)
    assert head_container["resources"]["limits"]["nvidia.com/gpu"] == str(head_gpus)
    assert worker_pod["resources"]["limits"]["nvidia.com/gpu"] == str(worker_gpus)


def test_the_worker_count_does_not_follow_the_predictors_replicas():
    # KServe reads RAY_NODE_COUNT - 1, never minReplicas x workers.
    isvc = parsed({**predictor({"pipelineParallelSize": 3}), "minReplicas": 2})
    plans = {p.component: p for p in deployments(isvc, STANDARD)}
    assert (plans["predictor"].replicas, plans["predictor-worker"].replicas) == (2, 2)


def test_the_mp_backend_runs_pipeline_parallel_size_nodes_of_tensor_parallel_size_gpus():
    assert multinode(3, 4, head_gpus=0, worker_gpus=0, backend="mp").nodes == 3
    assert (multinode(3, 4, head_gpus=0, worker_gpus=0, backend="mp").worker_gpus) == 4


def test_gpus_that_do_not_cover_the_sizes_fail_the_predictor_as_kserves_controller_does():
    # KServe rawkube_controller_test: "Should return error if total required gpu count is less than what it
    # should be assigned with head/worker" (validateGPUAllocation): 7 GPUs, a 2-GPU head, 4-GPU workers.
    with pytest.raises(InsufficientGPUs):
        multinode(1, 7, head_gpus=2, worker_gpus=4, backend="ray")
    isvc = parsed(predictor({"pipelineParallelSize": 1, "tensorParallelSize": 7}, gpus(2), gpus(4)))
    assert "cannot hold the 7 GPUs" in isvc.predictor.runtime_problem


@given(
    pp=st.integers(1, 8),
    tp=st.integers(1, 8),
    head=st.integers(0, 8),
    worker=st.integers(0, 8),
)
def test_the_head_and_workers_always_hold_the_gpus_the_sizes_ask_for(pp, tp, head, worker):
    try:
        m = multinode(pp, tp, head_gpus=head, worker_gpus=worker, backend="ray")
    except InsufficientGPUs:
        return
    assert m.nodes >= 1 and m.total_gpus >= pp * tp


REFUSED = [
    (
        "KServe validateMultiNodeVariables: multiple containers in workerSpec",
        {
            "model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://m"},
            "workerSpec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]},
        },
        NONE,
        "spec.predictor.workerSpec.containers",
        "multiple containers",
    ),
    (
        "KServe validateMultiNodeVariables: PIPELINE_PARALLEL_SIZE in the model's env",
        {
            "model": {
                "modelFormat": {"name": "huggingface"},
                "storageUri": "pvc://m",
                "env": [{"name": "PIPELINE_PARALLEL_SIZE", "value": "2"}],
            },
            "workerSpec": {},
        },
        NONE,
        "spec.predictor.model.env",
        "PIPELINE_PARALLEL_SIZE",
    ),
    (
        "KServe validateMultiNodeVariables: a storageUri is required",
        {"model": {"modelFormat": {"name": "huggingface"}}, "workerSpec": {}},
        NONE,
        "spec.predictor.model.storageUri",
        "required",
    ),
    (
        "KServe validateMultiNodeVariables: only pvc and oci storage",
        {"model": {"modelFormat": {"name": "huggingface"}, "storageUri": "s3://m"}, "workerSpec": {}},
        NONE,
        "spec.predictor.model.storageUri",
        "pvc",
    ),
    (
        "KServe validateMultiNodeVariables: only the autoscaler class none",
        {"model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://m"}, "workerSpec": {}},
        {},
        "metadata.annotations[serving.kserve.io/autoscalerClass]",
        "none",
    ),
    (
        "KServe validateMultiNodeVariables: PipelineParallelSize cannot be less than 1",
        {
            "model": {"modelFormat": {"name": "huggingface"}, "storageUri": "pvc://m"},
            "workerSpec": {"pipelineParallelSize": 0},
        },
        NONE,
        "spec.predictor.workerSpec.pipelineParallelSize",
        "at least 1",
    ),
]


@pytest.mark.parametrize("pred,annotations,field,words", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_kserve_refuses_a_multinode_predictor_it_cannot_size(pred, annotations, field, words):
    manifest = inferenceservice(predictor=pred)
    manifest["metadata"]["annotations"] = {"serving.kserve.io/deploymentMode": "Standard", **annotations}
    with pytest.raises(KServeError) as err:
        parse_inferenceservice(manifest, STANDARD)
    assert err.value.field == field and words in err.value.rule, err.value


def test_the_view_shows_the_gpus_the_multinode_surge_needs():
    manifest = inferenceservice(
        predictor=predictor({"pipelineParallelSize": 4, "tensorParallelSize": 2}, None, gpus(2))
    )
    manifest["metadata"]["annotations"] = {"serving.kserve.io/deploymentMode": "Standard", **NONE}
    c = SimCluster(ClusterConfig(nodes=4, gpus_per_node=8), seed=1)
    c.store.create_object(kserve_controller.config_map(STANDARD_JSON))
    c.store.create_object(manifest)
    c.loop.run_until(10)
    store = c.store
    ds = store.list_objects(DEPLOYMENT, "default", owner="llm")
    rss = [rs for d in ds for rs in store.list_objects(REPLICASET, "default", owner=d["metadata"]["name"])]
    pods = [p for rs in rss for p in store.list_controlled_pods("default", rs["metadata"]["name"])]
    view = inferenceservice_view(store.get_object(INFERENCESERVICE, "default", "llm"), ds, rss, pods, STANDARD, 10)
    worker = next(d for d in view["deployments"] if d["component"] == "predictor-worker")
    # 8 GPUs of 2 per worker: 4 nodes, 3 workers of 2 GPUs; maxSurge 100% starts 3 more: 6 GPUs.
    assert (worker["replicas"], worker["gpusPerPod"]) == (3, 2)
    assert worker["strategy"]["surgeGpus"] == 6
    assert view["strategy"]["predictor-worker"]["surgeGpus"] == 6
