"""The Releases page and the ModelServing page's release data: rendered for signed-in viewers, data
through json_script only (escaped), the release actions described for the page's buttons."""

from __future__ import annotations

import json
import re

import pytest

from rolloutui.services.releases import deploy, records

from .conftest import version_values

pytestmark = pytest.mark.django_db


def embedded(html: str, element_id: str):
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert found, f"no json_script {element_id}"
    return json.loads(found.group(1))


def test_the_releases_page_shows_environments_versions_and_history_to_a_viewer(world, operator, viewer_client):
    dr, _ = records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v2", "reason": "try v2"}, source="api"
    )
    deploy.deploy(operator, "default", "chat", dr.number, reason="try v2", source="api")
    resp = viewer_client.get("/releases/")
    assert resp.status_code == 200
    html = resp.content.decode()
    data = embedded(html, "releases-data")
    assert [e["name"] for e in data["environments"]] == ["staging", "production"]
    assert data["environments"][0]["targets"][0]["active"]["label"] == "r1 · v2"
    assert {v["key"] for v in data["versions"]} == {"chat-llm:v1", "chat-llm:v2"}
    assert data["history"][0]["status"] == "Deploying" and data["history"][0]["reason"] == "try v2"
    described = {a["name"]: a for a in embedded(html, "rollout-actions")["actions"]}
    assert set(described) == {"approve", "deprecate", "deploy", "rollback-release", "rollback-layer", "promote-release"}
    assert not any(a["allowed"] for a in described.values())  # a viewer sees disabled buttons
    assert embedded(html, "boot")["canOperate"] is False


def test_the_releases_page_needs_a_signed_in_viewer(client):
    assert client.get("/releases/").status_code == 302


def test_the_modelserving_page_carries_its_releases_and_links_hashes_to_releases(world, operator, operator_client):
    dr, _ = records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v1", "reason": "v1"}, source="api"
    )
    deploy.deploy(operator, "default", "chat", dr.number, reason="v1", source="api")
    dr.refresh_from_db()
    html = operator_client.get("/modelservings/default/chat/").content.decode()
    releases = embedded(html, "releases")
    assert releases["environment"] == "staging" and releases["active"]["label"] == "r1 · v1"
    assert releases["byRevision"][dr.controller_revision]["label"] == "r1 · v1"
    boot = embedded(html, "boot")
    assert boot["releasesApi"] == "/api/modelservings/default/chat/releases"
    api = operator_client.get(boot["releasesApi"]).json()
    assert api["active"]["number"] == 1
    assert 'id="gate-funnel"' in html and 'id="fact-serving"' in html


def test_record_values_are_escaped_where_the_pages_embed_them(world, operator, viewer_client):
    sneaky = "</script><script>alert(1)</script>"
    records.register_model_version(operator, version_values("v9", labels={"x": sneaky}), source="api")
    records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v9", "reason": sneaky}, source="api"
    )
    html = viewer_client.get("/releases/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert embedded(html, "releases-data")["history"][0]["reason"] == sneaky


def test_the_admin_registers_a_version_through_the_service_and_refuses_a_tag(world, admin_client):
    from rolloutui.models import AuditRecord
    from rolloutui.releases.models import ModelVersion

    form = {
        **{k: v for k, v in version_values("v7").items() if not isinstance(v, dict)},
    }
    attrs = {
        "model": form["model"],
        "version": form["version"],
        "artifact_uri": form["artifactUri"],
        "artifact_checksum": form["artifactChecksum"],
        "format": form["format"],
        "framework_version": form["frameworkVersion"],
        "preprocessing": "{}",
        "input_schema_version": form["inputSchemaVersion"],
        "output_schema_version": form["outputSchemaVersion"],
        "runtime_image": "vllm/vllm-openai:v0.9.1",
        "resources": "{}",
        "batching": "{}",
        "timeouts": "{}",
        "source": "{}",
        "evaluation_id": "",
        "labels": "{}",
    }
    refused = admin_client.post("/admin/releases/modelversion/add/", attrs)
    assert refused.status_code == 200 and "must be pinned by digest" in refused.content.decode()
    attrs["runtime_image"] = version_values("v7")["runtimeImage"]
    done = admin_client.post("/admin/releases/modelversion/add/", attrs)
    assert done.status_code == 302, done.content.decode()[:2000]
    assert ModelVersion.objects.filter(version="v7").exists()
    assert AuditRecord.objects.filter(action="register_version", name="chat-llm:v7", source="admin").exists()
