"""The release records' validation: digest-pinned images, checksums, unique model+version,
immutability, and the same refusals from the API and the CLI, each naming the field."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controller.core.controls import ControlError
from rolloutui.models import AuditRecord
from rolloutui.releases import contract
from rolloutui.releases.models import DeploymentRevision, ImmutableRecord, ModelVersion
from rolloutui.services.releases import records

from .conftest import IMAGE_V1, digest, version_values

pytestmark = pytest.mark.django_db

HEX = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "image",
    [
        f"vllm/vllm-openai@sha256:{HEX}",
        f"registry.example:5000/team/vllm-openai@sha256:{HEX}",
        f"vllm/vllm-openai:v0.9.1@sha256:{HEX}",
        f"localhost/engine@sha256:{HEX}",
    ],
    ids=["docker hub path", "registry with port", "tag beside the digest", "single-level repository"],
)
def test_an_image_pinned_by_digest_is_accepted(image):
    assert contract.runtime_image(image) == image


@pytest.mark.parametrize(
    "image, words",
    [
        ("vllm/vllm-openai:v0.9.1", "must be pinned by digest"),
        ("vllm/vllm-openai", "must be pinned by digest"),
        ("vllm/vllm-openai:latest", "a tag alone can be moved"),
        ("vllm/vllm-openai@sha256:abc", "malformed digest"),
        (f"vllm/vllm-openai@sha512:{HEX}", "malformed digest"),
        (f"vllm/vllm-openai@sha256:{HEX.upper()}", "malformed digest"),
        (f"Bad Name@sha256:{HEX}", "not a valid image reference"),
    ],
    ids=["a tag", "no tag at all", "latest", "a short digest", "another algorithm", "upper-case hex", "a bad name"],
)
def test_an_image_without_a_valid_digest_is_refused_naming_the_field(image, words):
    with pytest.raises(ControlError, match=words) as err:
        contract.runtime_image(image)
    assert err.value.field == "runtimeImage" and str(err.value).startswith("runtimeImage ")


@pytest.mark.parametrize(
    "value, stored",
    [(f"sha256:{HEX}", f"sha256:{HEX}"), (HEX.upper(), f"sha256:{HEX}")],
    ids=["with its algorithm", "bare upper-case hex"],
)
def test_a_sha256_checksum_is_stored_with_its_algorithm_in_lower_case(value, stored):
    assert contract.checksum(value, "artifactChecksum") == stored


@pytest.mark.parametrize("value", ["md5:abc", "sha256:" + "g" * 64, "sha256:" + "a" * 63, "a" * 65, "checksum"])
def test_a_checksum_that_is_not_sha256_is_refused(value):
    with pytest.raises(ControlError, match="must be a SHA-256 checksum") as err:
        contract.checksum(value, "artifactChecksum")
    assert err.value.field == "artifactChecksum"


@pytest.mark.parametrize(
    "change, field",
    [
        ({"runtimeImage": "engine:v1"}, "runtimeImage"),
        ({"artifactChecksum": "md5:1"}, "artifactChecksum"),
        ({"preprocessing": {"ref": "hf://t", "checksum": "nope"}}, "preprocessing.checksum"),
        ({"preprocessing": {"checksum": digest("x")}}, "preprocessing.ref"),
        ({"artifactUri": "models/v1"}, "artifactUri"),
        ({"model": "Chat_LLM"}, "model"),
        ({"version": "v1/2"}, "version"),
        ({"inputSchemaVersion": ""}, "inputSchemaVersion"),
        ({"resources": {"gpus": -1}}, "resources.gpus"),
        ({"resources": {"memory": "8 GB"}}, "resources.memory"),
        ({"resources": {"tpus": 1}}, "resources.tpus"),
        ({"batching": {"maxBatchSize": 0}}, "batching.maxBatchSize"),
        ({"timeouts": {"requestSeconds": "soon"}}, "timeouts.requestSeconds"),
        ({"runtimeImg": IMAGE_V1}, "runtimeImg"),
        ({"model": "m" * 40, "version": "v" * 30}, "version"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_bad_model_version_is_refused_naming_the_field(change, field):
    with pytest.raises(ControlError) as err:
        contract.model_version(version_values(**change))
    assert err.value.field == field, str(err.value)


def test_registering_a_version_keeps_every_field_of_the_contract_and_audits_it(operator):
    values = version_values("v1")
    mv, record = records.register_model_version(operator, values, reason="trained", source="api")
    shown = records.model_version_json(mv)
    assert {k: shown[k] for k in values} == values
    assert shown["status"] == "Registered" and shown["approval"] is None and shown["createdBy"] == "operator"
    assert (record.action, record.name, record.reason, record.result) == (
        "register_version",
        "chat-llm:v1",
        "trained",
        "ok",
    )


def test_a_model_and_version_that_exist_are_refused_a_second_time(operator):
    records.register_model_version(operator, version_values("v1"), source="api")
    with pytest.raises(ControlError, match="already exists; a model version is immutable") as err:
        records.register_model_version(operator, version_values("v1", artifactUri="s3://other/"), source="cli")
    assert err.value.field == "version"
    assert ModelVersion.objects.count() == 1
    assert AuditRecord.objects.filter(action="register_version", result="error").count() == 1


def test_the_same_version_name_under_another_model_is_a_different_version(operator):
    records.register_model_version(operator, version_values("v1"), source="api")
    records.register_model_version(operator, version_values("v1", model="code-llm"), source="api")
    assert ModelVersion.objects.filter(version="v1").count() == 2


def test_a_registered_version_cannot_be_changed_only_its_approval_state_can(operator, approver):
    mv, _ = records.register_model_version(operator, version_values("v1"), source="api")
    mv.runtime_image = "registry.example/other@sha256:" + HEX
    with pytest.raises(ImmutableRecord, match="runtimeImage: model version chat-llm:v1 is immutable"):
        mv.save()
    records.approve(approver, "chat-llm", "v1", reason="ok", source="api")
    assert ModelVersion.objects.get().status == "Approved"
    assert ModelVersion.objects.get().runtime_image == IMAGE_V1


def test_a_deployment_revision_cannot_be_changed_only_its_status_can(world, operator):
    dr, _ = records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v2", "reason": "try v2"}, source="api"
    )
    dr.config = {"batching": {"maxBatchSize": 1}}
    with pytest.raises(ImmutableRecord, match="immutable"):
        dr.save()
    fresh = DeploymentRevision.objects.get(pk=dr.pk)
    fresh.move("Deploying", reason="go")
    fresh.save()
    with pytest.raises(ControlError, match="r1 is Deploying; it cannot become Pending"):
        fresh.move("Pending")


def test_the_status_machine_allows_only_its_transitions():
    allowed = DeploymentRevision.TRANSITIONS
    assert allowed["Pending"] == {"Deploying"}
    assert allowed["Deploying"] == {"Serving", "Failed", "Superseded", "RolledBack"}
    assert allowed["Serving"] == {"Superseded", "RolledBack"} == allowed["Failed"]
    assert allowed["Superseded"] == allowed["RolledBack"] == frozenset()


# -- API ---------------------------------------------------------------------------------------------------


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def test_the_api_registers_lists_filters_and_shows_a_version(operator_client, viewer_client):
    resp = post(operator_client, "/api/model-versions/", {**version_values("v1"), "reason": "new weights"})
    assert resp.status_code == 201, resp.content
    assert resp.json()["modelVersion"]["key"] == "chat-llm:v1" and resp.json()["audit"]["reason"] == "new weights"
    post(operator_client, "/api/model-versions/", version_values("v2", model="code-llm"))
    listed = viewer_client.get("/api/model-versions/?model=chat-llm").json()
    assert listed["count"] == 1 and listed["results"][0]["version"] == "v1"
    assert viewer_client.get("/api/model-versions/?status=Approved").json()["count"] == 0
    detail = viewer_client.get("/api/model-versions/chat-llm/v1/")
    assert detail.status_code == 200 and detail.json()["deployments"] == []
    assert viewer_client.get("/api/model-versions/chat-llm/v9/").status_code == 404


def test_the_api_refuses_a_tag_naming_the_field_and_edits_of_a_version(operator_client, viewer_client):
    resp = post(operator_client, "/api/model-versions/", version_values("v1", runtimeImage="vllm/vllm-openai:v0.9.1"))
    assert resp.status_code == 400 and list(resp.json()) == ["runtimeImage"]
    assert "pinned by digest" in resp.json()["runtimeImage"][0]
    post(operator_client, "/api/model-versions/", version_values("v1"))
    again = post(operator_client, "/api/model-versions/", version_values("v1"))
    assert again.status_code == 400 and "already exists" in again.json()["version"][0]
    for method in ("put", "patch", "delete"):
        resp = getattr(operator_client, method)(
            "/api/model-versions/chat-llm/v1/", "{}", content_type="application/json"
        )
        assert resp.status_code == 405 and "immutable" in resp.json()["detail"], method
    assert post(viewer_client, "/api/model-versions/", version_values("v3")).status_code == 403


def test_the_api_creates_and_lists_environments_with_targets(operator_client, viewer_client):
    body = {
        "name": "staging",
        "resourceProfiles": {"gpu-small": {"resources": {"gpus": 1}}},
        "targets": [{"namespace": "default", "name": "chat", "roles": ["decode"]}],
    }
    resp = post(operator_client, "/api/environments/", body)
    assert resp.status_code == 201, resp.content
    env = viewer_client.get("/api/environments/staging/").json()
    assert env["targets"][0] == {
        "kind": "ModelServing",
        "namespace": "default",
        "name": "chat",
        "roles": ["decode"],
        "container": "",
        "active": None,
    }
    clash = post(operator_client, "/api/environments/", {**body, "name": "qa"})
    assert clash.status_code == 400 and "already belongs to an environment" in clash.json()["targets[0]"][0]
    bad = post(operator_client, "/api/environments/", {"name": "x", "resourceProfiles": {"p": {"replicas": 0}}})
    assert bad.status_code == 400 and list(bad.json()) == ["resourceProfiles.p.replicas"]


def test_the_cli_lists_and_registers_records_with_the_same_checks(operator, tmp_path):
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(version_values("v1")))
    out = io.StringIO()
    call_command("release", "register", str(path), "--reason", "trained", "--user", "operator", stdout=out)
    assert "registered chat-llm:v1 (Registered" in out.getvalue()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(version_values("v2", runtimeImage="engine:v2")))
    with pytest.raises(CommandError, match="^runtimeImage: runtimeImage must be pinned by digest"):
        call_command("release", "register", str(bad), "--user", "operator")
    listing = io.StringIO()
    call_command("release", "versions", stdout=listing)
    assert "chat-llm" in listing.getvalue() and "v1" in listing.getvalue() and "Registered" in listing.getvalue()
    shown = io.StringIO()
    call_command("release", "version", "chat-llm:v1", stdout=shown)
    assert json.loads(shown.getvalue())["runtimeImage"] == IMAGE_V1
