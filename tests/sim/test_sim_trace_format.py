"""The trace is exactly format 1 (docs/scenarios.md) for the documented scenarios (examples/scenarios)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

pytest.importorskip("controller.core.reconcile")

from controller.simcluster.runner import run_scenario  # noqa: E402
from controller.simcluster.scenario import load_scenario, parse_scenario  # noqa: E402
from tests.paths import EXAMPLE_SCENARIOS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHARED = EXAMPLE_SCENARIOS  # the documented scenarios (a copy of the contract's)
SMALL = ["group-rolling", "partition-protected-recovery", "surge-unschedulable", "drain-no-loss"]
STATES = {"Pending", "Creating", "Ready", "Updating", "Draining", "Deleting", "Failed"}
# "verify" is the release layer's addition (additive, scenarios.md "Canary, analysis and gates").
VERBS = {"create", "delete", "drain", "undrain", "patchImage", "setGate", "recreate", "verify"}
GATES = {"Created", "Scheduled", "Started", "Loaded", "Routed", "Verified", "Serving"}
INSTANCE_KEYS = {
    "group",
    "role",
    "ordinal",
    "revision",
    "state",
    "pods",
    "readyPods",
    "surge",
    "podUids",
    "draining",
    "inFlight",
    "gate",
    "gateFailed",
    # Added with pod DNS: the entry pod's resolvable name (<entry>.<ms>-pods.<namespace>.svc).
    "address",
}


def check_format(trace):
    for key in (
        "format",
        "scenario",
        "seed",
        "converged",
        "convergedAt",
        "endTime",
        "revisions",
        "frames",
        "actions",
        "requests",
        "analysis",
        "audit",
    ):
        assert key in trace, key
    assert trace["format"] == 1
    assert trace["frames"][0]["t"] == 0.0
    times = [f["t"] for f in trace["frames"]]
    assert times == sorted(times) and len(set(times)) == len(times)
    for f in trace["frames"]:
        assert set(f) - {"canary"} == {
            "t",
            "spec",
            "currentRevision",
            "updateRevision",
            "conditions",
            "instances",
            "blocked",
        }
        keys = [(i["group"], i["role"], i["ordinal"]) for i in f["instances"]]
        assert keys == sorted(keys), f"t={f['t']}: instances out of (group, role, ordinal) order"
        for inst in f["instances"]:
            assert set(inst) == INSTANCE_KEYS and inst["state"] in STATES
            assert inst["gate"] in GATES | {None} and inst["gateFailed"] in GATES | {None}
        for b in f["blocked"]:
            assert isinstance(b["reason"], str) and b["reason"]
    assert [a["t"] for a in trace["actions"]] == sorted(a["t"] for a in trace["actions"])
    for a in trace["actions"]:
        assert {"t", "verb", "group", "role", "ordinal", "revision"} <= set(a) and a["verb"] in VERBS
    for r in trace["revisions"]:
        assert set(r) == {"number", "hash", "name"}
    req = trace["requests"]
    assert req["total"] == req["succeeded"] + req["failed"]
    for per in req["byRevision"].values():
        assert {"total", "failed", "p50", "p99"} <= set(per)
    if trace["converged"]:
        assert trace["convergedAt"] <= trace["endTime"]
    else:
        assert trace["convergedAt"] is None


@pytest.mark.parametrize("name", SMALL)
def test_every_shared_scenarios_trace_has_exactly_the_documented_shape(name):
    check_format(run_scenario(load_scenario(SHARED / f"{name}.yaml")))


def test_a_kthena_manifest_runs_unchanged_apart_from_its_api_version_and_an_apply_after_zero_still_has_a_t0_frame():
    doc = yaml.safe_load((SHARED / "group-rolling.yaml").read_text())
    doc = copy.deepcopy(doc)
    doc["modelServing"]["apiVersion"] = "workload.serving.volcano.sh/v1alpha1"
    doc["events"] = [{"at": 20, "do": "apply"}, {"at": 100, "do": "setImage", "role": "decode", "image": "engine:v2"}]
    trace = run_scenario(parse_scenario(doc))
    check_format(trace)
    assert trace["frames"][0]["instances"] == [] and trace["frames"][0]["spec"] is None
    assert trace["converged"]
