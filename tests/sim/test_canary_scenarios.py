"""Canary steps and analysis in ``simulate``, asserted from the traces of
tests/scenarios/canary-*.yaml: a healthy image through every step, a 30% error rate rolled back and a
3x p99 paused by the analysis before any group beyond the first step gets the new revision, and
Inconclusive windows while the canary has too few requests."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


@pytest.fixture(scope="module")
def traces() -> dict[str, dict]:
    names = ("canary-healthy", "canary-bad-errors", "canary-slow-pause")
    return {n: run_scenario(load_scenario(SCENARIOS / f"{n}.yaml")) for n in names}


def groups_on(trace: dict, revision: str) -> set[int]:
    return {i["group"] for f in trace["frames"] for i in f["instances"] if i["revision"] == revision}


def canary_revision(trace: dict) -> str:
    return next(a["toRevision"] for a in trace["audit"] if a["action"] == "setImage")


def test_a_healthy_canary_runs_every_step_and_completes_once_promoted(traces):
    trace = traces["canary-healthy"]
    steps = [f["canary"]["stepIndex"] for f in trace["frames"] if "canary" in f]
    assert steps == sorted(steps) and set(steps) == {0, 1, 2, 3, 4, 5}
    assert trace["frames"][-1]["canary"] == {"stepIndex": 5, "phase": "Succeeded"}
    assert trace["converged"]
    assert {w["verdict"] for w in trace["analysis"]} <= {"Pass", "Inconclusive"}
    # The pause without a duration held the rollout at half until the promote at t=500.
    half = [f for f in trace["frames"] if f.get("canary", {}).get("stepIndex") == 3]
    assert half and half[0]["canary"]["phase"] == "Paused" and half[-1]["t"] < 500.01


def test_a_canary_with_a_30_percent_error_rate_is_rolled_back_after_the_first_step(traces):
    trace = traces["canary-bad-errors"]
    assert groups_on(trace, canary_revision(trace)) == {3}
    failed = [w for w in trace["analysis"] if w["verdict"] == "Fail"]
    assert len(failed) >= 2 and all(w["failed"] == ["errorRate"] for w in failed)
    assert all(w["figures"]["canary"]["errorRate"] > 0.2 for w in failed)
    assert all(w["figures"]["stable"]["errorRate"] == 0 for w in failed)
    act = [a for a in trace["audit"] if a["source"] == "analysis"]
    assert [a["action"] for a in act] == ["rollback"]
    assert "canary error rate" in act[0]["reason"] and "above the limit 5.0%" in act[0]["reason"]
    assert trace["converged"] and {i["revision"] for i in trace["frames"][-1]["instances"]} == {act[0]["toRevision"]}


def test_a_canary_with_three_times_the_p99_is_paused_with_the_figures(traces):
    trace = traces["canary-slow-pause"]
    assert groups_on(trace, canary_revision(trace)) == {3}
    fail = next(w for w in trace["analysis"] if w["verdict"] == "Fail")
    ratio = fail["figures"]["canary"]["latencyP99Ms"] / fail["figures"]["stable"]["latencyP99Ms"]
    assert ratio > 2.5 and fail["failed"] == ["latencyP99Ms"]
    assert [a["action"] for a in trace["audit"] if a["source"] == "analysis"] == ["pause"]
    assert trace["frames"][-1]["spec"]["paused"] is True
    assert any(c["type"] == "AnalysisFailed" for c in trace["frames"][-1]["conditions"])


def test_a_window_with_fewer_canary_requests_than_min_requests_is_inconclusive(traces):
    trace = traces["canary-slow-pause"]
    first = trace["analysis"][0]
    assert first["verdict"] == "Inconclusive" and first["figures"]["canary"]["requests"] < 15


def test_requests_by_revision_carry_the_comparison_figures(traces):
    by_rev = traces["canary-bad-errors"]["requests"]["byRevision"]
    bad = by_rev[canary_revision(traces["canary-bad-errors"])]
    assert {"total", "ok", "failed", "timeouts", "interrupted", "errorRate", "p50", "p95", "p99"} <= set(bad)
    assert 0.2 < bad["errorRate"] < 0.4
