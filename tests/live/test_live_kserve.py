"""KServe on the live app's simulated cluster (database rows, advanced by the tick): the same
simulated KServe, Deployment and ReplicaSet controllers as ``simulate``, run by ``tick``."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db.models import Count

from controller.core.kserve import apps
from controller.core.kserve.view import inferenceservice_view
from controller.models import SimObject, SimTraffic
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.objects import DEPLOYMENT, INFERENCESERVICE, REPLICASET
from tests.factories import inferenceservice

from .helpers import ManualClock, config

pytestmark = pytest.mark.django_db

STANDARD = '{"defaultDeploymentMode": "Standard"}'


def manifest(name="llm", replicas=8, image="engine:v1", mode=None):
    return inferenceservice(name, replicas=replicas, image=image, mode=mode)


def make(nodes=2, gpus=8, deploy=STANDARD):
    cluster = DatabaseCluster(ManualClock(), actor="operator", config=config())
    for _ in range(nodes):
        cluster.add_node(gpus)
    if deploy is not None:
        cluster.create_object(kserve_controller.config_map(deploy))
    return cluster


def view(cluster, name="llm"):
    deployments = cluster.list_objects(DEPLOYMENT, "default", owner=name)
    rss = [rs for d in deployments for rs in cluster.list_objects(REPLICASET, "default", owner=apps.name(d))]
    pods = [p for rs in rss for p in cluster.list_controlled_pods("default", apps.name(rs))]
    return inferenceservice_view(
        cluster.get_object(INFERENCESERVICE, "default", name),
        deployments,
        rss,
        pods,
        kserve_controller.read_deploy_config(cluster),
        cluster.clock.now(),
    )


def run(cluster, seconds, *, each=None):
    for _ in range(int(seconds)):
        cluster.clock.t += 1
        tick(cluster)
        if each is not None:
            each(view(cluster))


def test_ticks_run_a_standard_rollout_of_8_within_10_pods_and_6_available():
    cluster = make()
    cluster.create_object(manifest())
    run(cluster, 45)
    assert view(cluster)["converged"]
    cluster.patch_object(INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"model": {"image": "engine:v2"}}}})
    seen = []

    def record(v):
        active = [i for i in v["instances"] if i["state"] != "Deleting"]
        seen.append((len(active), sum(1 for i in active if i["state"] == "Ready")))

    run(cluster, 200, each=record)
    assert max(p for p, _ in seen) == 10
    assert min(a for _, a in seen) == 6
    final = view(cluster)
    assert final["converged"]
    assert {rs["revision"]: rs["replicas"] for rs in final["deployments"][0]["replicaSets"]} == {1: 0, 2: 8}
    assert final["strategy"]["predictor"]["maxSurge"] == {"value": "25%", "source": "default", "count": 2}


def test_the_live_controllers_keep_their_state_in_rows_only():
    # Every object the controllers made is a row a fresh process reads back: a new store object
    # (another worker) continues the rollout where the previous one stopped.
    cluster = make()
    cluster.create_object(manifest(replicas=2))
    run(cluster, 45)
    cluster.patch_object(INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"model": {"image": "engine:v2"}}}})
    run(cluster, 3)
    other = DatabaseCluster(cluster.clock, actor="kubelet", config=config())
    for _ in range(120):  # 25% of 2: one pod at a time (surge 1, unavailable 0), 38 s each
        other.clock.t += 1
        tick(other)
    assert view(other)["converged"]
    kinds = dict(SimObject.objects.values_list("kind").annotate(n=Count("id")))
    assert kinds["Deployment"] == 1 and kinds["ReplicaSet"] == 2 and kinds["Pod"] == 2


def test_a_serverless_canary_splits_the_traffic_in_the_status_and_promote_moves_it():
    cluster = make(gpus=4, deploy=None)
    cluster.create_object(manifest(replicas=1, mode="Serverless"))
    run(cluster, 45)
    patch = {"spec": {"predictor": {"canaryTrafficPercent": 10, "model": {"image": "engine:v2"}}}}
    cluster.patch_object(INFERENCESERVICE, "default", "llm", patch)
    run(cluster, 45)
    v = view(cluster)
    assert [(t["revision"], t["percent"]) for t in v["traffic"]] == [
        ("llm-predictor-00002", 10),
        ("llm-predictor-00001", 90),
    ]
    cluster.patch_object(INFERENCESERVICE, "default", "llm", {"spec": {"predictor": {"canaryTrafficPercent": None}}})
    run(cluster, 40)
    v = view(cluster)
    assert [(t["revision"], t["percent"]) for t in v["traffic"]] == [("llm-predictor-00002", 100)]
    assert v["revisions"]["predictor"]["previousRolledoutRevision"] == "llm-predictor-00001"
    assert {i["revision"] for i in v["instances"]} == {"llm-predictor-00002"}  # scaled to zero
    assert v["converged"]


def test_deleting_an_inferenceservice_deletes_its_deployments_replica_sets_and_pods():
    cluster = make()
    cluster.create_object(manifest(replicas=2))
    SimTraffic.objects.create(kind=SimTraffic.KIND_INFERENCESERVICE, namespace="default", name="llm", rps=1)
    run(cluster, 45)
    cluster.delete_object(INFERENCESERVICE, "default", "llm")
    assert not SimObject.objects.filter(kind__in=[DEPLOYMENT, REPLICASET]).exists()
    assert all(
        p["metadata"].get("deletionTimestamp")
        for p in SimObject.objects.filter(kind="Pod").values_list("data", flat=True)
    )
    assert not SimTraffic.objects.filter(kind=SimTraffic.KIND_INFERENCESERVICE).exists()
    run(cluster, 5)
    assert not SimObject.objects.filter(kind="Pod").exists()


def test_load_demo_adds_the_demo_inferenceservice_which_the_tick_brings_to_ready():
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    text = out.getvalue()
    assert "created InferenceService default/llm" in text and "created ModelServing default/demo" in text
    cluster = DatabaseCluster(ManualClock(), actor="kubelet", config=config())
    run(cluster, 45)
    v = view(cluster)
    assert v["converged"] and len(v["instances"]) == 4
    assert v["strategy"]["predictor"] == {
        "maxSurge": {"value": "50%", "source": "configMap", "count": 2},
        "maxUnavailable": {"value": "25%", "source": "default", "count": 1},
        "mode": "Custom",
        "surgeGpus": 2,  # the surge's 2 pods of one GPU each
    }
    assert SimTraffic.objects.get(kind=SimTraffic.KIND_INFERENCESERVICE, name="llm").rps == 2.0
    again = io.StringIO()
    call_command("load_demo", stdout=again)
    assert "nothing to do" in again.getvalue()
