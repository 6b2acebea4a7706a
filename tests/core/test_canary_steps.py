"""Canary steps and automatic analysis, run by the real reconcile pass on the planner-test cluster
(``harness.MiniCluster``: pods get Ready at once) with a metrics source the test controls."""

from __future__ import annotations

import pytest

from controller.core import controls
from controller.core.mergepatch import merge_patch
from controller.core.reconcile import reconcile
from controller.core.spec import ValidationError, parse_modelserving
from tests.factories import group_strategy, with_canary

from .harness import CountingRouter, manifest, role
from .support import NAME, NS, change_image, deploy, status

STEPS = [
    {"setPartition": "75%"},
    {"pause": {"durationSeconds": 60}},
    {"setPartition": 2},
    {"pause": {}},
    {"setPartition": 0},
]


class Metrics:
    """Figures per revision: the canary revision (as the cluster's status names it) gets ``bad``
    figures once told so."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.bad: dict | None = None
        self.asked: list[tuple[str, float, float]] = []

    def window(self, namespace, name, revision, start, end, *, at=None):
        self.asked.append((revision, start, end))
        good = {
            "requests": 100,
            "errorRate": 0.0,
            "timeoutRate": 0.0,
            "latencyP50Ms": 100.0,
            "latencyP95Ms": 200.0,
            "latencyP99Ms": 300.0,
            "feedbackMean": None,
        }
        canary = (status(self.cluster).get("canary") or {}).get("revision")
        return {**good, **(self.bad or {})} if revision == canary else good


def canary_manifest(analysis: dict | None = None, steps=STEPS):
    strategy = with_canary(group_strategy(maxUnavailable=1), steps, analysis)
    return manifest(replicas=4, roles=[role("serve")], strategy=strategy)


def run(cluster, clock, metrics, seconds):
    end = clock.t + seconds
    while clock.t < end:
        reconcile(cluster, CountingRouter(), clock, NS, NAME, metrics=metrics)
        cluster.settle()
        clock.t += 1


def canary(cluster) -> dict:
    return status(cluster).get("canary") or {}


def updated_groups(cluster) -> set[int]:
    update = status(cluster)["updateRevision"]
    return {g["ordinal"] for g in status(cluster)["groups"] if g["revision"] == update}


def promote(cluster, **kwargs):
    ms = cluster.get_modelserving(NS, NAME)
    cluster.patch_modelserving(NS, NAME, controls.promote(ms, **kwargs))


@pytest.fixture
def rollout():
    cluster, clock = deploy(canary_manifest())
    change_image(cluster, "engine:v2")
    return cluster, clock, Metrics(cluster)


# Steps and promote as a table: run for ``before`` seconds, promote (with these arguments) or not, run
# ``after`` seconds, then the groups on the new revision, the step and the canary's phase. STEPS on 4
# groups: setPartition 75% (group 3), pause 60 s, setPartition 2 (groups 2, 3), pause for promote,
# setPartition 0 (all); 5 steps, so stepIndex 5 means all done.
STEP_CASES = [
    pytest.param(10, None, 0, {3}, 1, "Paused", id="the first step gives the new revision to the groups above 75%"),
    pytest.param(80, None, 0, {2, 3}, 3, "Paused", id="a timed pause ends by itself and the next setPartition follows"),
    pytest.param(150, None, 0, {2, 3}, 3, "Paused", id="a pause without a duration waits for promote however long"),
    pytest.param(100, {}, 20, {0, 1, 2, 3}, 5, "Succeeded", id="promote one step skips a pause without a duration"),
    pytest.param(10, {}, 10, {2, 3}, 3, "Paused", id="promote one step during a timed pause skips only that pause"),
    pytest.param(10, {"full": True}, 20, {0, 1, 2, 3}, 5, "Succeeded", id="promote full skips every remaining step"),
]


@pytest.mark.parametrize(("before", "promoted", "after", "groups", "step", "phase"), STEP_CASES)
def test_canary_steps_and_promote(rollout, before, promoted, after, groups, step, phase):
    cluster, clock, metrics = rollout
    run(cluster, clock, metrics, before)
    if promoted is not None:
        promote(cluster, **promoted)
        run(cluster, clock, metrics, after)
    assert updated_groups(cluster) == groups
    assert (canary(cluster)["stepIndex"], canary(cluster)["phase"]) == (step, phase)


def test_promote_with_a_partition_is_refused_while_canary_steps_run(rollout):
    cluster, clock, metrics = rollout
    run(cluster, clock, metrics, 10)
    with pytest.raises(controls.ControlError) as err:
        controls.promote(cluster.get_modelserving(NS, NAME), partition=1)
    assert err.value.field == "partition"


ANALYSIS = {
    "intervalSeconds": 10,
    "minRequests": 50,
    "failureLimit": 2,
    "metrics": [{"metric": "errorRate", "max": 0.05}],
}


def analysed(on_failure: str):
    cluster, clock = deploy(canary_manifest({**ANALYSIS, "onFailure": on_failure}))
    change_image(cluster, "engine:v2")
    return cluster, clock, Metrics(cluster)


def test_one_failed_window_below_the_failure_limit_does_not_act():
    cluster, clock, metrics = analysed("Pause")
    run(cluster, clock, metrics, 12)
    metrics.bad = {"errorRate": 0.3}
    run(cluster, clock, metrics, 10)
    assert canary(cluster)["failures"] == 1 and canary(cluster)["phase"] != "Failed"
    assert not cluster.get_modelserving(NS, NAME)["spec"].get("paused")


def test_failure_limit_failed_windows_pause_the_rollout_with_the_reason():
    cluster, clock, metrics = analysed("Pause")
    run(cluster, clock, metrics, 12)
    metrics.bad = {"errorRate": 0.3}
    run(cluster, clock, metrics, 25)
    ms = cluster.get_modelserving(NS, NAME)
    assert ms["spec"]["paused"] is True
    assert canary(cluster)["phase"] == "Failed"
    cond = next(c for c in status(cluster)["conditions"] if c["type"] == "AnalysisFailed")
    assert "canary error rate 30.0% is above the limit 5.0%" in cond["message"]
    assert updated_groups(cluster) == {3}  # nothing beyond the first step
    assert "analysis: pause" in ms["metadata"]["annotations"]["serving.rolloutui.io/change-cause"]


def test_failure_limit_failed_windows_roll_back_to_the_stable_revision():
    cluster, clock, metrics = analysed("Rollback")
    stable = status(cluster)["currentRevision"]
    run(cluster, clock, metrics, 12)
    metrics.bad = {"errorRate": 0.3}
    run(cluster, clock, metrics, 40)
    assert status(cluster)["updateRevision"] == stable
    assert updated_groups(cluster) == {0, 1, 2, 3}  # every group back on the stable revision
    assert canary(cluster)["phase"] == "Failed"  # the failed canary stays on show
    # ... and so does why: the condition outlives the rollback it caused, until a new canary starts.
    cond = next(c for c in status(cluster)["conditions"] if c["type"] == "AnalysisFailed")
    assert "canary error rate 30.0% is above the limit 5.0%" in cond["message"]
    change_image(cluster, "engine:v3")
    run(cluster, clock, metrics, 5)
    assert "AnalysisFailed" not in {c["type"] for c in status(cluster)["conditions"]}
    assert canary(cluster)["phase"] in ("Running", "Paused")


def test_a_window_passing_again_forgives_no_failure_as_argo_rollouts_and_flagger_count_them_in_total():
    cluster, clock, metrics = analysed("Pause")
    run(cluster, clock, metrics, 12)
    metrics.bad = {"errorRate": 0.3}
    run(cluster, clock, metrics, 10)
    metrics.bad = None
    run(cluster, clock, metrics, 10)
    assert canary(cluster)["failures"] == 1 and canary(cluster)["phase"] != "Failed"
    metrics.bad = {"errorRate": 0.3}
    run(cluster, clock, metrics, 10)
    # failureLimit 2: the second failure stops the canary, though a pass came between.
    assert canary(cluster)["phase"] == "Failed" and cluster.get_modelserving(NS, NAME)["spec"]["paused"] is True


def test_inconclusive_windows_neither_fail_nor_pass():
    cluster, clock, metrics = analysed("Pause")
    run(cluster, clock, metrics, 12)
    metrics.bad = {"requests": 10, "errorRate": 0.9}
    run(cluster, clock, metrics, 40)
    assert canary(cluster)["failures"] == 0
    assert {w["verdict"] for w in canary(cluster)["windows"][-3:]} == {"Inconclusive"}


BAD_SPECS = [
    (
        "canary steps with a role-level strategy are refused",
        {"type": "RoleRollingUpdate", "canary": {"steps": [{"setPartition": 0}]}},
        "spec.rolloutStrategy.canary",
    ),
    (
        "a partition beside canary steps is refused",
        {"rollingUpdateConfiguration": {"partition": 2}, "canary": {"steps": [{"setPartition": 0}]}},
        "spec.rolloutStrategy.rollingUpdateConfiguration.partition",
    ),
    (
        "a step that is neither setPartition nor pause is refused naming the unknown field",
        {"canary": {"steps": [{"wait": 3}]}},
        "spec.rolloutStrategy.canary.steps[0].wait",
    ),
    (
        "a step with two kinds is refused",
        {"canary": {"steps": [{"setPartition": 1, "pause": {}}]}},
        "spec.rolloutStrategy.canary.steps[0]",
    ),
    (
        "a misspelt failureLimit is refused with its path, never read as the default",
        {
            "canary": {
                "steps": [{"setPartition": 0}],
                "analysis": {"failurLimit": 3, "metrics": [{"metric": "errorRate", "max": 1}]},
            }
        },
        "spec.rolloutStrategy.canary.analysis.failurLimit",
    ),
    (
        "an unknown field of the canary is refused with its path",
        {"canary": {"steps": [{"setPartition": 0}], "stepz": []}},
        "spec.rolloutStrategy.canary.stepz",
    ),
    (
        "minPassWindows below 1 is refused: a timed pause never ends on no evidence",
        {
            "canary": {
                "steps": [{"setPartition": 0}],
                "analysis": {"minPassWindows": 0, "metrics": [{"metric": "errorRate", "max": 1}]},
            }
        },
        "spec.rolloutStrategy.canary.analysis.minPassWindows",
    ),
    (
        "an inconclusiveLimit that is not a whole number is refused",
        {
            "canary": {
                "steps": [{"setPartition": 0}],
                "analysis": {"inconclusiveLimit": 2.5, "metrics": [{"metric": "errorRate", "max": 1}]},
            }
        },
        "spec.rolloutStrategy.canary.analysis.inconclusiveLimit",
    ),
    (
        "an unknown metric is refused",
        {"canary": {"steps": [{"setPartition": 0}], "analysis": {"metrics": [{"metric": "p99", "max": 1}]}}},
        "spec.rolloutStrategy.canary.analysis.metrics[0].metric",
    ),
    (
        "a check with two limits is refused",
        {
            "canary": {
                "steps": [{"setPartition": 0}],
                "analysis": {"metrics": [{"metric": "errorRate", "max": 1, "maxDeltaToStable": 1}]},
            }
        },
        "spec.rolloutStrategy.canary.analysis.metrics[0]",
    ),
    (
        "an onFailure other than Pause or Rollback is refused",
        {
            "canary": {
                "steps": [{"setPartition": 0}],
                "analysis": {"onFailure": "Abort", "metrics": [{"metric": "errorRate", "max": 1}]},
            }
        },
        "spec.rolloutStrategy.canary.analysis.onFailure",
    ),
    (
        "the prometheus provider without a query per metric is refused",
        {
            "canary": {
                "steps": [{"setPartition": 0}],
                "analysis": {"provider": "prometheus", "metrics": [{"metric": "errorRate", "max": 1}]},
            }
        },
        "spec.rolloutStrategy.canary.analysis.queries",
    ),
]


@pytest.mark.parametrize("strategy,field", [c[1:] for c in BAD_SPECS], ids=[c[0] for c in BAD_SPECS])
def test_invalid_canary_specs_are_refused_naming_the_field(strategy, field):
    m = manifest(replicas=4, roles=[role("serve")])
    m = merge_patch(m, {"spec": {"rolloutStrategy": strategy}})
    with pytest.raises(ValidationError) as err:
        parse_modelserving(m)
    assert err.value.field == field
