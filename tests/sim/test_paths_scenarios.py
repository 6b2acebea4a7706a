"""The shipped request-path scenarios: a coordinated prefill -> decode update whose new engine changes
the KV cache format, routed revision-affine (no request crosses versions) and blind (mismatches
counted); the scenario fields of paths and token figures, checked like every other field."""

from __future__ import annotations

import copy

import pytest
import yaml

from controller.core import safeyaml
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import ScenarioError, load_scenario, parse_scenario
from tests.paths import EXAMPLE_SCENARIOS, TEST_SCENARIOS

AFFINE = EXAMPLE_SCENARIOS / "paths-pd-affine.yaml"
BLIND = EXAMPLE_SCENARIOS / "paths-pd-blind.yaml"


@pytest.fixture(scope="module")
def affine_trace():
    return run_scenario(load_scenario(AFFINE))


@pytest.fixture(scope="module")
def blind_trace():
    return run_scenario(load_scenario(BLIND))


def test_revision_affine_routing_keeps_every_request_on_one_revision_through_the_kv_format_change(affine_trace):
    paths = affine_trace["requests"]["paths"]
    assert affine_trace["converged"]
    assert paths["total"] > 1000
    assert (paths["mixed"], paths["kvMismatch"], paths["noRoute"]) == (0, 0, 0)
    assert paths["consistent"] == paths["total"]
    assert affine_trace["requests"]["mixedByPair"] == {}
    assert affine_trace["requests"]["errors"] == 0


def test_both_revisions_served_requests_with_their_token_figures(affine_trace):
    by_rev = affine_trace["requests"]["byRevision"]
    old, new = (r["hash"] for r in affine_trace["revisions"])
    assert by_rev[old]["total"] > 0 and by_rev[new]["total"] > 0
    # engine:v1's time to first token is 120-300 ms, engine:v2's 80-200 ms.
    assert 120 <= by_rev[old]["ttftP50"] <= 300
    assert 80 <= by_rev[new]["ttftP99"] <= 200
    assert 25 <= by_rev[old]["tpotP50"] <= 45 and 20 <= by_rev[new]["tpotP50"] <= 40
    assert by_rev[new]["outputTokens"] >= 50 * by_rev[new]["ok"]


def test_blind_routing_counts_the_requests_that_crossed_versions_and_failed_on_the_kv_format(blind_trace):
    requests = blind_trace["requests"]
    paths = requests["paths"]
    assert blind_trace["converged"]
    assert paths["mixed"] > 0
    # Every mixed path crosses the format change here (a -> b), so each failed with kvMismatch.
    assert paths["kvMismatch"] == paths["mixed"] == sum(requests["mixedByPair"].values())
    assert paths["consistent"] + paths["mixed"] + paths["noRoute"] == paths["total"]
    assert requests["errors"] == paths["kvMismatch"]
    old, new = (r["hash"] for r in blind_trace["revisions"])
    assert set(requests["mixedByPair"]) <= {f"{old}/{new}", f"{new}/{old}"}


def _doc():
    return safeyaml.load(AFFINE.read_text())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["traffic"].update(path=["prefill", "router"]), "traffic.path[1]"),
        (lambda d: d["traffic"].update(routing="random"), "traffic.routing"),
        (lambda d: d["traffic"].update(tokens={"input": [1, 2]}), "traffic.tokens.output"),
        (lambda d: d["traffic"].update(tokens={"input": 1, "output": 2, "total": 3}), "traffic.tokens.total"),
        (lambda d: d["images"]["engine:v1"].update(kvFormat=7), "images.engine:v1.kvFormat"),
        (lambda d: d["images"]["engine:v1"].update(ttftMs=[300, 100]), "images.engine:v1.ttftMs"),
        (lambda d: d["modelServing"]["spec"]["traffic"].update(scope="zone"), "modelServing.spec.traffic.scope"),
        (lambda d: d["modelServing"]["spec"]["traffic"].update(paths=["decode"]), "modelServing.spec.traffic.paths"),
    ],
)
def test_a_wrong_path_or_token_field_is_refused_naming_it(change, field):
    doc = _doc()
    change(doc)
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    assert err.value.field == field


def test_the_scenario_may_override_the_manifests_routing_for_the_run():
    doc = _doc()
    doc["traffic"]["routing"] = "blind"
    doc["until"] = 300  # the rollout's start: enough to see the override in force
    trace = run_scenario(parse_scenario(doc))
    assert trace["requests"]["paths"]["total"] > 0


def test_a_run_without_paths_or_token_figures_has_no_new_trace_keys():
    doc = copy.deepcopy(_doc())
    del doc["modelServing"]["spec"]["traffic"]
    del doc["traffic"]["tokens"]
    doc["traffic"]["durationSeconds"] = [1, 5]
    doc["until"] = 300
    trace = run_scenario(parse_scenario(yaml.safe_load(yaml.safe_dump(doc))))
    requests = trace["requests"]
    assert "paths" not in requests and "mixedByPair" not in requests
    assert all("ttftP50" not in r for r in requests["byRevision"].values())
    assert requests["total"] > 0


CANARY_TTFT = """
name: canary-slow-first-token
seed: 5
until: 1500
cluster: {nodes: 4, gpusPerNode: 4, timing: {schedule: 1, pull: 3, start: 1, load: 10, terminate: 2}}
images:
  "engine:v1": {ttftMs: [100, 200], tpotMs: [20, 30]}
  "engine:v2-slow": {ttftMs: [400, 600], tpotMs: [20, 30]}
traffic: {rps: 20, tokens: {input: [100, 500], output: [20, 60]}}
modelServing:
  apiVersion: serving.rolloutui.io/v1alpha1
  kind: ModelServing
  metadata: {name: canary, namespace: default}
  spec:
    replicas: 4
    traffic: {path: [prefill, decode]}
    rolloutStrategy:
      type: ServingGroupRollingUpdate
      rollingUpdateConfiguration: {maxUnavailable: 1}
      canary:
        steps:
          - setPartition: 75%
          - pause: {durationSeconds: 120}
          - setPartition: 0
        analysis:
          intervalSeconds: 30
          minRequests: 20
          failureLimit: 2
          onFailure: Rollback
          metrics:
            - {metric: ttftP95Ms, maxRatioToStable: 1.5}
    template:
      roles:
        - name: prefill
          replicas: 1
          entryTemplate:
            spec:
              containers: [{name: engine, image: "engine:v1", resources: {limits: {nvidia.com/gpu: "1"}}}]
        - name: decode
          replicas: 1
          entryTemplate:
            spec:
              containers: [{name: engine, image: "engine:v1", resources: {limits: {nvidia.com/gpu: "1"}}}]
events:
  - {at: 0, do: apply}
  - {at: 100, do: setImage, role: prefill, image: "engine:v2-slow"}
"""


def test_the_canary_analysis_judges_the_time_to_first_token_of_requests_through_the_path():
    trace = run_scenario(parse_scenario(safeyaml.load(CANARY_TTFT)))
    windows = trace["analysis"]
    assert windows, "no analysis window was judged"
    failed = [w for w in windows if w["verdict"] == "Fail"]
    assert failed and all(w["failed"] == ["ttftP95Ms"] for w in failed)
    canary, stable = failed[0]["figures"]["canary"], failed[0]["figures"]["stable"]
    assert canary["ttftP95Ms"] >= 400 and stable["ttftP95Ms"] <= 200
    assert "ttftEvidence" not in canary  # the evidence decides; the trace keeps the figures
    assert any(a["action"] == "rollback" and a["source"] == "analysis" for a in trace["audit"])
    assert trace["requests"]["paths"]["mixed"] == 0


def test_a_10_percent_canary_weight_holds_for_affine_paths_whose_first_role_did_not_change():
    # canary-weight-10 with a prefill role in front of decode; the update changes decode only, so
    # every prefill pod can start a path of either revision: the weight, not the pod, decides.
    doc = safeyaml.load((EXAMPLE_SCENARIOS / "canary-weight-10.yaml").read_text())
    roles = doc["modelServing"]["spec"]["template"]["roles"]
    prefill = copy.deepcopy(roles[0])
    prefill["name"] = "prefill"
    roles.insert(0, prefill)
    doc["modelServing"]["spec"]["traffic"] = {"path": ["prefill", "decode"]}
    trace = run_scenario(parse_scenario(doc))
    assert trace["converged"]
    assert trace["requests"]["paths"]["mixed"] == trace["requests"]["paths"]["noRoute"] == 0
    frames = [f for f in trace["frames"] if "canary" in f]
    at_10 = min(f["t"] for f in frames if f["canary"].get("weight") == 10)
    at_100 = min(f["t"] for f in frames if f["canary"].get("weight") == 100)
    windows = [w for w in trace["analysis"] if w["start"] >= at_10 and w["end"] <= at_100]
    assert len(windows) >= 4
    canary = sum(w["figures"]["canary"]["started"] for w in windows)
    total = canary + sum(w["figures"]["stable"]["started"] for w in windows)
    assert 5.0 <= 100 * canary / total <= 15.0


def test_request_paths_are_refused_in_an_inference_service_scenario():
    doc = safeyaml.load((TEST_SCENARIOS / "isvc-default-rollout.yaml").read_text())
    doc["traffic"] = {"rps": 1, "routing": "blind"}
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    assert err.value.field == "traffic.routing"
    assert "ModelServing scenarios only" in err.value.message
