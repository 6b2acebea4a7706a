"""Records of requests still running (status ``running``, no finish time): evidence of the canary
analysis (the traffic contract's "Evidence before progress": a window counts the requests that
started in it, and a latency check counts the unfinished ones by their age), stored apart from the
sums until their request ends."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from knox.models import AuthToken

from controller.core.evidence import count_against
from controller.models import RequestAggregate, RequestRecord
from controller.records import store
from controller.records.figures import DatabaseMetrics
from tests.conftest import TEST_PASSWORD

pytestmark = pytest.mark.django_db


def rec(started, *, request_id, status="ok", latency=100.0, finished=None, revision="r1"):
    return {
        "request_id": request_id,
        "namespace": "default",
        "name": "ms",
        "revision": revision,
        "latency_ms": latency,
        "status": status,
        "feedback": None,
        "started": started,
        "finished": finished if finished is not None or status == "running" else started + 1.0,
    }


def window(start=1000.0, end=1030.0, at=1040.0):
    return DatabaseMetrics().window("default", "ms", "r1", start, end, at=at)


def test_a_running_request_is_started_but_not_finished_and_joins_the_sums_once_it_ends():
    store.write_records([rec(1005.0, request_id="a", status="running", latency=None)])
    assert not RequestAggregate.objects.exists()
    got = window()
    assert (got["started"], got["requests"]) == (1, 0)
    store.write_records([rec(1005.0, request_id="a", finished=1012.0)])
    assert list(RequestRecord.objects.values_list("status", flat=True)) == ["ok"]
    got = window()
    assert (got["started"], got["requests"]) == (1, 1)
    assert sum(RequestAggregate.objects.values_list("requests", flat=True)) == 1


def test_a_running_request_is_evidence_by_its_age_until_its_answer_is_known():
    store.write_records(
        [rec(1000.0 + i, request_id=f"done-{i}", latency=200.0) for i in range(20)]
        + [
            # waiting for its answer since 1005: 35 s old at 1040
            rec(1005.0, request_id="slow", status="running", latency=None),
            # answered after 3 s (by 1023), still streaming: its latency is known
            rec(1020.0, request_id="streaming", status="running", latency=3000.0),
            # says its answer comes after 60 s, which is after 1040: still waiting, 12 s old
            rec(1028.0, request_id="late", status="running", latency=60_000.0),
        ]
    )
    got = window()
    assert (got["started"], got["requests"]) == (23, 20)
    assert sorted(got["evidence"]["waiting"]) == [12_000.0, 35_000.0]
    counted = count_against(1000.0, got["evidence"])
    assert (counted.above, counted.waiting_above, counted.undecided) == (3, 2, 0)


def test_a_finished_record_that_came_first_keeps_its_late_running_record_out():
    store.write_records([rec(1005.0, request_id="a", finished=1009.0)])
    store.write_records([rec(1005.0, request_id="a", status="running", latency=None)])
    assert list(RequestRecord.objects.values_list("status", flat=True)) == ["ok"]
    assert window()["started"] == 1


def test_the_p99_request_duration_is_a_figure_of_the_finished_requests():
    store.write_records([rec(1000.0 + i, request_id=f"r{i}", finished=1000.0 + i + 4.0) for i in range(20)])
    assert window()["durationP99Ms"] == 4000.0


def test_cleanup_deletes_running_records_that_never_finished_once_past_the_retention():
    store.write_records(
        [
            rec(1000.0, request_id="lost", status="running", latency=None),
            rec(9000.0, request_id="live", status="running", latency=None),
        ]
    )
    deleted = store.cleanup(10_000.0, records_seconds=4_000, aggregates_seconds=8_000)
    assert deleted["records"] == 1
    assert list(RequestRecord.objects.values_list("request_id", flat=True)) == ["live"]


URL = "/api/request-records/"


def api_record(**over):
    r = {
        "requestId": "req-1",
        "namespace": "default",
        "name": "chat",
        "revision": "5f8d2c42cf",
        "status": "running",
        "started": 1_700_000_000,
    }
    r.update(over)
    return r


@pytest.fixture
def shipper(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="shipper", password=TEST_PASSWORD)
    user.groups.add(Group.objects.get(name="ingesters"))
    _, token = AuthToken.objects.create(user)
    return Client(HTTP_AUTHORIZATION=f"Token {token}")


def post(client, body):
    return client.post(URL, data=json.dumps(body), content_type="application/json")


def test_the_ingestion_api_accepts_a_record_of_a_request_still_running_and_then_its_end(shipper):
    assert post(shipper, [api_record()]).status_code == 201
    assert post(shipper, [api_record(latencyMs=900)]).status_code == 201  # answered, still streaming
    row = RequestRecord.objects.get()
    assert (row.status, row.finished, row.latency_ms) == ("running", None, 900.0)
    ended = api_record(status="ok", latencyMs=900, finished=1_700_000_030)
    assert post(shipper, [ended]).status_code == 201
    assert list(RequestRecord.objects.values_list("status", "finished")) == [("ok", 1_700_000_030.0)]


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"finished": 1_700_000_001}, "finished", "a running request has not finished"),
        ({"status": "ok", "latencyMs": 10}, "finished", "this field is required"),
        ({"started": None}, "started", "this field is required"),
    ],
    ids=[
        "a running record with a finish time is refused naming finished",
        "a finished status without a finish time is refused naming finished",
        "a running record without a start time is refused naming started",
    ],
)
def test_a_running_record_that_contradicts_itself_is_refused_naming_the_field(shipper, over, field, words):
    resp = post(shipper, [api_record(**over)])
    assert resp.status_code == 400
    assert words in resp.json()["records"]["0"][field][0]
    assert not RequestRecord.objects.exists()
