"""Every scenario runs, and the documented ones' traces show what each file's comment promises.

The scenarios are the repository's (``examples/scenarios``, ``tests/scenarios``); ``../shared/scenarios``
runs too when it is there and differs from those copies (``tests/paths.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("controller.core.reconcile")
pytest.importorskip("controller.core.view")

from trace_checks import (  # noqa: E402
    available_groups,
    blocked_reasons,
    first_converged_frame,
    skew_quota,
)

from controller.simcluster.runner import run_scenario  # noqa: E402
from controller.simcluster.scenario import load_scenario  # noqa: E402
from controller.simcluster.trace import dumps  # noqa: E402
from tests.paths import (  # noqa: E402
    EXAMPLE_SCENARIOS,
    TEST_SCENARIOS,
    shared_scenarios_beyond_the_repository,
)

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = EXAMPLE_SCENARIOS  # the documented scenarios whose promises this file checks by name
# tests/scenarios are run by tests/coordination/test_scenarios_coordination_inplace_drain.py.
ALL_SCENARIOS = [*sorted(EXAMPLE_SCENARIOS.glob("*.yaml")), *shared_scenarios_beyond_the_repository()]

_CACHE: dict[str, dict] = {}


def trace_of(name: str) -> dict:
    if name not in _CACHE:
        _CACHE[name] = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    return _CACHE[name]


def new_revision_after(trace, t):
    return next(f["updateRevision"] for f in trace["frames"] if f["t"] >= t)


def revision_before(trace, t):
    return [f for f in trace["frames"] if f["t"] < t][-1]["updateRevision"]


# -- group-rolling --------------------------------------------------------------------------------


def test_group_rolling_keeps_at_most_one_group_unavailable_replaces_highest_first_and_converges():
    trace = trace_of("group-rolling")
    roles = {"prefill": 1, "decode": 2}
    start = first_converged_frame(trace, 4, roles)
    assert start is not None and start < 100
    for f in trace["frames"]:
        if f["t"] >= start:
            assert available_groups(f, roles) >= 3, f"t={f['t']}: more than one group unavailable"
    new = new_revision_after(trace, 100)
    assert new != revision_before(trace, 100)
    order = []
    for a in trace["actions"]:
        if a["t"] >= 100 and a["verb"] in ("delete", "drain", "recreate") and a["group"] not in order:
            order.append(a["group"])
    assert order == [3, 2, 1, 0]
    assert trace["converged"] and trace["convergedAt"] > 100
    last = trace["frames"][-1]
    assert {i["revision"] for i in last["instances"]} == {new}
    assert trace["endTime"] == pytest.approx(trace["convergedAt"] + 60)


# -- partition-protected-recovery -------------------------------------------------------------


def test_groups_below_the_partition_stay_old_through_pod_loss_and_a_controller_restart_until_promoted():
    trace = trace_of("partition-protected-recovery")
    old = revision_before(trace, 100)
    new = new_revision_after(trace, 100)
    assert old != new
    for f in trace["frames"]:
        if f["t"] < 1200:
            for inst in f["instances"]:
                if inst["group"] < 3:
                    assert inst["revision"] == old, f"t={f['t']}: protected group {inst['group']} on {inst['revision']}"
    # Group 1 really was lost and rebuilt (new pod UIDs) from the old revision, before the promote.
    before = [f for f in trace["frames"] if f["t"] < 600][-1]
    uids_before = {u for i in before["instances"] if i["group"] == 1 for u in i["podUids"]}
    rebuilt = [
        f
        for f in trace["frames"]
        if 600 < f["t"] < 1200
        and all(i["state"] == "Ready" for i in f["instances"] if i["group"] == 1)
        and any(i["group"] == 1 for i in f["instances"])
    ]
    assert rebuilt, "group 1 never came back before the promote"
    uids_after = {u for i in rebuilt[-1]["instances"] if i["group"] == 1 for u in i["podUids"]}
    assert uids_before and uids_after and not uids_before & uids_after
    recreated = [
        a for a in trace["actions"] if 600 <= a["t"] < 1200 and a["group"] == 1 and a["verb"] in ("create", "recreate")
    ]
    assert recreated and {a["revision"] for a in recreated} == {old}
    # Groups 3 and 4 (outside the partition) were updated before the promote.
    mid = [f for f in trace["frames"] if f["t"] < 1200][-1]
    assert {i["revision"] for i in mid["instances"] if i["group"] >= 3} == {new}
    # After the promote everything converges on the new revision.
    assert trace["converged"] and trace["convergedAt"] > 1200
    assert {i["revision"] for i in trace["frames"][-1]["instances"]} == {new}


# -- surge-unschedulable ------------------------------------------------------------------------


def test_surge_on_a_full_cluster_waits_with_a_reason_and_never_drops_below_the_ready_groups():
    trace = trace_of("surge-unschedulable")
    roles = {"serve": 1}
    start = first_converged_frame(trace, 3, roles)
    assert start is not None and start < 100
    for f in trace["frames"]:
        if f["t"] >= start:
            assert available_groups(f, roles) >= 3, f"t={f['t']}: fewer than 3 Ready groups"
    waiting = [f for f in trace["frames"] if 100 < f["t"] < 900]
    assert waiting
    reasons = [r for f in waiting for r in blocked_reasons(f)]
    assert any("unschedulable" in r.lower() and "surge" in r.lower() for r in reasons), reasons
    new = new_revision_after(trace, 100)
    assert not any(i["revision"] == new and i["state"] == "Ready" for f in waiting for i in f["instances"])
    assert not any(a["verb"] in ("delete", "drain") for a in trace["actions"] if 100 <= a["t"] < 900)
    assert trace["converged"] and trace["convergedAt"] > 900
    assert {i["revision"] for i in trace["frames"][-1]["instances"]} == {new}


# -- coordinated-seed-example -------------------------------------------------------------------

COORD_TARGETS = {"a": 100, "b": 50, "c": 10}
COORD_CALLERS = {"a": [], "b": ["a"], "c": ["b"]}  # a -> b -> c: b is called by a, c by b


def coordinated_counts(trace):
    """Per frame after the update: (t, started, ready, old_alive, old_routable) per role.

    started = instances on the new revision (Ready or still coming up), surge ordinals excluded.
    """
    new = new_revision_after(trace, 200)
    out = []
    for f in trace["frames"]:
        if f["t"] < 200:
            continue
        started = {r: 0 for r in COORD_TARGETS}
        ready = {r: 0 for r in COORD_TARGETS}
        old_alive = {r: 0 for r in COORD_TARGETS}
        old_routable = {r: 0 for r in COORD_TARGETS}
        for i in f["instances"]:
            if i["revision"] != new:
                old_alive[i["role"]] += 1
                old_routable[i["role"]] += i["state"] == "Ready"
            elif i["ordinal"] < COORD_TARGETS[i["role"]]:
                started[i["role"]] += 1
                ready[i["role"]] += i["state"] == "Ready"
        out.append((f["t"], started, ready, old_alive, old_routable))
    return out


@pytest.mark.slow
def test_coordinated_update_starts_c_then_b_then_a_with_quotas_10_5_1_from_zero_and_converges():
    trace = trace_of("coordinated-seed-example")
    first_start: dict[str, float] = {}
    first_ready: dict[str, float] = {}
    saw_quotas_from_zero = False
    for t, started, ready, _, _ in coordinated_counts(trace):
        for r in COORD_TARGETS:
            if started[r]:
                first_start.setdefault(r, t)
            if ready[r]:
                first_ready.setdefault(r, t)
        if all(v == 0 for v in ready.values()) and any(started.values()):
            # Start quotas from zero with maxSkew 10%: ceil(0.1 x 100, 50, 10) = 10, 5, 1.
            assert started["a"] <= 10 and started["b"] <= 5 and started["c"] <= 1, (t, started)
            saw_quotas_from_zero = True
    assert saw_quotas_from_zero
    assert first_ready["c"] <= first_start["b"], "new b started before any new c was Ready"
    assert first_ready["b"] <= first_start["a"], "new a started before any new b was Ready"
    assert trace["converged"]
    assert {i["revision"] for i in trace["frames"][-1]["instances"]} == {new_revision_after(trace, 200)}


@pytest.mark.slow
def test_coordinated_update_never_starts_more_than_the_skew_quota():
    trace = trace_of("coordinated-seed-example")
    skew = Fraction(10, 100)
    previous_started: dict[str, int] = {}
    previous_quotas: dict[str, int] = {}
    for t, started, ready, old_alive, old_routable in coordinated_counts(trace):
        # Ready progress, with the planner's one refinement of domain.md's formula
        # (ready_baseline): a dependency's LAST old instance, kept on purpose by the teardown order
        # while an old caller exists, counts as done, once every other instance of that role is
        # Ready on the new revision. Without it B=5 holding 1 old instance sits at 80% and caps its
        # caller A=10 at ceil(0.9 x 10) = 9 of 10: A never finishes, so B never lets go.
        progress = {}
        for r, target in COORD_TARGETS.items():
            held = old_routable[r] == 1 and ready[r] == target - 1 and any(old_alive[c] > 0 for c in COORD_CALLERS[r])
            progress[r] = Fraction(min(ready[r] + held, target), target)
        min_progress = min((p for p in progress.values() if p < 1), default=Fraction(1))
        quotas = {r: skew_quota(min_progress, skew, target) for r, target in COORD_TARGETS.items()}
        for r in COORD_TARGETS:
            # A start (one more new-revision instance) must fit the quota the pass saw: the
            # previous frame's or this one's. Without a start the quota may shrink below what was
            # started: when the last old caller goes, its dependency's held instance stops counting
            # as done (a at 100 started, b from 45/50 back to 44/50 = 88%, quota 98).
            if started[r] > previous_started.get(r, 0):
                quota = max(quotas[r], previous_quotas.get(r, 0))
                assert started[r] <= quota, (
                    f"t={t}: role {r} started {started[r]} > quota {quota} (progress {progress})"
                )
        previous_started, previous_quotas = started, quotas


# -- drain-no-loss ------------------------------------------------------------------------------


def test_draining_before_deleting_interrupts_no_request():
    trace = trace_of("drain-no-loss")
    req = trace["requests"]
    assert req["total"] > 1000
    assert req["interrupted"] == 0
    assert req["rejected"] == 0
    old, new = revision_before(trace, 120), new_revision_after(trace, 120)
    assert req["byRevision"][old]["total"] > 0 and req["byRevision"][new]["total"] > 0
    assert any(a["verb"] == "drain" for a in trace["actions"])
    assert trace["converged"]


# -- determinism and the command ----------------------------------------------------------------


@pytest.mark.slow
def test_the_same_seed_gives_a_byte_identical_trace_and_another_seed_may_differ():
    s = load_scenario(SCENARIOS / "drain-no-loss.yaml")
    one, two = dumps(run_scenario(s)), dumps(run_scenario(load_scenario(SCENARIOS / "drain-no-loss.yaml")))
    assert one == two
    other = dumps(run_scenario(load_scenario(SCENARIOS / "drain-no-loss.yaml", seed=99)))
    assert json.loads(other)["seed"] == 99 and other != one


@pytest.mark.parametrize(
    "path",
    [
        SCENARIOS / "group-rolling.yaml",
        TEST_SCENARIOS / "drain-multinode.yaml",
        TEST_SCENARIOS / "inplace-image-bump.yaml",
        TEST_SCENARIOS / "canary-healthy.yaml",
    ],
    ids=lambda p: p.stem,
)
def test_nobody_changes_an_object_after_handing_it_over_so_shared_objects_equal_copied_ones(path):
    """The store hands out what it stores and keeps what it is given (statuses, new pods) without
    copying; with ``copy_reads`` it copies both ways. Equal traces: the controller never changed
    what it read, nor a status or a pod after writing it (drains, in-place updates, a canary)."""
    assert dumps(run_scenario(load_scenario(path))) == dumps(run_scenario(load_scenario(path), copy_reads=True))


@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.stem}")
def test_every_scenario_runs_without_controller_errors(path):
    trace = trace_of(path.stem) if path.parent == SCENARIOS else run_scenario(load_scenario(path))
    assert trace["format"] == 1
    assert trace["frames"][0]["t"] == 0.0
    assert "controllerErrors" not in trace, trace.get("controllerErrors")
    assert not [e for e in trace["events"] if e.get("error")]


def test_traces_are_byte_identical_across_processes_with_different_hash_seeds(tmp_path):
    # Set and dict-of-str iteration order changes with PYTHONHASHSEED; a trace must not.
    outs = []
    for hash_seed in ("1", "987"):
        out = tmp_path / f"t{hash_seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.simcluster.cli",
                str(SCENARIOS / "partition-protected-recovery.yaml"),
                "--out",
                str(out),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.skipif(not (REPO / "manage.py").exists(), reason="manage.py not there yet")
def test_manage_py_simulate_writes_the_trace_file_and_exits_0(tmp_path):
    out = tmp_path / "trace.json"
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "simulate",
            str(SCENARIOS / "surge-unschedulable.yaml"),
            "--out",
            str(out),
            "--seed",
            "4",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == 1 and doc["scenario"] == "surge-unschedulable" and doc["seed"] == 4
    assert out.read_text() == dumps(run_scenario(load_scenario(SCENARIOS / "surge-unschedulable.yaml")))
