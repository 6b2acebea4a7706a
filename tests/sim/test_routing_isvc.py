"""Routing to an InferenceService: traffic targets from its status, drawn by weight."""

from __future__ import annotations

import random

from controller.simcluster import routing


def isvc(traffic):
    return {"status": {"components": {"predictor": {"traffic": traffic}}}}


def test_serverless_targets_are_knative_revisions_and_standard_ones_deployments():
    serverless = routing.isvc_targets(
        isvc(
            [
                {"revisionName": "chat-predictor-00002", "percent": 10},
                {"revisionName": "chat-predictor-00001", "percent": 90},
            ]
        )
    )
    assert [(t.revision, t.percent, t.label, t.value) for t in serverless] == [
        ("chat-predictor-00002", 10, "serving.knative.dev/revision", "chat-predictor-00002"),
        ("chat-predictor-00001", 90, "serving.knative.dev/revision", "chat-predictor-00001"),
    ]
    standard = routing.isvc_targets(isvc([{"backend": "llm-predictor", "revisionName": "abc", "percent": 100}]))
    assert [(t.label, t.value) for t in standard] == [("app", "isvc.llm-predictor")]


def test_requests_split_by_the_weights():
    targets = routing.isvc_targets(
        isvc([{"revisionName": "new", "percent": 10}, {"revisionName": "old", "percent": 90}])
    )
    rng = random.Random(7)
    picks = [routing.pick_target(targets, rng).revision for _ in range(20000)]
    assert abs(picks.count("new") / len(picks) - 0.10) < 0.01


def test_a_target_without_a_share_gets_nothing_and_no_share_at_all_picks_none():
    targets = routing.isvc_targets(
        isvc([{"revisionName": "new", "percent": 0}, {"revisionName": "old", "percent": 100}])
    )
    rng = random.Random(1)
    assert {routing.pick_target(targets, rng).revision for _ in range(200)} == {"old"}
    assert routing.pick_target(routing.isvc_targets(isvc([])), rng) is None


def test_a_request_is_counted_under_the_pods_revision():
    assert routing.revision_label({"metadata": {"labels": {"serving.knative.dev/revision": "r2"}}}) == "r2"
    assert routing.revision_label({"metadata": {"labels": {"pod-template-hash": "h1"}}}) == "h1"
    assert routing.revision_label({"metadata": {"labels": {"serving.rolloutui.io/revision": "m"}}}) == "m"
