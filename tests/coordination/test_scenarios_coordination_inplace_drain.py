"""The coordination, in-place and drain scenarios of tests/scenarios/*.yaml (public format of
scenarios.md), run on the simulated cluster through the simulator's entry points, asserted by reading the trace.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "tests" / "scenarios"
_TRACES: dict[str, dict] = {}


def trace_of(name: str) -> dict:
    if name not in _TRACES:
        _TRACES[name] = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    return _TRACES[name]


def manifest_of(name: str) -> dict:
    return load_scenario(SCENARIOS / f"{name}.yaml").manifest


def frames_after(trace, t):
    return [f for f in trace["frames"] if f["t"] >= t]


def key(inst):
    return (inst["group"], inst["role"], inst["ordinal"])


# -- coordinated prefill/decode ------------------------------------------------------------------


def role_counts(frame, group, role_name, replicas, update):
    """Kthena's R (Ready on the update revision) and I (in flight) for one role of one group."""
    insts = {i["ordinal"]: i for i in frame["instances"] if i["group"] == group and i["role"] == role_name}
    ready = in_flight = 0
    for k in range(replicas):
        inst = insts.get(k)
        if inst is None:
            in_flight += 1
        elif inst["revision"] == update:
            if inst["state"] == "Ready":
                ready += 1
            else:
                in_flight += 1
        elif inst["state"] in ("Draining", "Deleting"):
            in_flight += 1
    return ready, in_flight


def test_pd_coordinated_rollout_keeps_the_skew_bound_on_every_frame_and_starts_prefill_after_new_decode_is_ready():
    trace = trace_of("pd-coordinated")
    spec = manifest_of("pd-coordinated")["spec"]
    skew = Fraction(
        int(spec["rolloutStrategy"]["roleRollingUpdateConfiguration"]["coordination"]["maxSkew"].rstrip("%")), 100
    )
    replicas = {r["name"]: r["replicas"] for r in spec["template"]["roles"]}
    assert trace["converged"] and not trace.get("controllerErrors")
    rolling = [f for f in frames_after(trace, 150) if f["updateRevision"] != trace["frames"][0]["updateRevision"]]
    assert rolling
    update = rolling[0]["updateRevision"]
    checked = 0
    for f in rolling:
        for g in range(spec["replicas"]):
            counts = {r: role_counts(f, g, r, n, update) for r, n in replicas.items()}
            active = [Fraction(rd, replicas[r]) for r, (rd, _) in counts.items() if rd < replicas[r]]
            baseline = min(active, default=Fraction(1))
            for r, (rd, fl) in counts.items():
                quota = min(replicas[r], math.ceil(min(Fraction(1), baseline + skew) * replicas[r]))
                assert rd + fl <= quota, f"t={f['t']} group {g} {r}: {rd} Ready + {fl} in flight > quota {quota}"
                checked += 1
    assert checked > 100
    # Dependency gate: per group, no prefill replacement before a new decode instance is Ready.
    for g in range(spec["replicas"]):
        first_prefill = min(
            a["t"]
            for a in trace["actions"]
            if a["group"] == g and a["role"] == "prefill" and a["verb"] in ("delete", "drain")
        )
        # The frame of that very pass: a pass never makes a decode instance Ready, so a Ready new
        # decode in it was Ready when the pass decided.
        seen = [f for f in trace["frames"] if f["t"] <= first_prefill]
        assert seen[-1]["t"] == first_prefill
        assert any(
            i["group"] == g and i["role"] == "decode" and i["revision"] == update and i["state"] == "Ready"
            for i in seen[-1]["instances"]
        )
    assert {i["revision"] for i in trace["frames"][-1]["instances"]} == {update}


# -- in-place ----------------------------------------------------------------------------------------


def test_inplace_image_bump_keeps_every_pod_uid_and_converges_on_the_new_revision():
    trace = trace_of("inplace-image-bump")
    assert trace["converged"] and not trace.get("controllerErrors")
    before = frames_after(trace, 0)
    stood = next(
        f
        for f in before
        if f["t"] < 120
        and f["instances"]
        and all(i["state"] == "Ready" for i in f["instances"])
        and len(f["instances"]) == 6
    )
    uids = {key(i): i["podUids"] for i in stood["instances"]}
    assert all(len(u) == 2 for u in uids.values())
    for f in frames_after(trace, stood["t"]):
        assert {key(i): i["podUids"] for i in f["instances"]} == uids, f"t={f['t']}: a pod was recreated"
        for g in (0, 1):
            assert sum(1 for i in f["instances"] if i["group"] == g and i["state"] == "Updating") <= 1
    assert {a["verb"] for a in trace["actions"] if a["t"] >= 120} <= {"setGate", "patchImage", "drain"}
    assert len({(a["group"], a["ordinal"]) for a in trace["actions"] if a["verb"] == "patchImage"}) == 6
    last = trace["frames"][-1]
    assert {i["revision"] for i in last["instances"]} == {last["updateRevision"]}
    assert any(f["state"] == "Updating" for fr in frames_after(trace, 120) for f in fr["instances"])


def test_inplace_bad_image_leaves_one_instance_updating_and_patches_no_further_instance():
    trace = trace_of("inplace-bad-image")
    assert not trace["converged"] and not trace.get("controllerErrors")
    after = [a for a in trace["actions"] if a["t"] >= 100]
    touched = {(a["group"], a["role"], a["ordinal"]) for a in after if a["verb"] in ("setGate", "patchImage", "drain")}
    assert len(touched) == 1
    assert sum(1 for a in after if a["verb"] == "patchImage") == 1
    assert not any(a["verb"] in ("create", "delete", "recreate") for a in after)
    (victim,) = touched
    first_updating = next(
        f["t"] for f in trace["frames"] if any(key(i) == victim and i["state"] == "Updating" for i in f["instances"])
    )
    for f in frames_after(trace, first_updating):
        states = {key(i): i for i in f["instances"]}
        assert states[victim]["state"] == "Updating", f"t={f['t']}"
        others = [i for k, i in states.items() if k != victim]
        assert all(i["state"] == "Ready" for i in others)
        assert len({i["revision"] for i in others}) == 1 and others[0]["revision"] != f["updateRevision"]
    last = trace["frames"][-1]
    assert any(b.get("kind") == "failing" and "not completing" in b["reason"] for b in last["blocked"])
    assert trace["endTime"] == pytest.approx(1500)


# -- drain with traffic --------------------------------------------------------------------------


def test_with_a_drain_timeout_longer_than_the_longest_request_a_full_rollout_interrupts_no_request():
    trace = trace_of("drain-lossless-role-rollout")
    spec = manifest_of("drain-lossless-role-rollout")["spec"]
    assert spec["drain"]["timeoutSeconds"] > 40
    assert trace["converged"] and not trace.get("controllerErrors")
    req = trace["requests"]
    assert req["total"] > 1000
    assert req["interrupted"] == 0 and req["rejected"] == 0 and req["failed"] == 0
    assert all(r["interrupted"] == 0 for r in req["byRevision"].values())
    update = trace["frames"][-1]["updateRevision"]
    assert len(req["byRevision"]) == 2 and req["byRevision"][update]["total"] > 0
    drained = {(a["group"], a["role"], a["ordinal"], a["revision"]) for a in trace["actions"] if a["verb"] == "drain"}
    deletes = [a for a in trace["actions"] if a["verb"] == "delete"]
    assert deletes and all((a["group"], a["role"], a["ordinal"], a["revision"]) in drained for a in deletes)


def test_with_a_drain_timeout_shorter_than_the_requests_the_trace_reports_the_interrupted_requests_honestly():
    trace = trace_of("drain-short-timeout")
    spec = manifest_of("drain-short-timeout")["spec"]
    timeout = spec["drain"]["timeoutSeconds"]
    assert trace["converged"] and not trace.get("controllerErrors")
    req = trace["requests"]
    assert req["interrupted"] > 0
    assert req["failed"] == req["interrupted"] + req["rejected"] + req.get("errors", 0)
    assert req["total"] == req["succeeded"] + req["failed"]
    old = [f for f in trace["frames"] if f["t"] < 120][-1]["updateRevision"]
    assert old != trace["frames"][-1]["updateRevision"]
    assert req["byRevision"][old]["interrupted"] == req["interrupted"]
    # Every interrupted request was in flight on a pod deleted at its drain timeout: a draining pod
    # gets no new requests, so the in-flight count in the last frame that shows it Draining bounds
    # what its deletion can interrupt.
    drains = {(a["group"], a["role"], a["ordinal"]): a["t"] for a in trace["actions"] if a["verb"] == "drain"}
    bound = 0
    for a in trace["actions"]:
        if a["verb"] != "delete":
            continue
        k = (a["group"], a["role"], a["ordinal"])
        started = drains[k]
        assert timeout <= a["t"] - started < timeout + 1
        last = [
            i
            for f in trace["frames"]
            if started <= f["t"] < a["t"]
            for i in f["instances"]
            if key(i) == k and i["state"] == "Draining"
        ][-1]
        assert last["inFlight"] > 0
        bound += last["inFlight"]
    assert 0 < req["interrupted"] <= bound


# -- the command line ------------------------------------------------------------------------------


def test_manage_py_simulate_writes_the_same_trace_as_the_python_entry_point(tmp_path):
    out = tmp_path / "trace.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "manage.py"),
            "simulate",
            str(SCENARIOS / "inplace-bad-image.yaml"),
            "--out",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == json.loads(json.dumps(trace_of("inplace-bad-image")))


@pytest.mark.parametrize("name", sorted(p.stem for p in SCENARIOS.glob("*.yaml")))
def test_every_scenario_in_tests_scenarios_is_valid_and_runs_without_controller_errors(name):
    trace = trace_of(name)
    assert trace["format"] == 1 and trace["scenario"] == name
    assert not trace.get("controllerErrors")


def test_multinode_instances_keep_every_pod_while_the_entry_drains_requests():
    trace = trace_of("drain-multinode")
    assert trace["converged"] and not trace.get("controllerErrors")
    assert any(i["state"] == "Draining" for f in trace["frames"] for i in f["instances"])
    for f in trace["frames"]:
        for i in f["instances"]:
            if i["state"] == "Draining" and i["inFlight"] > 0:
                assert i["pods"] == 2, f"t={f['t']}: {key(i)} lost a pod while {i['inFlight']} requests still run on it"
    assert trace["requests"]["interrupted"] == 0


def test_inplace_under_traffic_with_controller_restarts_keeps_uids_and_interrupts_nothing():
    trace = trace_of("inplace-lossless-restart")
    assert trace["converged"] and not trace.get("controllerErrors")
    assert [e["do"] for e in trace["events"]].count("restartController") == 2
    stood = next(
        f
        for f in trace["frames"]
        if f["t"] < 120 and len(f["instances"]) == 4 and all(i["state"] == "Ready" for i in f["instances"])
    )
    uids = {key(i): i["podUids"] for i in stood["instances"]}
    for f in frames_after(trace, stood["t"]):
        assert {key(i): i["podUids"] for i in f["instances"]} == uids, f"t={f['t']}: a pod was recreated"
    assert not any(a["verb"] in ("create", "delete", "recreate") for a in trace["actions"] if a["t"] >= 120)
    req = trace["requests"]
    assert req["total"] > 500 and req["interrupted"] == 0 and req["rejected"] == 0
    last = trace["frames"][-1]
    assert {i["revision"] for i in last["instances"]} == {last["updateRevision"]}


def test_inplace_restarts_no_container_of_an_instance_while_the_instance_still_has_requests_in_flight():
    trace = trace_of("inplace-lossless-restart")
    timeout = manifest_of("inplace-lossless-restart")["spec"]["drain"]["timeoutSeconds"]
    gate_at: dict = {}
    restarted: set = set()
    for a in trace["actions"]:
        if a["t"] < 120:
            continue
        k = (a["group"], a["role"], a["ordinal"])
        if a["verb"] == "setGate":
            gate_at.setdefault(k, a["t"])  # the first gate write of the update: out of routing
        elif a["verb"] == "patchImage" and k not in restarted:
            restarted.add(k)  # the first image patch of the instance restarts a container
            # The frame written at the patch time carries the in-flight count the controller read
            # (counts change without a frame, so an earlier frame may still show a finished request).
            before = [f for f in trace["frames"] if f["t"] <= a["t"]][-1]
            inst = next(i for i in before["instances"] if key(i) == k)
            if a["t"] - gate_at[k] < timeout:
                assert inst["inFlight"] == 0, f"t={a['t']}: {k} patched with {inst['inFlight']} requests in flight"
