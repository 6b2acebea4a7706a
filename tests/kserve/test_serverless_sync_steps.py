"""The named steps of the simulated KServe controller's Serverless sync: which revisions take
traffic (KServe's canaryTrafficPercent on Knative revisions: the latest ready revision gets the
percentage, the last rolled-out one the rest), and the traffic entries KServe writes in
status.components.<c>.traffic."""

from __future__ import annotations

import pytest

from controller.simcluster.kserve import controller


@pytest.mark.parametrize(
    ("percent", "latest_created", "latest_ready", "before", "expected"),
    [
        pytest.param(
            None,
            "r1",
            "r1",
            {},
            ([("r1", 100)], "r1", None),
            id="the first ready revision takes all traffic and becomes the rolled-out one",
        ),
        pytest.param(
            None,
            "r2",
            "r2",
            {"latestRolledoutRevision": "r1"},
            ([("r2", 100)], "r2", "r1"),
            id="without a canary the new ready revision takes all and the old one becomes the previous",
        ),
        pytest.param(
            10,
            "r2",
            "r2",
            {"latestRolledoutRevision": "r1"},
            ([("r2", 10), ("r1", 90)], "r1", None),
            id="a canary of 10 percent splits 10 to the new revision and 90 to the rolled-out one",
        ),
        pytest.param(
            10,
            "r2",
            "r1",
            {"latestRolledoutRevision": "r1", "latestReadyRevision": "r1"},
            ([("r1", 100)], "r1", None),
            id="a new revision not ready yet takes nothing",
        ),
        pytest.param(
            10,
            "r2",
            "r2",
            {"latestRolledoutRevision": "r2", "previousRolledoutRevision": "r1"},
            ([("r2", 10), ("r1", 90)], "r1", "r1"),
            id="a canary set again on a rolled-out revision sends the rest back to the previous one",
        ),
        pytest.param(
            None,
            "r1",
            None,
            {},
            ([], None, None),
            id="nothing ready and nothing rolled out routes nowhere",
        ),
    ],
)
def test_the_split_follows_canary_traffic_percent(percent, latest_created, latest_ready, before, expected):
    assert controller._routed(percent, latest_created, latest_ready, before) == expected


@pytest.mark.parametrize(
    ("split", "latest_ready", "expected"),
    [
        pytest.param(
            [("r1", 100)],
            "r1",
            [{"revisionName": "r1", "percent": 100, "latestRevision": True}],
            id="one target is untagged and marked latest when it is the latest ready",
        ),
        pytest.param(
            [("r2", 10), ("r1", 90)],
            "r2",
            [
                {"revisionName": "r2", "percent": 10, "latestRevision": True, "tag": "latest"},
                {"revisionName": "r1", "percent": 90, "latestRevision": False, "tag": "prev"},
            ],
            id="a split tags the first target latest and the second prev",
        ),
        pytest.param(
            [("r1", 100)],
            "r2",
            [{"revisionName": "r1", "percent": 100, "latestRevision": False}],
            id="a rolled-out revision that is not the latest ready is not marked latest",
        ),
    ],
)
def test_traffic_entries_are_written_as_kserve_writes_them(split, latest_ready, expected):
    assert controller._traffic_entries(split, latest_ready) == expected
