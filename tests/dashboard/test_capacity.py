"""Capacity signals: the recommendation's arithmetic (table tests), the simulated GPU and queue
estimates, and GET /api/modelservings/<ns>/<name>/capacity/ (a viewer may read it; 404 unknown)."""

from __future__ import annotations

import pytest

from rolloutui.services.capacity import (
    RECOMMENDATION_LABEL,
    RoleLoad,
    queue_seconds,
    recommend,
    safe_concurrency,
    simulated_gpu,
)

CASES = [
    # (name, current, roles, expected replicas, words the reason must hold)
    (
        "40 in flight at 16 safe with 20% headroom need 4 decode instances, 2 groups at 2 per group",
        4,
        [RoleLoad("decode", 2, 40, None, 16)],
        2,
        ["40 / (16 x 0.8) = 3.1, rounded up", "4 instances", "2 groups", "2 could go", "drains like any delete"],
    ),
    (
        "the offered load counts when it is larger than what is in flight now",
        1,
        [RoleLoad("decode", 1, 5, 30.0, 16)],
        3,
        ["implied by the offered load (5 in flight now)", "3 instances", "add 2", "about 90 s from Created to Serving"],
    ),
    (
        "the role that needs the most groups sets the count",
        2,
        [RoleLoad("prefill", 1, 10, None, 16), RoleLoad("decode", 2, 60, None, 8)],
        5,
        ["decode:", "60 / (8 x 0.8) = 9.4", "10 instances", "5 groups"],
    ),
    (
        "no load never recommends zero groups",
        3,
        [RoleLoad("decode", 2, 0, 0.0, 16)],
        1,
        ["No requests reach decode", "never zero", "2 could go"],
    ),
    (
        "exactly full instances at the target need no extra one",
        2,
        [RoleLoad("decode", 1, 25, None, 16)],
        2,
        ["25 / (16 x 0.8) = 2, rounded up", "2 instances", "enough"],
    ),
    (
        "without a safe concurrency there is no recommendation, and it says why",
        2,
        [RoleLoad("decode", 1, 25, None, None)],
        None,
        ["safe concurrency per instance is unknown"],
    ),
]


@pytest.mark.parametrize("name,current,roles,expected,words", CASES, ids=[c[0] for c in CASES])
def test_recommendation(name, current, roles, expected, words):
    rec = recommend(current, roles, create_to_serving=90.0)
    assert rec.replicas == expected, rec.reason
    for w in words:
        assert w in rec.reason, (w, rec.reason)
    assert rec.to_json()["label"] == RECOMMENDATION_LABEL


@pytest.mark.parametrize(
    "batching,expected",
    [
        ({"maxBatchSize": 16, "maxConcurrentSequences": 128}, 16),
        ({"maxConcurrentSequences": 64}, 64),
        ({"maxBatchSize": 0}, None),
        ({"maxBatchSize": True}, None),
        ({}, None),
    ],
    ids=[
        "a full batch is the safe concurrency",
        "without a batch size the concurrent sequences are",
        "zero is not a safe concurrency",
        "a boolean is not a number",
        "no batching, no safe concurrency",
    ],
)
def test_safe_concurrency_comes_from_the_batching(batching, expected):
    assert safe_concurrency(batching) == expected


def test_requests_beyond_the_safe_concurrency_wait_by_littles_law():
    # [20, 12] in flight, 16 safe -> 4 queued; 8 requests/s -> 0.5 s.
    assert queue_seconds([20, 12], 16, 8.0) == 0.5
    assert queue_seconds([10, 12], 16, 8.0) == 0.0
    assert queue_seconds([20], None, 8.0) is None
    assert queue_seconds([20], 16, 0.0) is None


def test_the_simulated_gpu_follows_the_batch_and_the_sequences_in_flight():
    util, memory = simulated_gpu([8, 16], 16, 128)
    assert util == 0.75
    assert memory == pytest.approx(0.55 + 0.40 * 12 / 128, abs=1e-4)
    assert simulated_gpu([], 16, 128) == (None, None)


# --- The API ---------------------------------------------------------------------------------------
def test_a_viewer_reads_the_capacity_of_a_modelserving(ms, viewer_client):
    resp = viewer_client.get(f"/api/modelservings/{ms['namespace']}/{ms['name']}/capacity/")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["replicas"] == 4
    assert [r["name"] for r in body["roles"]] == ["prefill", "decode"]
    decode = body["roles"][1]
    assert decode["perGroup"] == 2 and decode["instances"] == 8 and decode["gpus"] == 8
    assert body["gpuSource"] == "simulated"
    # No release targets it: no safe concurrency, so no recommendation (and it says why).
    rec = body["recommendation"]
    assert rec["replicas"] is None and "unknown" in rec["reason"]
    assert rec["label"] == "recommendation, nothing is scaled"
    assert body["clock"]["speed"] > 0


def test_capacity_of_an_unknown_modelserving_is_404(db, viewer_client):
    resp = viewer_client.get("/api/modelservings/default/nope/capacity/")
    assert resp.status_code == 404


def test_capacity_needs_a_signed_in_user(ms, client):
    resp = client.get(f"/api/modelservings/{ms['namespace']}/{ms['name']}/capacity/")
    assert resp.status_code == 401


def test_dcgm_figures_are_averaged_per_role_by_the_pods_labels(monkeypatch):
    from controller.core.naming import LABEL_ROLE
    from rolloutui.services import capacity

    asked = []

    def fake(url, query):
        asked.append(query)
        if "GPU_UTIL" in query and "FB_USED" not in query:
            return [{"metric": {"pod": "a-0"}, "value": [0, "80"]}, {"metric": {"pod": "a-1"}, "value": [0, "40"]}]
        return [{"metric": {"pod": "a-0"}, "value": [0, "0.5"]}, {"metric": {"pod": "x"}, "value": [0, "0.9"]}]

    monkeypatch.setattr(capacity, "_prometheus", fake)
    pods = [
        {"metadata": {"name": "a-0", "labels": {LABEL_ROLE: "decode"}}},
        {"metadata": {"name": "a-1", "labels": {LABEL_ROLE: "decode"}}},
    ]
    assert capacity.dcgm_by_role("http://prom:9090", "default", pods) == {"decode": {"util": 0.6, "memory": 0.5}}
    assert 'namespace="default",pod=~"a-0|a-1"' in asked[0]
