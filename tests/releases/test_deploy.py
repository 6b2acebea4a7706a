"""Deploy, approval, rollback to a release and promotion, on the database-backed simulated cluster
driven by a manual clock: the release's content lands in the templates together, the controller
revision is linked both ways, and the status machine follows the rollout."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controller.core import naming
from controller.core.controls import ControlError
from rolloutui.models import AuditRecord
from rolloutui.releases.models import DeploymentRevision
from rolloutui.services import actions, controls, state
from rolloutui.services.controls import ControlDenied
from rolloutui.services.releases import deploy, records, templates

from .conftest import IMAGE_CRASH, IMAGE_V1, IMAGE_V2, converged, manifest, version_values

pytestmark = pytest.mark.django_db


def plan(user, version="chat-llm:v1", environment="staging", **extra):
    dr, _ = records.create_release(
        user,
        {"environment": environment, "modelVersion": version, "reason": f"release {version}", **extra},
        source="api",
    )
    return dr


def status_of(dr) -> str:
    return DeploymentRevision.objects.get(pk=dr.pk).status


def roll(sim, dr, name="chat", seconds=400, namespace="default"):
    """Run the cluster until ``dr`` leaves Deploying (or ``seconds`` pass). Returns its status."""
    sim.run(seconds, name, namespace=namespace, until=lambda: status_of(dr) != "Deploying")
    return DeploymentRevision.objects.get(pk=dr.pk)


def live_roles(namespace="default", name="chat"):
    ms = state.get_manifest(namespace, name)
    return {r["name"]: r for r in ms["spec"]["template"]["roles"]}


def env_of(container) -> dict:
    return {e["name"]: e["value"] for e in container.get("env") or []}


# -- Deploy ------------------------------------------------------------------------------------------------


def test_deploy_writes_image_model_schema_config_and_label_into_entry_and_worker_templates_together(world, operator):
    dr = plan(operator, "chat-llm:v2", resourceProfile="pd-small", config={"batching": {"maxBatchSize": 32}})
    record = deploy.deploy(operator, "default", "chat", dr.number, reason="try v2", source="api")

    roles = live_roles()
    for role, keys in (("prefill", ("entryTemplate", "workerTemplate")), ("decode", ("entryTemplate",))):
        for key in keys:
            template = roles[role][key]
            c = template["spec"]["containers"][0]
            env = env_of(c)
            assert c["image"] == IMAGE_V2, (role, key)
            assert env["MODEL_URI"] == "s3://models/chat-llm/v2/" and env["MODEL_VERSION"] == "chat-llm.v2"
            assert env["MODEL_CHECKSUM"] == world["v2"].artifact_checksum
            assert (
                env["MODEL_INPUT_SCHEMA_VERSION"] == "chat-in-v2"
                and env["MODEL_OUTPUT_SCHEMA_VERSION"] == "chat-out-v2"
            )
            assert json.loads(env["MODEL_CONFIG"]) == {
                "batching": {"maxBatchSize": 32, "maxConcurrentSequences": 64},
                "timeouts": {"requestSeconds": 60},
            }
            assert env["LOG_LEVEL"] == "info"  # variables a release does not own are kept
            assert template["metadata"]["labels"][templates.LABEL_MODEL_VERSION] == "chat-llm.v2"
            gpus = "2" if role == "prefill" else "1"
            assert c["resources"]["limits"] == {"cpu": "4", "memory": "32Gi", naming.GPU_RESOURCE: gpus}

    ms = state.get_manifest("default", "chat")
    cause = ms["metadata"]["annotations"][naming.ANNOTATION_CHANGE_CAUSE]
    assert cause == "deploy r1 (v2) to staging by operator: try v2"

    dr = DeploymentRevision.objects.get(pk=dr.pk)
    assert dr.status == "Deploying" and dr.deployed_by_name == "operator"
    wanted = controls._revision_of(ms, state.get_cluster().list_revisions("default", "chat"))
    assert dr.controller_revision == wanted["hash"]
    assert (record.action, record.namespace, record.name, record.result) == ("deploy", "default", "chat", "ok")
    assert record.details["release"] == {"number": 1, "version": "chat-llm:v2", "env": "staging"}
    assert record.from_revision == "1" and record.to_revision == "2"


def test_the_controller_revision_is_linked_both_ways(world, operator):
    dr = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", dr.number, reason="v2", source="api")
    world["sim"].reconcile("chat")
    dr = DeploymentRevision.objects.get(pk=dr.pk)
    current = state.get_state("default", "chat")
    assert current["updateRevision"] == dr.controller_revision  # release -> revision
    shown = records.releases_of_modelserving("default", "chat")  # revision -> release
    assert shown["byRevision"][dr.controller_revision]["label"] == "r1 · v2"
    assert shown["environment"] == "staging" and shown["active"]["number"] == 1
    listed = {r["hash"]: r for r in current["revisions"]}
    assert listed[dr.controller_revision]["number"] == dr.controller_revision_number == 2


def test_a_release_goes_pending_deploying_serving_through_a_simulated_rollout(world, operator):
    dr = plan(operator, "chat-llm:v2")
    assert dr.status == "Pending"
    deploy.deploy(operator, "default", "chat", dr.number, reason="v2 to staging", source="api")
    dr = roll(world["sim"], dr)
    assert dr.status == "Serving", dr.status_reason
    assert [e["status"] for e in dr.events] == ["Pending", "Deploying", "Serving"]
    assert dr.events[-1]["by"] == "controller" and "passed every gate" in dr.status_reason
    view = state.get_state("default", "chat")
    assert view["converged"] and view["currentRevision"] == dr.controller_revision
    assert all(i["revision"] == dr.controller_revision for i in view["instances"])


def test_a_crashing_image_makes_the_release_failed_with_the_reason(world, operator):
    records.register_model_version(operator, version_values("v3", image=IMAGE_CRASH), source="api")
    dr = plan(operator, "chat-llm:v3")
    deploy.deploy(operator, "default", "chat", dr.number, reason="try the broken build", source="api")
    dr = roll(world["sim"], dr)
    assert dr.status == "Failed"
    assert "failed at gate" in dr.status_reason and "group 1" in dr.status_reason, dr.status_reason
    # The rollout stopped on it: the other group still runs the old revision.
    view = state.get_state("default", "chat")
    assert any(i["revision"] != dr.controller_revision for i in view["instances"])


def test_a_release_whose_modelserving_moves_on_without_a_release_is_superseded(world, operator):
    dr = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", dr.number, reason="v2", source="api")
    roll(world["sim"], dr)
    controls.set_image(
        operator, "default", "chat", role="decode", image=IMAGE_V1, reason="hotfix by hand", source="api"
    )
    world["sim"].reconcile("chat")
    dr = DeploymentRevision.objects.get(pk=dr.pk)
    assert dr.status == "Superseded" and "no release wrote" in dr.status_reason


def test_only_a_pending_release_can_be_deployed(world, operator):
    dr = plan(operator)
    deploy.deploy(operator, "default", "chat", dr.number, reason="v1", source="api")
    with pytest.raises(ControlError, match="r1 is Deploying: only a Pending release can be deployed") as err:
        deploy.deploy(operator, "default", "chat", dr.number, reason="again", source="api")
    assert err.value.field == "number"


def test_a_second_deploy_supersedes_the_live_release(world, operator):
    first = plan(operator, "chat-llm:v1")
    deploy.deploy(operator, "default", "chat", first.number, reason="v1", source="api")
    second = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", second.number, reason="v2", source="api")
    first = DeploymentRevision.objects.get(pk=first.pk)
    assert first.status == "Superseded" and first.status_reason == "replaced by r2 (v2)"
    assert status_of(second) == "Deploying"


# -- Approval ----------------------------------------------------------------------------------------------


@pytest.fixture
def prod(world):
    world["sim"].create(manifest("chat", namespace="prod"))
    assert world["sim"].run(120, "chat", namespace="prod", until=lambda: converged("chat", "prod"))
    return world


def test_an_unapproved_version_is_refused_where_approval_is_required_with_the_reason(prod, operator):
    dr = plan(operator, "chat-llm:v2", environment="production")  # planning is allowed
    with pytest.raises(ControlError) as err:
        deploy.deploy(operator, "prod", "chat", dr.number, reason="ship it", source="api")
    assert err.value.field == "modelVersion"
    assert str(err.value).startswith(
        "environment production requires an approved model version, and chat-llm:v2 is Registered"
    )
    assert status_of(dr) == "Pending"
    refused = AuditRecord.objects.filter(action="deploy", result="error").get()
    assert (refused.namespace, refused.name, refused.reason) == ("prod", "chat", "ship it")
    assert "requires an approved model version" in refused.error


def test_an_approved_version_deploys_where_approval_is_required(prod, operator, approver):
    records.approve(approver, "chat-llm", "v2", reason="eval 4711 passed", source="api")
    dr = plan(operator, "chat-llm:v2", environment="production")
    deploy.deploy(operator, "prod", "chat", dr.number, reason="ship it", source="api")
    assert status_of(dr) == "Deploying"


def test_staging_takes_an_unapproved_version(world, operator):
    dr = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", dr.number, reason="try", source="api")
    assert status_of(dr) == "Deploying"


def test_approval_needs_the_approve_permission_and_operating_needs_operate(world, operator, approver):
    with pytest.raises(ControlDenied, match="lacks the permission releases.approve_modelversion"):
        records.approve(operator, "chat-llm", "v2", reason="I wrote it", source="api")
    denied = AuditRecord.objects.filter(action="approve", result="error").get()
    assert (denied.actor_name, denied.name) == ("operator", "chat-llm:v2")
    dr = plan(operator, "chat-llm:v2")
    with pytest.raises(ControlDenied):
        deploy.deploy(approver, "default", "chat", dr.number, reason="approvers do not deploy", source="api")
    record = records.approve(approver, "chat-llm", "v2", reason="eval passed", source="api")
    assert (record.action, record.actor_name, record.reason, record.result) == (
        "approve",
        "approver",
        "eval passed",
        "ok",
    )
    shown = records.model_version_json(records.get_model_version("chat-llm", "v2"))
    assert shown["status"] == "Approved" and shown["approval"]["by"] == "approver"
    assert shown["approval"]["reason"] == "eval passed" and shown["approval"]["at"]


def test_a_version_is_approved_once_and_a_deprecated_version_takes_no_new_release(world, operator, approver):
    with pytest.raises(ControlError, match="chat-llm:v1 is Approved; it cannot become Approved"):
        records.approve(approver, "chat-llm", "v1", reason="again", source="api")
    records.deprecate(approver, "chat-llm", "v2", reason="superseded by v3", source="api")
    with pytest.raises(ControlError, match="chat-llm:v2 is deprecated") as err:
        plan(operator, "chat-llm:v2")
    assert err.value.field == "modelVersion"
    with pytest.raises(ControlError, match="Deprecated; it cannot become Approved"):
        records.approve(approver, "chat-llm", "v2", reason="changed my mind", source="api")


# -- Rollback to a release -----------------------------------------------------------------------------


def test_rollback_to_a_release_restores_model_image_config_schema_and_resources_together(world, operator):
    sim = world["sim"]
    r1 = plan(operator, "chat-llm:v1", resourceProfile="pd-small")
    deploy.deploy(operator, "default", "chat", r1.number, reason="v1", source="api")
    assert roll(sim, r1).status == "Serving"
    layers_r1 = templates.read_layers(state.get_manifest("default", "chat"), roles=["prefill", "decode"])
    r1 = DeploymentRevision.objects.get(pk=r1.pk)

    r2 = plan(operator, "chat-llm:v2", resourceProfile="pd-large", config={"timeouts": {"requestSeconds": 5}})
    deploy.deploy(operator, "default", "chat", r2.number, reason="v2 with bigger pods", source="api")
    sim.run(20, "chat")

    # The dialog's comparison: every layer changes, each under its own name.
    change = deploy.release_change("default", "chat", r1.number)
    assert change["live"]["number"] == 2 and change["changed"] == list(templates.LAYERS)
    by_layer = {entry["layer"]: entry["changes"] for entry in change["layers"]}
    assert {"role": "decode", "field": "image", "from": IMAGE_V2, "to": IMAGE_V1} in by_layer["image"]
    assert {
        "role": "decode",
        "field": "MODEL_URI",
        "from": "s3://models/chat-llm/v2/",
        "to": "s3://models/chat-llm/v1/",
    } in by_layer["model"]
    assert {"role": "decode", "field": "timeouts.requestSeconds", "from": 5, "to": 60} in by_layer["config"]
    assert {"role": "decode", "field": "replicas", "from": 2, "to": 1} in by_layer["resources"]
    assert {
        "role": "prefill",
        "field": "MODEL_INPUT_SCHEMA_VERSION",
        "from": "chat-in-v2",
        "to": "chat-in-v1",
    } in by_layer["schema"]

    record = deploy.rollback_release(operator, "default", "chat", r1.number, reason="v2 answers wrongly", source="page")
    r3 = DeploymentRevision.objects.get(number=3)
    assert r3.restores_id == r1.pk and r3.model_version.version == "v1" and r3.profile == r1.profile
    assert templates.read_layers(state.get_manifest("default", "chat"), roles=["prefill", "decode"]) == layers_r1
    # The same template bytes: the controller revision r1 produced is selected again.
    assert r3.controller_revision == r1.controller_revision
    assert status_of(r2) == "RolledBack" and DeploymentRevision.objects.get(pk=r2.pk).status_reason == (
        "rolled back to r1 by operator: v2 answers wrongly"
    )
    assert status_of(r1) == "Superseded"
    cause = state.get_manifest("default", "chat")["metadata"]["annotations"][naming.ANNOTATION_CHANGE_CAUSE]
    assert cause == "roll back to r1 as r3 (v1) in staging by operator: v2 answers wrongly"
    assert (record.action, record.actor_name, record.reason, record.source) == (
        "rollback_release",
        "operator",
        "v2 answers wrongly",
        "page",
    )
    assert {k: record.details["replaces"][k] for k in ("number", "version")} == {"number": 2, "version": "chat-llm:v2"}
    assert record.details["release"] == {"number": 3, "version": "chat-llm:v1", "env": "staging"}
    assert record.from_revision and record.to_revision and record.from_revision != record.to_revision
    assert roll(sim, r3).status == "Serving"


def test_rolling_back_to_the_live_release_or_one_never_deployed_is_refused(world, operator):
    r1 = plan(operator)
    deploy.deploy(operator, "default", "chat", r1.number, reason="v1", source="api")
    with pytest.raises(ControlError, match="r1 is the live release already"):
        deploy.rollback_release(operator, "default", "chat", 1, reason="x", source="api")
    plan(operator, "chat-llm:v2")
    with pytest.raises(ControlError, match="r2 was never deployed"):
        deploy.rollback_release(operator, "default", "chat", 2, reason="x", source="api")
    assert DeploymentRevision.objects.count() == 2  # a refused rollback leaves no release behind


# -- Promote to production -----------------------------------------------------------------------------


def test_promote_creates_and_deploys_the_production_release_of_a_version_serving_in_staging(prod, operator):
    sim = prod["sim"]
    staged = plan(operator, "chat-llm:v1", resourceProfile="pd-small", config={"batching": {"maxBatchSize": 4}})
    with pytest.raises(ControlError, match="only a release that is Serving can be promoted"):
        deploy.promote_release(operator, "default", "chat", staged.number, reason="too early", source="api")
    deploy.deploy(operator, "default", "chat", staged.number, reason="v1 to staging", source="api")
    assert roll(sim, staged).status == "Serving"

    record = deploy.promote_release(operator, "default", "chat", staged.number, reason="green in staging", source="cli")
    promoted = DeploymentRevision.objects.get(environment__name="production")
    assert (promoted.number, promoted.status, promoted.promoted_from_id) == (1, "Deploying", staged.pk)
    assert promoted.config == {"batching": {"maxBatchSize": 4}} and promoted.resource_profile == "pd-small"
    assert (record.action, record.namespace, record.name) == ("promote_release", "prod", "chat")
    assert status_of(staged) == "Serving"  # staging keeps its own status
    assert roll(sim, promoted, namespace="prod").status == "Serving"


def test_the_cli_promotes_a_release_serving_in_staging_to_production_naming_only_the_release(prod, operator):
    # The release is the command's positional target; promote-release's own --target (the
    # production ModelServing) is optional and must not be taken from it.
    staged = plan(operator, "chat-llm:v1")
    deploy.deploy(operator, "default", "chat", staged.number, reason="v1 to staging", source="api")
    assert roll(prod["sim"], staged).status == "Serving"

    out = io.StringIO()
    call_command("rollout", "promote-release", f"default/chat/r{staged.number}", "--reason", "green in staging",
                 "--user", "operator", stdout=out)  # fmt: skip
    assert "promote-release default/chat r1: ok" in out.getvalue(), out.getvalue()
    promoted = DeploymentRevision.objects.get(environment__name="production")
    assert (promoted.status, promoted.promoted_from_id) == ("Deploying", staged.pk)


def test_promoting_an_unapproved_version_to_production_is_refused(prod, operator):
    staged = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", staged.number, reason="v2", source="api")
    assert roll(prod["sim"], staged).status == "Serving"
    with pytest.raises(ControlError, match="requires an approved model version"):
        deploy.promote_release(operator, "default", "chat", staged.number, reason="ship", source="api")
    assert not DeploymentRevision.objects.filter(environment__name="production").exists()


# -- Through the action registry: API and CLI ------------------------------------------------------------


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def test_the_release_actions_run_through_the_api_and_the_cli_under_their_declared_names(
    world, operator_client, approver_client, operator
):
    resp = post(approver_client, "/api/model-versions/chat-llm/v2/approve", {"reason": "eval passed"})
    assert resp.status_code == 200, resp.content
    assert resp.json()["audit"]["action"] == "approve" and resp.json()["modelVersion"]["status"] == "Approved"
    assert post(operator_client, "/api/model-versions/chat-llm/v2/deprecate", {"reason": "x"}).status_code == 403

    created = post(
        operator_client,
        "/api/deployment-revisions/",
        {"environment": "staging", "modelVersion": "chat-llm:v2", "reason": "v2 to staging"},
    )
    assert created.status_code == 201, created.content
    assert created.json()["deploymentRevision"]["status"] == "Pending"
    resp = post(operator_client, "/api/deployment-revisions/default/chat/1/deploy", {"reason": "go"})
    assert resp.status_code == 200, resp.content
    assert resp.json()["deploymentRevision"]["status"] == "Deploying"
    assert resp.json()["audit"]["action"] == "deploy"
    missing = post(operator_client, "/api/deployment-revisions/default/chat/1/deploy", {})
    assert missing.status_code == 400 and list(missing.json()) == ["reason"]

    out = io.StringIO()
    call_command("release", "plan", "--environment", "staging", "--version", "chat-llm:v1", "--reason", "back",
                 "--user", "operator", stdout=out)  # fmt: skip
    assert "planned default/chat/r2 (chat-llm:v1) in staging: Pending" in out.getvalue()
    out = io.StringIO()
    call_command("rollout", "deploy", "default/chat/r2", "--reason", "from the shell", "--user", "operator", stdout=out)
    assert "deploy default/chat r2: ok" in out.getvalue()
    assert AuditRecord.objects.filter(action="deploy", source="cli", result="ok").count() == 1
    with pytest.raises(CommandError, match="^target: expected NAMESPACE/NAME/rN"):
        call_command("rollout", "deploy", "default/chat", "--reason", "x", "--user", "operator")
    with pytest.raises(CommandError, match="permission denied"):
        call_command("rollout", "approve", "chat-llm:v1", "--reason", "x", "--user", "operator")


def test_the_page_descriptions_say_where_each_release_action_goes(world, operator_client, approver):
    from rolloutui.services.actions import page_description

    described = page_description(approver, targets=(actions.MODEL_VERSION, actions.DEPLOYMENT_REVISION))["actions"]
    by_name = {a["name"]: a for a in described}
    assert list(by_name) == ["approve", "deprecate", "deploy", "rollback-release", "rollback-layer", "promote-release"]
    assert by_name["approve"]["urlTemplate"] == "/api/model-versions/{model}/{version}/approve"
    assert by_name["approve"]["allowed"] is True and by_name["deploy"]["allowed"] is False
    assert by_name["deploy"]["urlTemplate"] == "/api/deployment-revisions/{namespace}/{name}/{number}/deploy"
    assert by_name["rollback-release"]["targetKeys"] == ["namespace", "name", "number"]
    ms_page = page_description(approver, api_base="/api/modelservings/default/chat/")["actions"]
    assert "approve" not in {a["name"] for a in ms_page}
