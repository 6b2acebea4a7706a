"""A canary judged on time to first token in ``simulate`` (tests/scenarios/canary-slow-ttft.yaml):
requests go prefill -> decode, the new prefill engine is about four times slower to the first token;
the analysis fails its TTFT p95 against stable's and rolls back after the first step, while the TPOT
and mixed-path checks hold."""

from __future__ import annotations

from pathlib import Path

from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "canary-slow-ttft.yaml"


def test_a_canary_four_times_slower_to_the_first_token_is_rolled_back_on_its_ttft_p95():
    trace = run_scenario(load_scenario(SCENARIO))
    canary = next(a["toRevision"] for a in trace["audit"] if a["action"] == "setImage")
    groups = {i["group"] for f in trace["frames"] for i in f["instances"] if i["revision"] == canary}
    assert groups == {3}
    failed = [w for w in trace["analysis"] if w["verdict"] == "Fail"]
    assert len(failed) >= 2 and all(w["failed"] == ["ttftP95Ms"] for w in failed), trace["analysis"]
    for w in failed:
        stable, mine = w["figures"]["stable"], w["figures"]["canary"]
        assert mine["ttftP95Ms"] > 2 * stable["ttftP95Ms"]
        assert mine["mixedPaths"] == 0
    act = [a for a in trace["audit"] if a["source"] == "analysis"]
    assert [a["action"] for a in act] == ["rollback"]
    assert "TTFT p95" in act[0]["reason"]
    assert trace["requests"]["paths"]["mixed"] == 0
    assert trace["converged"] and {i["revision"] for i in trace["frames"][-1]["instances"]} == {act[0]["toRevision"]}
