"""Rollback by layer: ONE layer of the live release (model, image, config, resources) goes back to
the value of the release deployed before it, the other layers stay, on the database-backed
simulated cluster; through the service, the REST API (permissions) and the CLI."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from controller.core.controls import ControlError
from rolloutui.models import AuditRecord
from rolloutui.releases.models import DeploymentRevision
from rolloutui.services import state
from rolloutui.services.cluster import get_cluster
from rolloutui.services.controls import ControlDenied
from rolloutui.services.releases import deploy, records, templates

from .conftest import IMAGE_V1, IMAGE_V2

pytestmark = pytest.mark.django_db

ROLES = ["prefill", "decode"]


def plan(user, version, **extra):
    dr, _ = records.create_release(
        user, {"environment": "staging", "modelVersion": version, "reason": f"release {version}", **extra}, source="api"
    )
    return dr


def layers_now() -> dict:
    return templates.read_layers(state.get_manifest("default", "chat"), roles=ROLES)


@pytest.fixture
def two_releases(world, operator):
    """r1 (v1, pd-small) Serving, then r2 (v2, pd-large, requestSeconds 5) live."""
    sim = world["sim"]
    r1 = plan(operator, "chat-llm:v1", resourceProfile="pd-small")
    deploy.deploy(operator, "default", "chat", r1.number, reason="v1", source="api")
    sim.run(400, "chat", until=lambda: DeploymentRevision.objects.get(pk=r1.pk).status != "Deploying")
    before = layers_now()
    r2 = plan(operator, "chat-llm:v2", resourceProfile="pd-large", config={"timeouts": {"requestSeconds": 5}})
    deploy.deploy(operator, "default", "chat", r2.number, reason="v2", source="api")
    sim.run(20, "chat")
    return {"r1": r1, "r2": r2, "r1_layers": before, "r2_layers": layers_now(), "sim": sim}


@pytest.mark.parametrize(
    "layer,back,kept",
    [
        ("image", {"image"}, {"model", "config", "resources", "schema"}),
        ("model", {"model", "schema"}, {"image", "config", "resources"}),
        ("config", {"config"}, {"model", "image", "resources", "schema"}),
        ("resources", {"resources"}, {"model", "image", "config", "schema"}),
    ],
    ids=[
        "rolling back the image brings r1's image back and keeps v2's model, config and resources",
        "rolling back the model brings r1's artifact, label and schema back and keeps v2's image",
        "rolling back the config brings r1's batching and timeouts back alone",
        "rolling back the resources brings r1's replicas and container resources back alone",
    ],
)
def test_one_layer_goes_back_to_the_previous_release_and_the_others_stay(two_releases, operator, layer, back, kept):
    r2 = two_releases["r2"]
    record = deploy.rollback_layer(
        operator, "default", "chat", r2.number, layer=layer, reason="bad " + layer, source="api"
    )
    now = layers_now()
    for role in ROLES:
        for name in back:
            assert now[role][name] == two_releases["r1_layers"][role][name], (role, name)
        for name in kept:
            assert now[role][name] == two_releases["r2_layers"][role][name], (role, name)
    r2 = DeploymentRevision.objects.get(pk=r2.pk)
    assert records.active_release(r2.target).pk == r2.pk  # still the live release
    assert r2.events[-1]["layerRollback"] == {"layer": layer, "to": 1}
    assert (record.action, record.result, record.reason) == ("rollback_layer", "ok", "bad " + layer)
    assert record.details["previous"]["number"] == 1 and record.details["changes"]
    assert record.from_revision != record.to_revision


def test_the_image_layer_rollback_rolls_out_and_the_release_keeps_serving_on_the_new_revision(two_releases, operator):
    sim, r2 = two_releases["sim"], two_releases["r2"]
    deploy.rollback_layer(
        operator, "default", "chat", r2.number, layer="image", reason="v2 image crashes", source="api"
    )
    assert {r: layers_now()[r]["image"]["image"] for r in ROLES} == dict.fromkeys(ROLES, IMAGE_V1)
    sim.run(400, "chat", until=lambda: DeploymentRevision.objects.get(pk=r2.pk).status == "Serving")
    r2 = DeploymentRevision.objects.get(pk=r2.pk)
    assert r2.status == "Serving"
    assert get_cluster().get_modelserving("default", "chat")["status"]["updateRevision"] == r2.controller_revision


def test_the_comparison_offers_each_layer_with_what_rolling_it_back_changes(two_releases):
    change = deploy.release_change("default", "chat", two_releases["r2"].number)
    options = change["layerRollback"]
    assert options["previous"]["number"] == 1
    by_layer = {entry["layer"]: entry["changes"] for entry in options["layers"]}
    assert list(by_layer) == list(templates.ROLLBACK_LAYERS)
    assert {"role": "decode", "field": "image", "from": IMAGE_V2, "to": IMAGE_V1} in by_layer["image"]
    assert all(c["field"] == "image" for c in by_layer["image"])
    assert {c["field"] for c in by_layer["config"]} == {"timeouts.requestSeconds"}


@pytest.mark.parametrize(
    "number,layer,field,message",
    [
        (1, "image", "number", "r1 is not the live release"),
        (2, "schema", "layer", "layer must be one of model, image, config, resources"),
        (2, "", "layer", "layer must be one of"),
    ],
    ids=[
        "a release that is not live has no layer to roll back",
        "the schema goes with the model: not a layer of its own",
        "an empty layer is refused naming the field",
    ],
)
def test_bad_layer_rollbacks_are_refused_naming_the_field(two_releases, operator, number, layer, field, message):
    with pytest.raises(ControlError, match=message) as err:
        deploy.rollback_layer(operator, "default", "chat", number, layer=layer, reason="x", source="api")
    assert err.value.field == field
    assert AuditRecord.objects.filter(action="rollback_layer", result="error").count() == 1


def test_a_layer_already_at_the_previous_value_or_without_a_previous_release_is_refused(two_releases, operator):
    deploy.rollback_layer(operator, "default", "chat", 2, layer="image", reason="first", source="api")
    with pytest.raises(ControlError, match="the image of r2 is already r1's: nothing to roll back"):
        deploy.rollback_layer(operator, "default", "chat", 2, layer="image", reason="again", source="api")


def test_a_viewer_may_not_roll_back_a_layer_and_is_audited(two_releases, viewer):
    with pytest.raises(ControlDenied):
        deploy.rollback_layer(viewer, "default", "chat", 2, layer="image", reason="x", source="api")
    assert AuditRecord.objects.filter(action="rollback_layer", result="error").count() == 1


def test_the_api_rolls_back_a_layer_for_an_operator_and_refuses_a_viewer(two_releases, operator_client, viewer_client):
    path = "/api/deployment-revisions/default/chat/2/rollback-layer"
    body = json.dumps({"layer": "config", "reason": "timeouts too short"})
    denied = viewer_client.post(path, body, content_type="application/json")
    assert denied.status_code == 403
    missing = operator_client.post(path, json.dumps({"reason": "x"}), content_type="application/json")
    assert missing.status_code == 400 and "layer" in missing.json()
    resp = operator_client.post(path, body, content_type="application/json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["audit"]["action"] == "rollback_layer"
    assert {r: layers_now()[r]["config"] for r in ROLES} == {r: two_releases["r1_layers"][r]["config"] for r in ROLES}


def test_the_cli_rolls_back_a_layer(two_releases):
    out = io.StringIO()
    call_command(
        "rollout", "rollback-layer", "default/chat/r2", "--layer", "image", "--reason", "from the shell",
        "--user", "operator", stdout=out,
    )  # fmt: skip
    assert "rollback-layer default/chat r2: ok" in out.getvalue()
    assert AuditRecord.objects.filter(action="rollback_layer", source="cli", result="ok").count() == 1


# -- InferenceService targets -----------------------------------------------------------------------------


def test_an_inferenceservice_release_is_compared_per_layer_and_a_layer_rolls_back_in_its_component(
    sim, operator, approver
):
    import copy

    from controller.simcluster.kserve import controller as kserve_controller
    from tests.factories import inferenceservice

    from .conftest import version_values

    sim.cluster.create_object(kserve_controller.config_map('{"defaultDeploymentMode": "Standard"}'))
    sim.cluster.create_object(copy.deepcopy(inferenceservice(replicas=1, image="registry.example/vllm-openai:old")))
    sim.run(60)
    records.register_model_version(operator, version_values("v1"), source="api")
    records.register_model_version(operator, version_values("v2", image=IMAGE_V2), source="api")
    records.create_environment(
        operator,
        {
            "name": "kserve-staging",
            "rank": 1,
            "targets": [{"kind": "InferenceService", "namespace": "default", "name": "llm", "component": "predictor"}],
        },
        source="api",
    )

    def release(version: str, **extra):
        dr, _ = records.create_release(
            operator,
            {"environment": "kserve-staging", "modelVersion": version, "reason": version, **extra},
            source="api",
        )
        return dr

    r1 = release("chat-llm:v1")
    change = deploy.release_change("default", "llm", r1.number)
    by_layer = {entry["layer"]: entry["changes"] for entry in change["layers"]}
    assert "note" not in change and "image" in change["changed"]
    assert {
        "role": "predictor",
        "field": "image",
        "from": "registry.example/vllm-openai:old",
        "to": IMAGE_V1,
    } in by_layer["image"]
    assert {"role": "predictor", "field": "storageUri", "from": None, "to": "s3://models/chat-llm/v1/"} in by_layer[
        "model"
    ]
    deploy.deploy(operator, "default", "llm", r1.number, reason="v1", source="api")
    sim.run(30)
    r2 = release("chat-llm:v2")
    deploy.deploy(operator, "default", "llm", r2.number, reason="v2", source="api")
    sim.run(30)

    options = deploy.release_change("default", "llm", r2.number)["layerRollback"]
    assert options["previous"]["number"] == r1.number
    deploy.rollback_layer(operator, "default", "llm", r2.number, layer="image", reason="v2 image bad", source="api")
    model = sim.cluster.get_object("InferenceService", "default", "llm")["spec"]["predictor"]["model"]
    env = {e["name"]: e.get("value") for e in model.get("env") or []}
    assert model["image"] == IMAGE_V1  # the image is r1's again
    assert (
        model["storageUri"] == "s3://models/chat-llm/v2/" and env["MODEL_VERSION"] == "chat-llm.v2"
    )  # v2's model stays


def test_the_remote_cli_has_the_rollback_layer_verb_from_the_servers_registry(operator_client):
    from rolloutui_cli import commands

    registry = operator_client.get("/api/actions/").json()
    parser = commands.build_parser(registry)
    options = vars(parser.parse_args(["rollback-layer", "default/chat/r2", "--layer", "image", "--reason", "leaks"]))
    action = next(a for a in registry["actions"] if a["name"] == "rollback-layer")
    path, body, _ = commands.action_request(action, options, read_file=None)
    assert path == "/api/deployment-revisions/default/chat/2/rollback-layer"
    assert body == {"layer": "image", "reason": "leaks"}
