"""The Kubernetes adapter reads KServe InferenceServices: the InferenceService, the
Deployments and ReplicaSets KServe made, their pods and the ``inferenceservice-config`` ConfigMap,
from the API server double serving KServe's kinds; the controls' patches go to the InferenceService
(with its resourceVersion as precondition) and to a Deployment's ``spec.paused``.

The objects are the ones the simulated KServe and Deployment controllers made for the same
InferenceService, copied into the API server: the state read through the adapter must be the state
read from the simulated store."""

from __future__ import annotations

import copy

import pytest

from controller.core.kserve import controls
from controller.core.ports import Conflict, NoRouter
from controller.k8s.client import MERGE_PATCH, raw_json
from controller.k8s.cluster import KubernetesCluster
from controller.runtime.kserve import state as runtime_kserve
from controller.simcluster.config import ClusterConfig
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.memory.cluster import SimCluster
from controller.simcluster.objects import CONFIGMAP, DEPLOYMENT, INFERENCESERVICE, REPLICASET
from tests.factories import inferenceservice

DEPLOY = '{"defaultDeploymentMode": "Standard", "deploymentRolloutStrategy": {"defaultRollout": {"maxSurge": "50%"}}}'
ISVC = inferenceservice(replicas=2, image="vllm/vllm-openai:v0.9.1")
PATHS = {
    CONFIGMAP: "/api/v1/namespaces/{ns}/configmaps",
    INFERENCESERVICE: "/apis/serving.kserve.io/v1beta1/namespaces/{ns}/inferenceservices",
    DEPLOYMENT: "/apis/apps/v1/namespaces/{ns}/deployments",
    REPLICASET: "/apis/apps/v1/namespaces/{ns}/replicasets",
    "Pod": "/api/v1/namespaces/{ns}/pods",
}


def simulated(until: float = 90.0) -> SimCluster:
    c = SimCluster(ClusterConfig(nodes=2, gpus_per_node=4), seed=3)
    c.store.create_object(kserve_controller.config_map(DEPLOY))
    c.store.create_object(copy.deepcopy(ISVC))
    c.loop.run_until(until)
    return c


def copy_into(api_client, obj: dict) -> None:
    """Create ``obj`` on the API server as KServe or the kubelet left it (status included)."""
    body = copy.deepcopy(obj)
    meta = body["metadata"]
    for server_owned in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"):
        meta.pop(server_owned, None)
    status = body.pop("status", None)
    path = PATHS[body["kind"]].format(ns=meta["namespace"])
    raw_json(api_client, "POST", path, body=body, what="create")
    if status:
        raw_json(
            api_client,
            "PATCH",
            f"{path}/{meta['name']}/status",
            body={"status": status},
            content_type=MERGE_PATCH,
            what="status",
        )


@pytest.fixture
def world(api_client):
    sim = simulated()
    store = sim.store
    objects = [store.get_object(CONFIGMAP, kserve_controller.CONFIG_NAMESPACE, kserve_controller.CONFIG_NAME)]
    objects.append(store.get_object(INFERENCESERVICE, "default", "llm"))
    deployments = store.list_objects(DEPLOYMENT, "default", owner="llm")
    replica_sets = [
        rs for d in deployments for rs in store.list_objects(REPLICASET, "default", owner=d["metadata"]["name"])
    ]
    pods = [p for rs in replica_sets for p in store.list_controlled_pods("default", rs["metadata"]["name"])]
    for obj in [*objects, *deployments, *replica_sets, *pods]:
        copy_into(api_client, obj)
    return sim, KubernetesCluster(api_client)


def state_of(cluster, now: float) -> dict:
    return runtime_kserve.inferenceservice_state("default", "llm", cluster=cluster, router=NoRouter(), now=now)


def test_the_adapter_reads_what_the_dashboard_shows_of_an_inferenceservice(world):
    sim, k8s = world
    assert runtime_kserve.supported(k8s)
    assert [i["metadata"]["name"] for i in runtime_kserve.list_inferenceservices(cluster=k8s)] == ["llm"]
    assert runtime_kserve.deploy_config(k8s).default_deployment_mode == "Standard"
    now = sim.loop.now()
    from_api = state_of(k8s, now)
    from_sim = state_of(sim.store, now)
    assert from_api["strategy"] == from_sim["strategy"]
    assert from_api["strategy"]["predictor"]["maxSurge"] == {"value": "50%", "source": "configMap", "count": 1}
    assert [(d["name"], d["counts"], d["complete"]) for d in from_api["deployments"]] == [
        (d["name"], d["counts"], d["complete"]) for d in from_sim["deployments"]
    ]
    assert [(i["pod"], i["state"], i["gate"]) for i in from_api["instances"]] == [
        (i["pod"], i["state"], i["gate"]) for i in from_sim["instances"]
    ]
    assert from_api["traffic"] == from_sim["traffic"] and from_api["converged"] is True


def test_owner_filters_keep_to_the_inferenceservices_own_objects(world, api_client):
    _, k8s = world
    stray = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "unrelated", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": {"labels": {"app": "x"}}}},
    }
    copy_into(api_client, stray)
    assert [d["metadata"]["name"] for d in k8s.list_objects("Deployment", "default", owner="llm")] == ["llm-predictor"]
    assert len(k8s.list_objects("Deployment", "default")) == 2


def test_a_control_patches_the_inferenceservice_with_its_resource_version_and_a_stale_one_conflicts(world):
    _, k8s = world
    isvc = k8s.get_object("InferenceService", "default", "llm")
    config = runtime_kserve.deploy_config(k8s)
    patch = controls.start_canary(isvc, config, percent=20, image="vllm/vllm-openai:v0.9.2")
    rv = isvc["metadata"]["resourceVersion"]
    after = k8s.patch_object("InferenceService", "default", "llm", patch, resource_version=rv)
    assert after["spec"]["canary"][0]["trafficPercent"] == 20
    assert after["metadata"]["generation"] == isvc["metadata"]["generation"] + 1
    with pytest.raises(Conflict):
        k8s.patch_object("InferenceService", "default", "llm", controls.promote(after, config), resource_version=rv)


def test_pause_patches_the_deployment_and_nothing_else_is_patchable(world):
    _, k8s = world
    paused = k8s.patch_object("Deployment", "default", "llm-predictor", controls.pause_patch())
    assert paused["spec"]["paused"] is True
    with pytest.raises(ValueError, match="not changed by the product"):
        k8s.patch_object("ReplicaSet", "default", "x", {"spec": {"replicas": 0}})


def test_a_cluster_without_kserve_lists_no_inferenceservice(apiserver):
    from apiserver_double import INFERENCESERVICES, MODELSERVINGS, RESOURCES, RunningApiServer

    without = {k: v for k, v in RESOURCES.items() if k != INFERENCESERVICES}
    with RunningApiServer(without, {MODELSERVINGS}) as server:
        client = server.api_client()
        assert runtime_kserve.list_inferenceservices(cluster=KubernetesCluster(client)) == []
        client.close()


# -- The web's ServiceAccount, with the rules of deploy/rbac.yaml ----------------------------------


@pytest.fixture
def rbac_world():
    """deploy/'s RBAC with the controls binding of namespace default (where the InferenceService is)."""
    from test_rbac_enforced import controls_binding

    yield from _rbac_world([controls_binding("default")])


@pytest.fixture
def unmanaged_rbac_world():
    """deploy/'s RBAC alone: no namespace's controls are bound."""
    yield from _rbac_world([])


def _rbac_world(extra):
    from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer
    from test_rbac_enforced import WEB, RbacFromManifests

    with RunningApiServer(RESOURCES, {MODELSERVINGS}, authorizer=RbacFromManifests(extra)) as server:
        admin = server.api_client()
        sim = simulated(60)
        store = sim.store
        copy_into(admin, store.get_object(CONFIGMAP, kserve_controller.CONFIG_NAMESPACE, kserve_controller.CONFIG_NAME))
        copy_into(admin, store.get_object(INFERENCESERVICE, "default", "llm"))
        for d in store.list_objects(DEPLOYMENT, "default", owner="llm"):
            copy_into(admin, d)
        copy_into(
            admin,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "other", "namespace": kserve_controller.CONFIG_NAMESPACE},
                "data": {"x": "y"},
            },
        )
        web = server.api_client(WEB)
        yield KubernetesCluster(web), web
        web.close()
        admin.close()


def test_the_webs_account_reads_and_patches_inferenceservices_and_pauses_their_deployments(rbac_world):
    web, _ = rbac_world
    (isvc,) = web.list_objects("InferenceService")
    assert runtime_kserve.deploy_config(web).default_deployment_mode == "Standard"
    assert [d["metadata"]["name"] for d in web.list_objects("Deployment", "default", owner="llm")] == ["llm-predictor"]
    patch = controls.set_image(isvc, runtime_kserve.deploy_config(web), image="vllm/vllm-openai:v0.9.2")
    web.patch_object("InferenceService", "default", "llm", patch, resource_version=isvc["metadata"]["resourceVersion"])
    web.patch_object("Deployment", "default", "llm-predictor", controls.pause_patch())


def test_without_a_controls_binding_the_webs_account_patches_no_inferenceservice_or_deployment(
    unmanaged_rbac_world,
):
    from controller.k8s import Forbidden

    web, _ = unmanaged_rbac_world
    (isvc,) = web.list_objects("InferenceService")  # reads stay cluster-wide
    with pytest.raises(Forbidden, match='cannot patch resource "inferenceservices"'):
        web.patch_object("InferenceService", "default", "llm", {"metadata": {"annotations": {"a": "b"}}})
    with pytest.raises(Forbidden, match='cannot patch resource "deployments"'):
        web.patch_object("Deployment", "default", "llm-predictor", controls.pause_patch())
    assert isvc["metadata"]["name"] == "llm"


@pytest.mark.parametrize(
    "what, call",
    [
        (
            "delete an inferenceservice",
            ("DELETE", "/apis/serving.kserve.io/v1beta1/namespaces/default/inferenceservices/llm"),
        ),
        ("delete a deployment", ("DELETE", "/apis/apps/v1/namespaces/default/deployments/llm-predictor")),
        ("read another configmap of kserve", ("GET", "/api/v1/namespaces/kserve/configmaps/other")),
        ("list configmaps", ("GET", "/api/v1/namespaces/kserve/configmaps")),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_the_webs_account_may_do_nothing_else_with_kserves_objects(rbac_world, what, call):
    from controller.k8s import Forbidden

    _, client = rbac_world
    method, path = call
    with pytest.raises(Forbidden):
        raw_json(client, method, path, what=what)
