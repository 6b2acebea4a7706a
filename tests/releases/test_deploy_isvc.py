"""A release (DeploymentRevision) that targets an InferenceService component: deploying
it writes the version's image, artifact (storageUri and MODEL_* env), config and the model-version
label into the component in one patch, and the simulated KServe controller rolls it out."""

from __future__ import annotations

import copy

import pytest

from controller.simcluster.kserve import controller as kserve_controller
from rolloutui.models import AuditRecord
from rolloutui.releases.models import DeploymentRevision
from rolloutui.services.releases import records
from tests.factories import inferenceservice

from .conftest import IMAGE_V1, version_values

pytestmark = pytest.mark.django_db

ISVC = inferenceservice(
    replicas=2, image="registry.example/vllm-openai:old", env=[{"name": "LOG_LEVEL", "value": "info"}]
)


@pytest.fixture
def isvc_world(sim, operator, approver):
    sim.cluster.create_object(kserve_controller.config_map('{"defaultDeploymentMode": "Standard"}'))
    sim.cluster.create_object(copy.deepcopy(ISVC))
    sim.run(60)
    records.register_model_version(operator, version_values("v1"), source="api")
    records.approve(approver, "chat-llm", "v1", reason="eval passed", source="api")
    records.create_environment(
        operator,
        {
            "name": "kserve-staging",
            "rank": 1,
            "targets": [{"kind": "InferenceService", "namespace": "default", "name": "llm", "component": "predictor"}],
        },
        source="api",
    )
    return sim


def test_deploying_a_release_to_an_inferenceservice_writes_image_artifact_and_label_into_the_component(
    isvc_world, operator, operator_client
):
    dr, _ = records.create_release(
        operator, {"environment": "kserve-staging", "modelVersion": "chat-llm:v1", "reason": "first"}, source="api"
    )
    resp = operator_client.post(
        f"/api/deployment-revisions/default/llm/{dr.number}/deploy",
        {"reason": "ship v1"},
        content_type="application/json",
    )
    assert resp.status_code == 200, resp.content
    predictor = isvc_world.cluster.get_object("InferenceService", "default", "llm")["spec"]["predictor"]
    model = predictor["model"]
    assert model["image"] == IMAGE_V1
    assert model["storageUri"] == "s3://models/chat-llm/v1/"
    env = {e["name"]: e["value"] for e in model["env"]}
    assert env["LOG_LEVEL"] == "info"  # not a release's variable: kept
    assert env["MODEL_URI"] == "s3://models/chat-llm/v1/" and env["MODEL_VERSION"] == "chat-llm.v1"
    assert env["MODEL_CHECKSUM"].startswith("sha256:") and "MODEL_CONFIG" in env
    assert predictor["labels"]["serving.rolloutui.io/model-version"] == "chat-llm.v1"
    dr = DeploymentRevision.objects.get(pk=dr.pk)
    assert dr.status == DeploymentRevision.Status.DEPLOYING and dr.generation == 2
    record = AuditRecord.objects.filter(action="deploy").latest("id")
    assert (record.result, record.namespace, record.name, record.from_revision, record.to_revision) == (
        "ok",
        "default",
        "llm",
        "1",
        "2",
    )
    # KServe (simulated) rolls the new template out.
    isvc_world.run(120)
    from rolloutui.services.kserve import controls as kserve_controls

    state = kserve_controls.get_state("default", "llm")
    assert state["converged"] and state["spec"]["components"]["predictor"]["image"] == IMAGE_V1


def test_a_release_to_a_missing_component_is_refused_naming_the_field(isvc_world, operator, operator_client):
    from rolloutui.releases.models import Target

    Target.objects.filter(kind="InferenceService").update(component="explainer")
    dr, _ = records.create_release(
        operator, {"environment": "kserve-staging", "modelVersion": "chat-llm:v1", "reason": "first"}, source="api"
    )
    resp = operator_client.post(
        f"/api/deployment-revisions/default/llm/{dr.number}/deploy", {"reason": "r"}, content_type="application/json"
    )
    assert resp.status_code == 400
    assert "component 'explainer' does not exist" in str(resp.json())


def test_the_resync_judges_an_inferenceservice_release_serving_once_every_pod_of_the_component_serves(
    isvc_world, operator, operator_client
):
    from rolloutui.services.releases import status

    dr, _ = records.create_release(
        operator, {"environment": "kserve-staging", "modelVersion": "chat-llm:v1", "reason": "first"}, source="api"
    )
    operator_client.post(
        f"/api/deployment-revisions/default/llm/{dr.number}/deploy", {"reason": "ship"}, content_type="application/json"
    )
    assert status.judge_inferenceservice_releases() == 0  # KServe has not rolled it out yet
    assert DeploymentRevision.objects.get(pk=dr.pk).status == DeploymentRevision.Status.DEPLOYING
    isvc_world.run(120)
    assert status.judge_inferenceservice_releases() == 1
    dr = DeploymentRevision.objects.get(pk=dr.pk)
    assert dr.status == DeploymentRevision.Status.SERVING and "2 pods of the predictor" in dr.status_reason

    # Someone sets another image from the InferenceService page: the release no longer describes it.
    operator_client.post(
        "/api/inferenceservices/default/llm/isvc-set-image",
        {"image": "registry.example/vllm-openai:hotfix", "reason": "hotfix"},
        content_type="application/json",
    )
    isvc_world.run(5)
    assert status.judge_inferenceservice_releases() == 1
    assert DeploymentRevision.objects.get(pk=dr.pk).status == DeploymentRevision.Status.SUPERSEDED


def test_the_periodic_resync_runs_the_resync_hooks(db, settings):
    from controller.runtime import periodic

    CALLS.clear()
    settings.ROLLOUTUI_RESYNC_HOOKS = ["tests.releases.test_deploy_isvc.record_call"]
    periodic.resync()
    assert CALLS == ["resync"]


CALLS: list = []


def record_call() -> None:
    CALLS.append("resync")
