"""No progress on no evidence, run through ``manage.py simulate`` and asserted from the traces of
examples/scenarios/canary-slow-unfinished.yaml (a canary ten times slower than stable, finishing
too few requests per window to judge them finished) and canary-too-little-traffic.yaml (a healthy
canary with too little traffic). The rules are the traffic contract's "Evidence before progress".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.paths import EXAMPLE_SCENARIOS, REPO

NAMES = ("canary-slow-unfinished", "canary-too-little-traffic")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, dict]:
    out = {}
    for name in NAMES:
        path = tmp_path_factory.mktemp("traces") / f"{name}.json"
        proc = subprocess.run(
            [sys.executable, "manage.py", "simulate", str(EXAMPLE_SCENARIOS / f"{name}.yaml"), "--out", str(path)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        out[name] = json.loads(path.read_text())
    return out


def canary_revision(trace: dict) -> str:
    return next(a["toRevision"] for a in trace["audit"] if a["action"] == "setImage")


def groups_on(trace: dict, revision: str) -> set[int]:
    return {i["group"] for f in trace["frames"] for i in f["instances"] if i["revision"] == revision}


def steps_reached(trace: dict) -> set[int]:
    return {f["canary"]["stepIndex"] for f in trace["frames"] if "canary" in f}


def analysis_audit(trace: dict) -> list[dict]:
    return [a for a in trace["audit"] if a["source"] == "analysis"]


def test_a_canary_ten_times_slower_than_stable_fails_on_the_requests_it_still_serves_and_is_rolled_back(traces):
    trace = traces["canary-slow-unfinished"]
    canary = canary_revision(trace)
    by_revision = trace["requests"]["byRevision"]
    stable = next(rev for rev in by_revision if rev != canary)
    assert by_revision[canary]["p99"] >= 5 * by_revision[stable]["p99"]  # the premise: a slow canary
    first = trace["analysis"][0]
    # Too few finished requests to judge (fewer than minRequests 5), enough started ones to fail.
    assert first["figures"]["canary"]["requests"] < 5 <= first["figures"]["canary"]["started"]
    assert first["verdict"] == "Fail" and first["failed"] == ["latencyP99Ms"]
    (acted,) = analysis_audit(trace)
    assert acted["action"] == "rollback" and acted["toRevision"] == stable
    assert "still unanswered" in acted["reason"]
    assert groups_on(trace, canary) == {9} and steps_reached(trace) <= {0, 1}
    assert trace["converged"] and {i["revision"] for i in trace["frames"][-1]["instances"]} == {stable}


def test_a_canary_with_too_little_traffic_is_paused_and_its_timed_pause_never_advances_it(traces):
    trace = traces["canary-too-little-traffic"]
    canary = canary_revision(trace)
    assert groups_on(trace, canary) == {9} and steps_reached(trace) <= {0, 1}
    windows = trace["analysis"]
    assert {w["verdict"] for w in windows} == {"Inconclusive"}
    assert all(w["figures"]["canary"]["started"] < 20 for w in windows)
    (acted,) = analysis_audit(trace)
    assert acted["action"] == "pause"
    assert re.fullmatch(r"3 windows with \d+(-\d+)? canary requests, fewer than minRequests 20", acted["reason"])
    # The 60 s pause began once group 9 was ready; its time ran out before the third window was
    # judged, and it held (not paused yet, still on the pause step) until the analysis paused.
    began = next(f["t"] for f in trace["frames"] if f.get("canary", {}).get("stepIndex") == 1)
    held = [f for f in trace["frames"] if began + 60 < f["t"] < acted["t"]]
    assert acted["t"] > began + 60 and all(f["canary"]["stepIndex"] == 1 for f in held)
    last = trace["frames"][-1]
    assert last["spec"]["paused"] is True and last["canary"] == {"stepIndex": 1, "phase": "Paused"}
    condition = next(c for c in last["conditions"] if c["type"] == "AnalysisInconclusive")
    assert condition["status"] == "True" and condition["message"] == acted["reason"]
