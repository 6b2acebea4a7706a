"""POST /api/request-records/ (batches, token auth, its own permission, limits, errors per record,
all or nothing) and GET .../comparison/ (figures per revision over one window, stable vs canary)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from knox.models import AuthToken

from controller.models import RequestAggregate, RequestRecord
from rolloutui.models import AuditRecord, NamespaceGrant
from tests.conftest import TEST_PASSWORD

pytestmark = pytest.mark.django_db

URL = "/api/request-records/"


def record(i=0, **over):
    r = {
        "requestId": f"req-{i}",
        "namespace": "default",
        "name": "chat",
        "revision": "5f8d2c42cf",
        "deploymentRevision": "3",
        "modelVersion": "chat-llm:v2",
        "latencyMs": 120.5,
        "status": "ok",
        "feedback": 0.9,
        "started": 1_700_000_000 + i,
        "finished": 1_700_000_001.5 + i,
    }
    r.update(over)
    return r


@pytest.fixture
def ingester(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="shipper", password=TEST_PASSWORD)
    user.groups.add(Group.objects.get(name="ingesters"))
    return user


def token_client(user) -> Client:
    _, token = AuthToken.objects.create(user)
    return Client(HTTP_AUTHORIZATION=f"Token {token}")


def post(client, body, **extra):
    return client.post(URL, data=json.dumps(body), content_type="application/json", **extra)


def test_a_valid_batch_is_stored_with_its_sums_and_is_not_audited(ingester):
    resp = post(token_client(ingester), [record(i) for i in range(20)])
    assert resp.status_code == 201, resp.content
    assert resp.json() == {"stored": 20}
    row = RequestRecord.objects.get(request_id="req-3")
    assert (row.revision, row.deployment_revision, row.model_version, row.latency_ms, row.status) == (
        "5f8d2c42cf",
        "3",
        "chat-llm:v2",
        120.5,
        "ok",
    )
    assert sum(RequestAggregate.objects.values_list("requests", flat=True)) == 20
    assert not AuditRecord.objects.exists()


def test_a_batch_may_be_wrapped_and_may_give_iso_times(ingester):
    body = {"records": [record(0, started="2026-12-01T00:00:00Z", finished="2026-12-01T00:00:01.250+00:00")]}
    assert post(token_client(ingester), body).status_code == 201
    row = RequestRecord.objects.get()
    assert row.finished - row.started == pytest.approx(1.25)


@pytest.mark.parametrize(
    "bad, field, words",
    [
        ({"latencyMs": "fast"}, "latencyMs", "must be a number"),
        ({"latencyMs": -1}, "latencyMs", "at least 0"),
        ({"latencyMs": None}, "latencyMs", "required for an answered request"),
        ({"status": "great"}, "status", "must be one of ok, error, timeout, interrupted"),
        ({"namespace": "Bad_NS"}, "namespace", "Kubernetes name"),
        ({"revision": ""}, "revision", "required"),
        ({"started": "yesterday"}, "started", "not an ISO 8601 time"),
        ({"started": "2026-12-01T00:00:00"}, "started", "no time zone"),
        ({"finished": 1_600_000_000}, "finished", "must not be before started"),
        ({"feedback": True}, "feedback", "must be a number"),
        ({"colour": "red"}, "colour", "unknown field"),
    ],
)
def test_an_invalid_record_is_named_by_index_and_field_and_nothing_is_stored(ingester, bad, field, words):
    batch = [record(i) for i in range(5)]
    batch[3] = record(3, **bad)
    resp = post(token_client(ingester), batch)
    assert resp.status_code == 400
    errors = resp.json()["records"]
    assert list(errors) == ["3"] and field in errors["3"], errors
    assert words in errors["3"][field][0]
    assert not RequestRecord.objects.exists() and not RequestAggregate.objects.exists()


def test_a_timeout_or_interrupted_record_needs_no_latency(ingester):
    batch = [record(0, status="timeout", latencyMs=None), record(1, status="interrupted", latencyMs=None)]
    assert post(token_client(ingester), batch).status_code == 201


@pytest.mark.parametrize(
    "body, words",
    [([], "empty"), ({"rows": []}, "JSON list"), ("text", "JSON list")],
)
def test_a_batch_that_is_not_a_list_of_records_is_refused(ingester, body, words):
    resp = post(token_client(ingester), body)
    assert resp.status_code == 400 and words in resp.json()["records"][0]


def test_too_many_records_or_too_large_a_body_is_refused(ingester, settings):
    settings.ROLLOUTUI_RECORDS_MAX_BATCH = 10
    client = token_client(ingester)
    resp = post(client, [record(i) for i in range(11)])
    assert resp.status_code == 400 and "at most 10" in resp.json()["records"][0]
    settings.ROLLOUTUI_RECORDS_MAX_BODY_BYTES = 2048
    resp = post(client, [record(i) for i in range(10)])
    assert resp.status_code == 413
    assert not RequestRecord.objects.exists()


def test_a_body_larger_than_the_general_limit_is_accepted_up_to_the_records_limit(ingester, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    resp = post(token_client(ingester), [record(i) for i in range(50)])
    assert resp.status_code == 201, resp.content


def test_without_a_token_it_is_401_and_a_signed_in_session_is_not_enough(ingester):
    assert post(Client(), [record()]).status_code == 401
    session = Client()
    session.force_login(ingester)
    assert post(session, [record()]).status_code == 401
    assert post(Client(HTTP_AUTHORIZATION="Token nonsense"), [record()]).status_code == 401


def test_without_the_permission_it_is_403_even_for_an_operator(operator):
    resp = post(token_client(operator), [record()])
    assert resp.status_code == 403 and "ingest_requestrecords" in resp.json()["detail"]
    assert not RequestRecord.objects.exists()


def test_a_namespace_grant_allows_records_of_that_namespace_only(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="team-a-shipper", password=TEST_PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace="team-a", role="ingester")
    client = token_client(user)
    assert post(client, [record(namespace="team-a")]).status_code == 201
    resp = post(client, [record(1, namespace="team-a"), record(2, namespace="team-b")])
    assert resp.status_code == 403 and "team-b" in resp.json()["detail"]
    assert RequestRecord.objects.count() == 1
    assert Group.objects.get(name="ingesters").permissions.filter(codename="ingest_requestrecords").exists()


# -- comparison ----------------------------------------------------------------------------------


@pytest.fixture
def chat(db, monkeypatch):
    from controller.records import store
    from rolloutui.services import cluster as cluster_service
    from tests.live.helpers import ManualClock

    clock = ManualClock(1_700_000_600.0)
    monkeypatch.setattr(cluster_service, "get_clock", lambda: clock)
    c = cluster_service.get_cluster()
    from tests.releases.conftest import manifest

    c.create_modelserving(manifest("chat"))
    obj = c.get_modelserving("default", "chat")
    status = {
        "currentRevision": "stable1",
        "updateRevision": "canary2",
        "canary": {"revision": "canary2", "stable": "stable1", "phase": "Running", "stepIndex": 1},
    }
    c.replace_modelserving_status("default", "chat", status, resource_version=obj["metadata"]["resourceVersion"])

    def rec(i, revision, status="ok", latency=100.0):
        return {
            "request_id": str(i),
            "namespace": "default",
            "name": "chat",
            "revision": revision,
            "latency_ms": latency,
            "status": status,
            "feedback": None,
            "started": 1_700_000_000.0 + i,
            "finished": 1_700_000_001.0 + i,
        }

    store.write_records([rec(i, "stable1") for i in range(0, 600)])
    store.write_records([rec(i, "canary2", "error" if i % 5 == 0 else "ok", 300.0) for i in range(300, 600)])
    return clock


def test_the_comparison_names_stable_and_canary_with_their_figures_over_the_same_window(chat, viewer_client):
    resp = viewer_client.get("/api/modelservings/default/chat/comparison/?window=300&bucket=60")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["window"] == {"start": 1_700_000_300.0, "end": 1_700_000_600.0, "seconds": 300.0}
    assert body["stable"]["revision"] == "stable1" and body["stable"]["requests"] == 300
    assert body["stable"]["errorRate"] == 0.0 and body["stable"]["latencyP99Ms"] == 100.0
    assert body["canary"]["revision"] == "canary2" and body["canary"]["requests"] == 300
    assert body["canary"]["errorRate"] == 0.2 and body["canary"]["latencyP50Ms"] == 300.0
    assert [r["revision"] for r in body["revisions"]] == ["canary2", "stable1"]
    canary_points = [p for p in body["series"] if p["revision"] == "canary2"]
    assert [p["bucketStart"] for p in canary_points] == [1_700_000_300.0 + 60 * k for k in range(5)]
    assert all(p["requests"] == 60 for p in canary_points)
    assert set(body["series"][0]) >= {"revision", "bucketStart", "requests", "errorRate", "latencyP99Ms"}


@pytest.mark.parametrize(
    "query, field", [("window=abc", "window"), ("window=0", "window"), ("window=60&bucket=120", "bucket")]
)
def test_a_bad_comparison_window_is_named(chat, viewer_client, query, field):
    resp = viewer_client.get(f"/api/modelservings/default/chat/comparison/?{query}")
    assert resp.status_code == 400 and field in resp.json()


def test_the_comparison_of_an_unknown_modelserving_is_404(chat, viewer_client):
    assert viewer_client.get("/api/modelservings/default/nope/comparison/").status_code == 404
