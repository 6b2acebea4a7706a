"""The REST API's OpenAPI schema documents the release endpoints: the records, their filters, the
release actions with their bodies and answers."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(viewer_client) -> dict:
    resp = viewer_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert resp.status_code == 200
    return json.loads(resp.content)


def test_the_schema_documents_every_release_endpoint(schema):
    paths = schema["paths"]
    expected = {
        "/api/model-versions/": {"get", "post"},
        "/api/model-versions/{model}/{version}/": {"get"},
        "/api/model-versions/{model}/{version}/approve/": {"post"},
        "/api/model-versions/{model}/{version}/deprecate/": {"post"},
        "/api/environments/": {"get", "post"},
        "/api/environments/{name}/": {"get"},
        "/api/deployment-revisions/": {"get", "post"},
        "/api/deployment-revisions/{namespace}/{name}/{number}/": {"get"},
        "/api/deployment-revisions/{namespace}/{name}/{number}/change/": {"get"},
        "/api/deployment-revisions/{namespace}/{name}/{number}/deploy/": {"post"},
        "/api/deployment-revisions/{namespace}/{name}/{number}/rollback-release/": {"post"},
        "/api/deployment-revisions/{namespace}/{name}/{number}/promote-release/": {"post"},
        "/api/modelservings/{namespace}/{name}/releases/": {"get"},
    }
    for path, methods in expected.items():
        assert path in paths, path
        assert methods <= set(paths[path]), (path, set(paths[path]))
    # A model version is immutable: nothing edits or deletes one.
    assert not {"put", "patch", "delete"} & set(paths["/api/model-versions/{model}/{version}/"])


def test_the_schema_describes_the_bodies_filters_and_answers(schema):
    paths, components = schema["paths"], schema["components"]["schemas"]
    create = paths["/api/model-versions/"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = components[create.rsplit("/", 1)[-1]]
    assert {"runtimeImage", "artifactChecksum", "inputSchemaVersion", "outputSchemaVersion"} <= set(body["required"])
    assert "digest" in body["properties"]["runtimeImage"]["description"]
    filters = {p["name"] for p in paths["/api/deployment-revisions/"]["get"]["parameters"]}
    assert {"environment", "model", "version", "namespace", "name", "status"} <= filters
    promote = paths["/api/deployment-revisions/{namespace}/{name}/{number}/promote-release/"]["post"]
    ref = promote["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert ref == "PromoteReleaseRequest" and components[ref]["required"] == ["reason"]
    assert {"environment", "target", "resourceProfile"} <= set(components[ref]["properties"])
    answer = promote["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert set(components[answer]["properties"]) == {"audit", "deploymentRevision"}
    approve = paths["/api/model-versions/{model}/{version}/approve/"]["post"]
    assert "releases" in approve["tags"] and "403" in approve["responses"]
    assert "releases.approve_modelversion" in approve["responses"]["403"]["description"]
