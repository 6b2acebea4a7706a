"""A rollout onto an image that crashes (issue 31): the phase is Degraded for as long as a pod of
the update crash-loops, and why it waits names the instance, its reason and its restarts.

Between two back-offs the kubelet runs a crashing container again: its waiting reason
(CrashLoopBackOff) is gone until it exits anew, but the container's ``lastState.terminated`` keeps
the failed exit and it has not been Ready since (Kubernetes' ContainerStatus). The controller reads
that, not the passing waiting reason, so the phase does not flip to Progressing at every restart.
"""

from __future__ import annotations

import re

from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.paths import TEST_SCENARIOS

_CACHE: dict[str, list] = {}


def passes() -> list[tuple[float, dict]]:
    """(time, state view) of every pass of tests/scenarios/crash-loop-rollout.yaml."""
    if "crash" not in _CACHE:
        runner = Runner(load_scenario(TEST_SCENARIOS / "crash-loop-rollout.yaml"))
        seen: list[tuple[float, dict]] = []
        runner.kind.on_pass.append(lambda t, result: seen.append((t, result.view)))
        runner.run()
        _CACHE["crash"] = seen
    return _CACHE["crash"]


def first_crash(seen) -> float:
    return next(t for t, v in seen if any(i["state"] == "Failed" for i in v["instances"]))


def test_the_phase_stays_degraded_from_the_first_crash_while_the_update_crash_loops():
    seen = passes()
    crashed = first_crash(seen)
    after = [(round(t, 2), v["phase"]) for t, v in seen if t >= crashed]
    assert len(after) > 10  # many restarts later
    assert {phase for _, phase in after} == {"Degraded"}, [p for p in after if p[1] != "Degraded"][:5]


def test_why_it_waits_names_the_crash_looping_instance_its_reason_and_restarts():
    seen = passes()
    crashed = first_crash(seen)
    restarts_seen = set()
    for t, view in seen:
        if t < crashed + 1:
            continue
        reasons = {b["reason"] for b in view["blocked"]}
        assert reasons, t
        for reason in reasons:
            match = re.search(r"group 3 decode-(\d): CrashLoopBackOff, (\d+) restarts?", reason)
            assert match, reason
            restarts_seen.add(int(match.group(2)))
    assert len(restarts_seen) >= 3  # the count follows the restarts


def test_the_view_says_why_it_is_degraded_with_the_instance_and_the_deadline():
    seen = passes()
    crashed = first_crash(seen)
    for _, view in seen:
        if view["phase"] != "Degraded":
            assert view["degraded"] is None
            continue
        reasons = view["degraded"]["reasons"]
        assert any(re.match(r"group 3 decode-\d: CrashLoopBackOff, \d+ restarts?", r) for r in reasons), reasons
    last = seen[-1][1]
    assert last["degraded"]["title"] == "Rollout stalled past its deadline"
    assert any("progressDeadlineSeconds (600 s)" in r for r in last["degraded"]["reasons"])
    assert crashed < seen[-1][0]
