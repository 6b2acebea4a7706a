"""Credentials in a model version's ``artifactUri`` (a URL's password, or a token standing as its
user part) are masked for anyone who may not operate: in the API, on the Releases page, in the audit
details and in what a release would change on its ModelServing (the ``MODEL_URI`` it writes).
Whoever may operate (every namespace, for the registry) sees the URI whole: they deploy it."""

from __future__ import annotations

import json
import re

import pytest

from rolloutui.services.releases import records

from .conftest import version_values

pytestmark = pytest.mark.django_db

PASSWORD_URI = "s3://trainer:pa55-w0rd-xyz@models.example/chat-llm/v7/"
TOKEN_URI = "https://hf_t0kenvalue123@huggingface.co/org/chat-llm/v8"
SECRETS = ("pa55-w0rd-xyz", "hf_t0kenvalue123")


@pytest.fixture
def versions(world, operator):
    records.register_model_version(operator, version_values("v7", artifactUri=PASSWORD_URI), source="api")
    records.register_model_version(operator, version_values("v8", artifactUri=TOKEN_URI), source="api")
    return world


def shows_no_secret(text: str) -> bool:
    return not any(secret in text for secret in SECRETS)


@pytest.mark.parametrize(
    "version, shown",
    [
        ("v7", "s3://trainer:<masked>@models.example/chat-llm/v7/"),
        ("v8", "https://<masked>@huggingface.co/org/chat-llm/v8"),
    ],
    ids=["a password in the URL", "a token as the URL's user"],
)
def test_a_viewer_reads_a_model_version_with_its_credentials_masked(versions, viewer_client, version, shown):
    detail = viewer_client.get(f"/api/model-versions/chat-llm/{version}/").json()
    assert detail["artifactUri"] == shown
    listed = {v["key"]: v for v in viewer_client.get("/api/model-versions/").json()["results"]}
    assert listed[f"chat-llm:{version}"]["artifactUri"] == shown


def test_an_operator_reads_the_uri_whole(versions, operator_client):
    assert operator_client.get("/api/model-versions/chat-llm/v8/").json()["artifactUri"] == TOKEN_URI


def test_the_releases_page_embeds_masked_uris_for_a_viewer(versions, viewer_client):
    html = viewer_client.get("/releases/").content.decode()
    assert shows_no_secret(html)
    data = json.loads(re.search(r'<script id="releases-data" type="application/json">(.*?)</script>', html, re.S)[1])
    assert {v["artifactUri"] for v in data["versions"] if v["version"] in ("v7", "v8")} == {
        "s3://trainer:<masked>@models.example/chat-llm/v7/",
        "https://<masked>@huggingface.co/org/chat-llm/v8",
    }


def test_the_audit_of_a_registration_masks_the_uri_for_a_viewer(versions, viewer_client, operator_client):
    as_viewer = json.dumps(viewer_client.get("/api/audit/?action=register_version").json())
    assert "chat-llm:v8" in as_viewer and shows_no_secret(as_viewer)
    as_operator = json.dumps(operator_client.get("/api/audit/?action=register_version").json())
    assert all(secret in as_operator for secret in SECRETS)


def test_what_a_release_would_change_masks_the_model_uri_for_a_viewer(versions, operator, viewer_client):
    records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v8", "reason": "v8"}, source="api"
    )
    change = viewer_client.get("/api/deployment-revisions/default/chat/1/change").json()
    model = next(layer for layer in change["layers"] if layer["layer"] == "model")
    uris = [c["to"] for c in model["changes"] if c["field"] == "MODEL_URI"]
    assert uris and all(u == "https://<masked>@huggingface.co/org/chat-llm/v8" for u in uris)
    assert shows_no_secret(json.dumps(change))
