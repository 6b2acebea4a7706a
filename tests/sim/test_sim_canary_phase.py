"""The phase and the canary's status through a canary's steps and after it (issue 31).

Argo Rollouts' rule for a Rollout with canary steps: its phase is Paused while it waits at a pause
step and Progressing until the last step is done; Healthy only then. A canary whose revision no
longer rolls out (an operator rolled it back) is over: its status says so instead of waiting at its
step for ever, and the partition is no longer the canary's.
"""

from __future__ import annotations

from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.paths import TEST_SCENARIOS

_CACHE: dict[str, list] = {}


def passes(scenario: str) -> list[tuple[float, dict]]:
    if scenario not in _CACHE:
        runner = Runner(load_scenario(TEST_SCENARIOS / f"{scenario}.yaml"))
        seen: list[tuple[float, dict]] = []
        runner.kind.on_pass.append(lambda t, result: seen.append((t, result.view)))
        runner.run()
        _CACHE[scenario] = seen
    return _CACHE[scenario]


def partition_source(view: dict) -> str | None:
    return (((view.get("strategy") or {}).get("group") or {}).get("partition") or {}).get("source")


def test_a_canary_waiting_at_a_pause_step_is_paused_and_never_healthy_before_its_last_step():
    seen = passes("canary-healthy")
    during = [(t, v) for t, v in seen if (v.get("canary") or {}).get("phase") in ("Running", "Paused")]
    assert during
    phases = {(v["canary"]["phase"], v["phase"]) for _, v in during}
    assert phases == {("Running", "Progressing"), ("Paused", "Paused")}, phases
    paused = next(v for _, v in during if v["canary"]["phase"] == "Paused")
    assert paused["counts"]["updatedReplicas"] == 1 and paused["converged"]  # 1 of 4 groups, at rest
    done = [v for _, v in seen if (v.get("canary") or {}).get("phase") == "Succeeded"]
    assert done and {v["phase"] for v in done} == {"Healthy"}


def test_once_the_canary_succeeded_the_partition_is_no_longer_the_canarys():
    seen = passes("canary-healthy")
    done = [v for _, v in seen if (v.get("canary") or {}).get("phase") == "Succeeded"]
    assert {partition_source(v) for v in done} == {"builtin"}


def test_a_canary_rolled_back_by_an_operator_ends_at_its_step_and_gives_the_partition_back():
    seen = passes("canary-operator-rollback")
    waiting = [v for t, v in seen if 120 < t < 200]
    assert waiting and {v["phase"] for v in waiting} == {"Paused"}
    after = [v for t, v in seen if t >= 200]
    last = after[-1]
    assert last["canary"]["phase"] == "RolledBack"
    assert last["canary"]["stepIndex"] == 1
    assert last["canary"]["message"] == "rolled back at step 2 of 5: the canary's revision no longer rolls out"
    assert last["phase"] == "Healthy" and last["converged"]
    assert {partition_source(v) for v in after} == {"builtin"}


def test_an_aborted_canary_goes_back_to_stable_stops_its_steps_and_stays_paused_as_argo_rollouts_abort():
    """Argo Rollouts' abort: the canary is scaled back to the stable version and the rollout does
    not go on (it waits for a retry). Here: every group back on the stable revision, the steps end
    Aborted at the step they had reached, and spec.paused stays true."""
    seen = passes("canary-operator-abort")
    before = [v for t, v in seen if 120 < t < 200]
    stable = before[-1]["canary"]["stable"]
    assert {i["revision"] for i in before[-1]["instances"]} > {stable}  # the canary group was on the new one
    last = seen[-1][1]
    assert last["canary"]["phase"] == "Aborted"
    assert last["canary"]["stepIndex"] == 1
    assert last["canary"]["message"] == "aborted at step 2 of 5: every group is back on the stable revision"
    assert last["spec"]["paused"] is True and last["phase"] == "Paused"
    assert last["converged"] and last["updateRevision"] == stable
    assert {i["revision"] for i in last["instances"]} == {stable}
    after = [v for t, v in seen if t >= 200]
    assert {partition_source(v) for v in after} == {"builtin"}
    # The steps never moved on after the abort.
    assert {v["canary"]["stepIndex"] for v in after} == {1}
