"""REST reads of KServe InferenceServices: the list of both kinds with a kind column,
the InferenceService list and its state (the view simulate's trace frames are made from)."""

from __future__ import annotations

import pytest
from django.test import Client

from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.kserve import controller as kserve_controller

from .helpers import create_modelserving, unique_name

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self):
        self.t = 1_000_000.0

    def now(self):
        return self.t


@pytest.fixture
def isvc(db):
    """InferenceService default/llm with a 25% Standard-mode canary, rolled out by the tick."""
    from tests.live.helpers import config
    from tests.live.test_live_kserve import STANDARD, manifest

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    body = manifest(replicas=4)
    canary = {"name": "v2", **{k: v for k, v in body["spec"]["predictor"].items() if k != "minReplicas"}}
    body["spec"]["canary"] = [{"predictor": canary, "trafficPercent": 25}]
    cluster.create_object(body)
    for _ in range(50):
        cluster.clock.t += 1
        tick(cluster)
    return cluster


def test_anonymous_gets_401_on_the_kserve_reads(isvc):
    for path in ("/api/workloads/", "/api/inferenceservices/", "/api/inferenceservices/default/llm/"):
        assert Client().get(path).status_code == 401, path


def test_the_workload_list_has_both_kinds_with_a_kind_column(viewer_client, isvc):
    name = unique_name()
    create_modelserving(name, partition=0)
    rows = viewer_client.get("/api/workloads/").json()
    assert {(r["kind"], r["name"]) for r in rows} >= {("ModelServing", name), ("InferenceService", "llm")}
    only = viewer_client.get("/api/workloads/?kind=InferenceService").json()
    assert [(r["kind"], r["name"]) for r in only] == [("InferenceService", "llm")]
    assert viewer_client.get("/api/workloads/?kind=Pod").status_code == 400


def test_the_inferenceservice_row_summarises_its_state(viewer_client, isvc):
    (row,) = viewer_client.get("/api/inferenceservices/").json()
    assert row["phase"] == "Healthy" and row["deploymentMode"] == "Standard" and row["converged"]
    assert (row["replicas"], row["desired"], row["ready"]) == (4, 4, 4)  # 3 stable + 1 canary
    assert row["canary"] == "v2 25%"
    assert sorted(t["percent"] for t in row["traffic"]) == [25, 75]
    assert viewer_client.get("/api/inferenceservices/?phase=Degraded").json() == []


def test_the_detail_is_the_view_with_strategy_sources_and_canary(viewer_client, isvc):
    state = viewer_client.get("/api/inferenceservices/default/llm/").json()
    assert state["kind"] == "InferenceService" and state["converged"]
    assert state["strategy"]["predictor"]["maxSurge"] == {"value": "25%", "source": "default", "count": 1}
    assert {d["name"] for d in state["deployments"]} == {"llm-predictor", "llm-v2-predictor"}
    assert state["canary"]["canaries"][0] == {
        "name": "v2",
        "trafficPercent": 25,
        "ready": True,
        "deployment": "llm-v2-predictor",
        "image": "engine:v1",
    }
    assert {i["gate"] for i in state["instances"]} == {"Serving"}


def test_an_unknown_inferenceservice_is_404(viewer_client, isvc):
    assert viewer_client.get("/api/inferenceservices/default/nope/").status_code == 404


def test_a_modelmesh_inferenceservice_is_listed_as_unmanaged_with_the_reason_on_its_page(viewer_client, db):
    from tests.live.helpers import config
    from tests.live.test_live_kserve import STANDARD

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    cluster.create_object(
        {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {
                "name": "mm",
                "namespace": "default",
                "annotations": {"serving.kserve.io/deploymentMode": "ModelMesh"},
            },
            # The per-framework form ModelMesh's own samples use: never refused as malformed.
            "spec": {
                "predictor": {"sklearn": {"storageUri": "s3://modelmesh-example-models/sklearn/mnist-svm.joblib"}}
            },
        }
    )
    for _ in range(5):
        cluster.clock.t += 1
        tick(cluster)
    (row,) = [r for r in viewer_client.get("/api/inferenceservices/").json() if r["name"] == "mm"]
    assert (row["phase"], row["deploymentMode"], row["managed"]) == ("Unmanaged", "ModelMesh", False)
    state = viewer_client.get("/api/inferenceservices/default/mm/").json()
    assert state["error"] is None and state["managed"] is False
    assert "ModelMesh Serving" in state["unmanagedReason"]
    assert all("not managed by RolloutUI" in (why or "") for why in state["controls"].values())


def test_the_preview_of_a_new_image_shows_a_recreate_predictors_outage_before_anything_is_applied(
    operator_client, viewer_client, db
):
    from tests.live.helpers import config
    from tests.live.test_live_kserve import STANDARD, manifest

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    body = manifest(replicas=4)
    body["spec"]["predictor"]["deploymentStrategy"] = {"type": "Recreate"}
    cluster.create_object(body)
    for _ in range(50):
        cluster.clock.t += 1
        tick(cluster)
    generation = cluster.get_object("InferenceService", "default", "llm")["metadata"]["generation"]
    url = "/api/inferenceservices/default/llm/preview"
    answer = operator_client.post(url, {"image": "engine:v2"}, content_type="application/json")
    assert answer.status_code == 200, answer.content
    timeline = answer.json()
    assert (timeline["mode"], timeline["minAvailable"], timeline["desired"]) == ("Recreate", 0, 4)
    assert timeline["gapSeconds"] > 0 and timeline["converged"] and "outage" in timeline["note"]
    # Nothing was applied.
    assert cluster.get_object("InferenceService", "default", "llm")["metadata"]["generation"] == generation
    refused = operator_client.post(url, {"image": ""}, content_type="application/json")
    assert refused.status_code == 400 and "image" in refused.json()
    assert viewer_client.post(url, {"image": "engine:v2"}, content_type="application/json").status_code == 403
