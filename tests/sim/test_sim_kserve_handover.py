"""Promoting or rolling back a Standard-mode canary keeps the predictor's capacity (issue 31).

The floor is the Deployment controller's own promise for a rollout, ``replicas - maxUnavailable``
available pods (Kubernetes' RollingUpdate: ``maxUnavailable`` rounds down), kept here through the
handover between the stable predictor and the canary. Checked on every frame of the documented
scenarios' traces, from the first moment the InferenceService served at full count.
"""

from __future__ import annotations

import pytest

from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario
from tests.paths import EXAMPLE_SCENARIOS

_CACHE: dict[str, dict] = {}


def trace_of(name: str) -> dict:
    if name not in _CACHE:
        _CACHE[name] = run_scenario(load_scenario(EXAMPLE_SCENARIOS / f"{name}.yaml"))
    return _CACHE[name]


def ready_predictor_pods(frame: dict) -> int:
    """Ready pods that serve the predictor's traffic: the stable predictor's and the canaries'."""
    return sum(
        1
        for i in frame["instances"]
        if i["state"] == "Ready" and (i["component"] == "predictor" or i["component"].startswith("canary:"))
    )


def frames_after_full_count(trace: dict, replicas: int) -> list[dict]:
    frames = trace["frames"]
    first = next(n for n, f in enumerate(frames) if ready_predictor_pods(f) >= replicas)
    return frames[first:]


@pytest.mark.parametrize(
    ("scenario", "floor"),
    [
        ("isvc-promote-keeps-floor", 4 - 1),  # default 25%/25%: maxUnavailable 25% of 4 rounds down to 1
        ("isvc-rollback-keeps-floor", 4 - 0),  # Availability: maxUnavailable 0
    ],
)
def test_ready_predictor_pods_never_fall_below_replicas_minus_max_unavailable_in_any_frame(scenario, floor):
    trace = trace_of(scenario)
    assert trace["frames"][-1]["strategy"]["predictor"]["maxUnavailable"]["count"] == 4 - floor
    below = [
        (f["t"], ready_predictor_pods(f)) for f in frames_after_full_count(trace, 4) if ready_predictor_pods(f) < floor
    ]
    assert below == [], f"fewer Ready predictor pods than the floor {floor} at (t, ready): {below[:5]}"
    assert not [e for e in trace["events"] if e.get("error")]
    assert trace["converged"]


def test_a_promoted_canary_takes_the_traffic_only_with_its_full_count_and_becomes_the_predictor():
    trace = trace_of("isvc-promote-keeps-floor")
    steps = [a for a in trace["actions"] if a["verb"] == "handover"]
    assert [(a["action"], a["step"]) for a in steps] == [("promote", "switch")]
    switched_at = steps[0]["t"]
    promoted_at = next(e["t"] for e in trace["events"] if e["do"] == "promote")
    for f in (f for f in trace["frames"] if promoted_at < f["t"] < switched_at):
        weights = {t.get("tag", "stable"): t["percent"] for t in f["traffic"]}
        canary_ready = sum(1 for i in f["instances"] if i["component"] == "canary:v2" and i["state"] == "Ready")
        if weights.get("v2"):
            assert canary_ready == 4 and weights == {"stable": 0, "v2": 100}
        assert f["handover"]["action"] == "promote" and f["handover"]["steps"][0]["state"] == "active"
    last = trace["frames"][-1]
    assert [d["name"] for d in last["deployments"]] == ["llm-v2-predictor"]
    predictor = last["spec"]["components"]["predictor"]
    assert {k: predictor.get(k) for k in ("replicas", "image", "name")} == {
        "replicas": 4,
        "image": "vllm/vllm-openai:v0.9.2",
        "name": "v2",
    }
    assert "canary" not in last["spec"] and "handover" not in last


def test_a_rolled_back_canary_goes_only_once_the_stable_predictor_has_its_full_count_again():
    trace = trace_of("isvc-rollback-keeps-floor")
    steps = [a for a in trace["actions"] if a["verb"] == "handover"]
    assert [(a["action"], a["step"]) for a in steps] == [("rollback", "remove")]
    rolled_back_at = next(e["t"] for e in trace["events"] if e["do"] == "rollback")
    removed_at = steps[0]["t"]
    waiting = [f for f in trace["frames"] if rolled_back_at < f["t"] < removed_at]
    assert waiting
    assert {(f["handover"]["steps"][0]["step"], f["handover"]["steps"][0]["state"]) for f in waiting} == {
        ("scale", "active")
    }
    # The canary keeps serving until the stable predictor has its 4 pods available again.
    assert all({d["name"] for d in f["deployments"]} == {"llm-predictor", "llm-v2-predictor"} for f in waiting)
    removal = next(f for f in trace["frames"] if f["t"] >= removed_at)
    stable = next(d for d in removal["deployments"] if d["name"] == "llm-predictor")
    assert stable["availableReplicas"] == 4
    last = trace["frames"][-1]
    assert [d["name"] for d in last["deployments"]] == ["llm-predictor"]
    # The predictor's minReplicas the user wrote is back; the handover leaves nothing behind.
    assert last["spec"]["components"]["predictor"]["replicas"] == 4
    assert "canary" not in last["spec"] and "handover" not in last
