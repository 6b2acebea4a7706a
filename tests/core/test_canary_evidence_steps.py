"""No progress on no evidence: canary steps advanced by the real reconcile pass (the planner-test
cluster of ``harness``) with a metrics source that gives each window the verdict a test asks for.

The rules are the traffic contract's ("Evidence before progress"): a timed pause is a minimum
that ends only with ``minPassWindows`` passing windows since the step began and the latest window
not failed (a failure below the limit holds the step, as Flagger halts advancement);
``inconclusiveLimit`` Inconclusive windows in a row pause the rollout; an operator's resume or
promote overrides that pause.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import controls
from controller.core.reconcile import reconcile
from tests.factories import group_strategy, with_canary

from .harness import CountingRouter, manifest, role
from .support import NAME, NS, change_image, deploy, status

# 4 groups: group 3 first, a pause of 30 s, then groups 2 and 3, a pause of 20 s, then all.
STEPS = [
    {"setPartition": 3},
    {"pause": {"durationSeconds": 30}},
    {"setPartition": 2},
    {"pause": {"durationSeconds": 20}},
    {"setPartition": 0},
]
FIRST_PAUSE = 1

GOOD = {
    "requests": 100,
    "started": 100,
    "errorRate": 0.0,
    "timeoutRate": 0.0,
    "latencyP50Ms": 100.0,
    "latencyP95Ms": 200.0,
    "latencyP99Ms": 300.0,
    "feedbackMean": None,
    "durationP99Ms": 2000.0,
}
# What the canary shows in a window of each verdict (errorRate max 0.05, minRequests 50).
CANARY = {
    "Pass": GOOD,
    "Fail": {**GOOD, "errorRate": 0.3},
    "Inconclusive": {**GOOD, "requests": 7, "started": 7},
}


class ScriptedMetrics:
    """The canary's figures follow ``verdicts`` window after window (the last one repeats); a
    ``"Error"`` window raises, as a provider that cannot answer."""

    def __init__(self, cluster, verdicts: list[str]) -> None:
        self.cluster = cluster
        self.verdicts = verdicts
        self.windows: dict[tuple[float, float], str] = {}

    def verdict_of(self, start: float, end: float) -> str:
        if (start, end) not in self.windows:
            self.windows[(start, end)] = self.verdicts[min(len(self.windows), len(self.verdicts) - 1)]
        return self.windows[(start, end)]

    def window(self, namespace, name, revision, start, end, *, at=None):
        verdict = self.verdict_of(start, end)
        if verdict == "Error":
            raise ConnectionError("prometheus unreachable")
        canary = (status(self.cluster).get("canary") or {}).get("revision")
        return dict(CANARY[verdict]) if revision == canary else dict(GOOD)


def rollout(verdicts: list[str], **analysis):
    fields = {
        "intervalSeconds": 10,
        "settleSeconds": 2,
        "minRequests": 50,
        "failureLimit": 100,
        "inconclusiveLimit": 100,
        "metrics": [{"metric": "errorRate", "max": 0.05}],
        **analysis,
    }
    strategy = with_canary(group_strategy(maxUnavailable=1), STEPS, fields)
    cluster, clock = deploy(manifest(replicas=4, roles=[role("serve")], strategy=strategy))
    change_image(cluster, "engine:v2")
    return cluster, clock, ScriptedMetrics(cluster, verdicts)


def run(cluster, clock, metrics, seconds, *, history=None, audit=None):
    """One reconcile pass a second; ``history`` collects (t, status.canary) after each pass and
    ``audit`` the passes' audit entries."""
    end = clock.t + seconds
    result = None
    while clock.t < end:
        result = reconcile(cluster, CountingRouter(), clock, NS, NAME, metrics=metrics)
        if audit is not None:
            audit.extend(result.audit)
        cluster.settle()
        if history is not None:
            history.append((clock.t, dict(status(cluster).get("canary") or {})))
        clock.t += 1
    return result


def canary(cluster) -> dict:
    return status(cluster).get("canary") or {}


def condition(cluster, kind: str) -> dict | None:
    return next((c for c in status(cluster).get("conditions") or [] if c["type"] == kind), None)


def paused(cluster) -> bool:
    return bool(cluster.get_modelserving(NS, NAME)["spec"].get("paused"))


def operator(cluster, patch: dict) -> None:
    cluster.patch_modelserving(NS, NAME, patch)


def test_a_timed_pause_whose_time_ran_out_does_not_end_without_a_passing_window():
    cluster, clock, metrics = rollout(["Inconclusive"])
    run(cluster, clock, metrics, 90)
    assert canary(cluster)["stepIndex"] == FIRST_PAUSE
    assert not condition(cluster, "AnalysisInconclusive")  # inconclusiveLimit 100: not reached


def test_the_page_says_what_a_timed_pause_whose_time_is_up_still_waits_for():
    cluster, clock, metrics = rollout(["Inconclusive"])
    shown = run(cluster, clock, metrics, 60).view["canary"]
    assert shown["pauseSecondsLeft"] == 0
    assert shown["waitingFor"] == "waiting for 1 passing window since this step began (0 so far)"
    assert shown["limits"]["inconclusiveLimit"] == 100 and shown["inconclusive"] > 0


def test_a_timed_pause_ends_with_its_first_passing_window_once_its_time_is_up():
    cluster, clock, metrics = rollout(["Inconclusive"] * 5 + ["Pass"])
    history: list = []
    run(cluster, clock, metrics, 90, history=history)
    left = next(t for t, c in history if c.get("stepIndex", 0) > FIRST_PAUSE)
    began = next(c["stepStartedAt"] for t, c in history if c.get("stepIndex") == FIRST_PAUSE)
    first_pass = next(w for w in canary(cluster)["windows"] if w["verdict"] == "Pass")
    assert left >= began + 30 and left >= first_pass["end"]


def test_a_failure_below_the_limit_holds_a_timed_pause_although_a_window_passed_before():
    cluster, clock, metrics = rollout(["Pass", "Fail"])
    run(cluster, clock, metrics, 90)
    assert canary(cluster)["stepIndex"] == FIRST_PAUSE
    assert canary(cluster)["failures"] > 1 and canary(cluster)["phase"] == "Paused"


def test_inconclusive_limit_windows_in_a_row_pause_the_rollout_naming_the_shortfall():
    cluster, clock, metrics = rollout(["Inconclusive"], inconclusiveLimit=3)
    audit: list = []
    run(cluster, clock, metrics, 60, audit=audit)
    assert paused(cluster) and canary(cluster)["stepIndex"] <= FIRST_PAUSE
    cond = condition(cluster, "AnalysisInconclusive")
    assert cond["status"] == "True"
    assert cond["message"] == "3 windows with 7 canary requests, fewer than minRequests 50"
    (entry,) = [a for a in audit if a["source"] == "analysis"]
    assert entry["action"] == "pause" and entry["reason"] == cond["message"]


def test_error_windows_count_toward_the_inconclusive_limit_and_say_the_provider_failed():
    cluster, clock, metrics = rollout(["Error"], inconclusiveLimit=2)
    run(cluster, clock, metrics, 60)
    assert paused(cluster)
    assert {w["verdict"] for w in canary(cluster)["windows"]} == {"Error"}
    assert "metrics provider failed: prometheus unreachable" in condition(cluster, "AnalysisInconclusive")["message"]


def test_resume_after_an_inconclusive_pause_overrides_it_and_the_count_starts_again():
    cluster, clock, metrics = rollout(["Inconclusive"] * 3 + ["Pass"], inconclusiveLimit=3)
    run(cluster, clock, metrics, 60)
    assert paused(cluster) and condition(cluster, "AnalysisInconclusive")
    operator(cluster, controls.resume(cluster.get_modelserving(NS, NAME)))
    run(cluster, clock, metrics, 40)
    assert not condition(cluster, "AnalysisInconclusive") and not paused(cluster)
    assert canary(cluster)["inconclusive"] == 0
    assert canary(cluster)["stepIndex"] > FIRST_PAUSE  # the windows passed since: the steps go on


def test_promote_one_step_after_an_inconclusive_pause_lifts_the_pause_and_skips_the_step():
    cluster, clock, metrics = rollout(["Inconclusive"], inconclusiveLimit=3)
    run(cluster, clock, metrics, 60)
    step = canary(cluster)["stepIndex"]
    assert paused(cluster) and step == FIRST_PAUSE
    operator(cluster, controls.promote(cluster.get_modelserving(NS, NAME)))
    run(cluster, clock, metrics, 5)
    assert not paused(cluster) and not condition(cluster, "AnalysisInconclusive")
    assert canary(cluster)["stepIndex"] > step


@given(
    verdicts=st.lists(st.sampled_from(["Pass", "Fail", "Inconclusive", "Error"]), min_size=1, max_size=14),
    min_pass=st.integers(min_value=1, max_value=3),
)
@settings(max_examples=25, deadline=None)
def test_a_timed_pause_never_ends_without_min_pass_windows_passing_windows_since_it_began(verdicts, min_pass):
    cluster, clock, metrics = rollout(verdicts, minPassWindows=min_pass)
    history: list = []
    run(cluster, clock, metrics, 160, history=history)
    judged: dict[tuple[float, float], tuple[float, str]] = {}  # window -> (judged at, verdict)
    previous: dict = {}
    for t, state in history:
        for w in state.get("windows") or []:
            judged.setdefault((w["start"], w["end"]), (t, w["verdict"]))
        old, new = previous.get("stepIndex"), state.get("stepIndex")
        if old is not None and new is not None and new > old and STEPS[old].get("pause"):
            began = previous["stepStartedAt"]
            seen = sorted((at, end, v) for (_, end), (at, v) in judged.items() if at <= t)
            passed = [end for at, end, v in seen if v == "Pass" and end > began]
            assert t >= began + STEPS[old]["pause"]["durationSeconds"]
            assert len(passed) >= min_pass, (t, old, seen)
            assert seen[-1][2] != "Fail"
        previous = state
