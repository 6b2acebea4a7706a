"""Serving gates in ``simulate``: the trace's ``gate`` / ``gateFailed`` per instance.

Scenario ``tests/scenarios/gates-verification.yaml``: 4 groups with ``spec.verification``; a healthy
image rolls out, then a build whose model server answers every request with an error (errorRate 1),
then a rollback to the healthy revision.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.core.gates import GATES
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "gates-verification.yaml"


@pytest.fixture(scope="module")
def trace() -> dict:
    return run_scenario(load_scenario(SCENARIO))


def frames_between(trace, start, end):
    return [f for f in trace["frames"] if start <= f["t"] < end]


def test_every_instance_passes_the_gates_in_order(trace):
    rank = {g: i for i, g in enumerate(GATES)}
    highest: dict[tuple, int] = {}
    for frame in trace["frames"]:
        for inst in frame["instances"]:
            key = tuple(inst["podUids"])  # one incarnation of an instance
            if inst["gate"] is None or inst["draining"] or inst["state"] in ("Deleting", "Draining"):
                continue
            assert rank[inst["gate"]] >= highest.get(key, -1), f"{key} went back to {inst['gate']} at {frame['t']}"
            highest[key] = rank[inst["gate"]]
    assert max(highest.values()) == rank["Serving"]


def test_a_healthy_rollout_ends_with_every_instance_serving(trace):
    settled = frames_between(trace, 0, 300)[-1]  # the last frame before the bad build
    assert {i["gate"] for i in settled["instances"]} == {"Serving"}
    assert {i["gateFailed"] for i in settled["instances"]} == {None}


def test_a_build_that_fails_verification_is_ready_but_not_serving_and_stops_the_rollout(trace):
    bad_frames = frames_between(trace, 300, 600)
    bad_revision = bad_frames[-1]["updateRevision"]
    on_bad = {(i["group"]) for f in bad_frames for i in f["instances"] if i["revision"] == bad_revision}
    assert on_bad == {3}  # maxUnavailable 1: the failed instance counts as unavailable, nothing else moves
    last = {i["group"]: i for i in bad_frames[-1]["instances"]}
    assert last[3]["state"] == "Ready" and last[3]["gate"] == "Routed" and last[3]["gateFailed"] == "Verified"
    assert any("verification of decode-0 failed" in b["reason"] for b in bad_frames[-1]["blocked"])


def test_rolling_back_brings_every_instance_back_to_serving(trace):
    assert trace["converged"]
    final = trace["frames"][-1]
    assert {i["gate"] for i in final["instances"]} == {"Serving"}
    verify = [a for a in trace["actions"] if a["verb"] == "verify"]
    assert verify and all(a["group"] is not None for a in verify)
