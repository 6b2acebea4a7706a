"""The README's walkthroughs, run on a simulated copy of the demo (its manifest, images, token figures and
traffic): what the README says happens, happens. The live app runs the same physics on the same demo."""

from __future__ import annotations

import copy

import pytest

from controller.simcluster.database import demo
from controller.simcluster.database.config import DEFAULT_TIMING
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import parse_scenario

pytestmark = pytest.mark.django_db  # demo.py sits beside the database cluster's models

# README, "A bad build caught by the canary analysis": the canary block an operator pastes.
README_CANARY = {
    "steps": [{"setPartition": "75%"}, {"setWeight": 10}, {"pause": {}}, {"setPartition": 0}],
    "analysis": {"intervalSeconds": 60, "minRequests": 10, "failureLimit": 1, "onFailure": "Pause"},
}


def demo_run(spec_change, events, *, until=900.0, seed=1):
    manifest = copy.deepcopy(demo.DEMO_MANIFEST)
    spec_change(manifest["spec"])
    raw = {
        "name": "readme",
        "seed": seed,
        "until": until,
        "cluster": {"nodes": 6, "gpusPerNode": 8, "timing": DEFAULT_TIMING},
        "images": copy.deepcopy(demo._PROFILES),
        "traffic": {"rps": demo.TRAFFIC["rps"], "tokens": demo.TOKENS},
        "modelServing": manifest,
        "events": [{"at": 0, "do": "apply"}, *events],
    }
    return run_scenario(parse_scenario(raw))


def with_canary(*metrics):
    def change(spec):
        spec["rolloutStrategy"]["canary"] = {
            **copy.deepcopy(README_CANARY),
            "analysis": {**README_CANARY["analysis"], "metrics": list(metrics)},
        }

    return change


def analysis_pauses(trace):
    return [a for a in trace["audit"] if a["action"] == "pause" and a["source"] == "analysis"]


def test_a_flaky_decode_build_behind_a_ten_percent_weight_is_paused_by_its_error_rate():
    trace = demo_run(
        with_canary({"metric": "errorRate", "max": 0.05}),
        [{"at": 300, "do": "setImage", "role": "decode", "image": "vllm/vllm-openai:v0.9.2-flaky"}],
    )
    (pause,) = analysis_pauses(trace)
    assert pause["reason"].startswith("canary error rate") and "above the limit 5.0%" in pause["reason"]
    assert pause["t"] <= 300 + 3 * 60
    assert trace["requests"]["paths"]["kvMismatch"] == 0  # v0.9.2 keeps the KV format: decode moves alone
    stable, canary = (trace["requests"]["byRevision"][r["hash"]]["total"] for r in trace["revisions"][:2])
    assert canary < 0.15 * (stable + canary)  # the weight, not the quarter of groups, decided its share


def test_a_build_slow_to_its_first_token_fails_on_the_requests_still_waiting_for_one():
    trace = demo_run(
        with_canary({"metric": "errorRate", "max": 0.05}, {"metric": "ttftP95Ms", "maxRatioToStable": 3}),
        [{"at": 300, "do": "setImage", "role": "prefill", "image": "vllm/vllm-openai:v0.9.2-slow-ttft"}],
    )
    (pause,) = analysis_pauses(trace)
    assert pause["reason"].startswith("canary TTFT p95 is above") and "requests took longer" in pause["reason"]


@pytest.mark.parametrize(
    ("routing", "broken"),
    [("blind", True), ("revisionAffine", False)],
    ids=["blind routing breaks requests between versions", "revision-affine routing keeps every request whole"],
)
def test_a_kv_format_change_across_groups(routing, broken):
    def change(spec):
        spec["traffic"] = {"path": ["prefill", "decode"], "scope": "any", "routing": routing}

    new = "vllm/vllm-openai:v0.10.0"
    trace = demo_run(
        change,
        [
            {"at": 300, "do": "setImage", "role": "decode", "image": new},
            {"at": 300, "do": "setImage", "role": "prefill", "image": new},
        ],
        until=1500,
    )
    assert trace["converged"]
    paths = trace["requests"]["paths"]
    assert paths["noRoute"] == 0
    if broken:
        assert paths["kvMismatch"] > 0 and paths["mixed"] >= paths["kvMismatch"]
    else:
        assert paths["kvMismatch"] == paths["mixed"] == 0
