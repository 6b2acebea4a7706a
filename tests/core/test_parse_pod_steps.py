"""``observe.parse.parse_pod`` and its named steps: who the pod is, what its conditions and
containers say, what our marks on it say, and why it fails between two restarts."""

from __future__ import annotations

import json

import pytest

from controller.core import naming
from controller.core.observe import parse
from controller.core.observe.model import CRASH_LOOP

IDENTITY = {
    naming.LABEL_GROUP_ORDINAL: "2",
    naming.LABEL_ROLE_ORDINAL: "0",
    naming.LABEL_POD_INDEX: "1",
    naming.LABEL_ROLE: "prefill",
}
GATE = naming.CONDITION_INPLACE_READY


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(IDENTITY, (2, 0, 1, "prefill"), id="all four identity labels give the identity"),
        pytest.param(IDENTITY | {naming.LABEL_POD_INDEX: "x"}, None, id="an index that is no number is no identity"),
        pytest.param(IDENTITY | {naming.LABEL_GROUP_ORDINAL: "-1"}, None, id="a negative group is no identity"),
        pytest.param(IDENTITY | {naming.LABEL_ROLE: ""}, None, id="an empty role is no identity"),
        pytest.param({naming.LABEL_ROLE: "prefill"}, None, id="missing ordinals are no identity"),
    ],
)
def test_identity_comes_from_the_labels_or_not_at_all(labels, expected):
    obs = parse.parse_pod({"metadata": {"labels": labels}})
    assert (obs and (obs.group, obs.ordinal, obs.index, obs.role)) == expected


@pytest.mark.parametrize(
    ("conditions", "on_node", "expected"),
    [
        pytest.param([], False, (False, False, None, None, None, False), id="no conditions: nothing is known"),
        pytest.param([], True, (False, True, None, None, None, False), id="a pod on a node is scheduled"),
        pytest.param(
            [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            False,
            (True, True, None, None, None, False),
            id="Ready and PodScheduled true are read as such",
        ),
        pytest.param(
            [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            False,
            (False, False, "no node fits the pod", None, None, False),
            id="unschedulable without a message says no node fits",
        ),
        pytest.param(
            [{"type": GATE, "status": "False", "lastTransitionTime": 12}],
            True,
            (False, True, None, False, 12.0, True),
            id="a false in-place gate means the pod is leaving since the transition",
        ),
        pytest.param(
            [{"type": GATE, "status": "True", "lastTransitionTime": "1970-01-01T00:01:00Z"}],
            True,
            (False, True, None, True, 60.0, False),
            id="a true gate's RFC 3339 time is read as clock seconds",
        ),
    ],
)
def test_conditions_say_ready_scheduled_and_the_gate(conditions, on_node, expected):
    assert parse._read_conditions({"conditions": conditions}, on_node) == expected


def _container(restarts=0, *, ready=True, waiting=None, last_exit=None) -> dict:
    cs = {"restartCount": restarts, "ready": ready, "state": {"waiting": {"reason": waiting}} if waiting else {}}
    if last_exit is not None:
        cs["lastState"] = {"terminated": {"exitCode": last_exit}}
    return cs


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        pytest.param([], (0, None, False), id="no containers: no restarts nor failure"),
        pytest.param([_container(2), _container(3)], (5, None, False), id="restarts add up over containers"),
        pytest.param(
            [_container(1, ready=False, waiting="CrashLoopBackOff")],
            (1, "CrashLoopBackOff", False),
            id="a failing waiting reason is the failure",
        ),
        pytest.param([_container(0, waiting="ContainerCreating")], (0, None, False), id="a benign wait is no failure"),
        pytest.param(
            [_container(1, ready=False, last_exit=137)], (1, None, True), id="an error exit not Ready since is a crash"
        ),
        pytest.param(
            [_container(1, ready=True, last_exit=137)], (1, None, False), id="Ready again after the exit is no crash"
        ),
        pytest.param([_container(1, ready=False, last_exit=0)], (1, None, False), id="a clean exit is no crash"),
    ],
)
def test_containers_give_restarts_failure_and_crashes(containers, expected):
    assert parse._read_containers({"containerStatuses": containers}) == expected


STATE = {"targetRevision": "B"}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({}, (None, None, None, None), id="no marks: nothing"),
        pytest.param({naming.ANNOTATION_DRAINING: "40.5"}, (40.5, None, None, None), id="the drain mark's time"),
        pytest.param(
            {naming.ANNOTATION_DRAINING: "soon"},
            (float("-inf"), None, None, None),
            id="an unreadable drain mark started long ago",
        ),
        pytest.param(
            {naming.ANNOTATION_INPLACE_STATE: json.dumps(STATE)}, (None, STATE, None, None), id="the in-place state"
        ),
        pytest.param(
            {naming.ANNOTATION_INPLACE_STATE: "{"},
            (None, None, "in-place update annotation is not JSON", None),
            id="an in-place state that is not JSON is an error",
        ),
        pytest.param(
            {naming.ANNOTATION_INPLACE_STATE: "[1]"},
            (None, None, "in-place update annotation lacks targetRevision", None),
            id="an in-place state without a target revision is an error",
        ),
        pytest.param(
            {naming.ANNOTATION_VERIFICATION: '{"ok": true}'}, (None, None, None, {"ok": True}), id="the verification"
        ),
        pytest.param({naming.ANNOTATION_VERIFICATION: "{"}, (None, None, None, None), id="unreadable: never verified"),
        pytest.param({naming.ANNOTATION_VERIFICATION: "[]"}, (None, None, None, None), id="a list is never verified"),
    ],
)
def test_marks_give_drain_inplace_state_and_verification(annotations, expected):
    assert parse._read_marks(annotations) == expected


CRASHED_OVER_BASELINE = {
    "containerStatuses": [{"name": "engine", "ready": False, "restartCount": 4}],
}
COMPLETED = {"targetRevision": "B", "completed": True, "containers": {"engine": {"restartCount": 2}}}


@pytest.mark.parametrize(
    ("state", "state_error", "status", "crashed", "expected"),
    [
        pytest.param(None, None, {}, False, None, id="no crash and no update: not failing"),
        pytest.param(None, None, {}, True, CRASH_LOOP, id="a crash since Ready is still a crash loop"),
        pytest.param({"targetRevision": "B"}, None, {}, True, None, id="a running in-place update restarts on purpose"),
        pytest.param(None, "unreadable", {}, True, None, id="an unreadable update state judges no crash"),
        pytest.param(
            COMPLETED,
            None,
            CRASHED_OVER_BASELINE,
            True,
            "RestartsAboveInPlaceBaseline",
            id="after a completed update the baseline judges the restarts",
        ),
        pytest.param(
            COMPLETED,
            None,
            {"containerStatuses": [{"name": "engine", "ready": False, "restartCount": 3}]},
            True,
            None,
            id="one restart over the baseline is the update's own",
        ),
    ],
)
def test_a_pod_fails_between_restarts_when_its_crash_is_not_an_updates(state, state_error, status, crashed, expected):
    assert parse._failing_between_restarts(state, state_error, status, crashed_since_ready=crashed) == expected


def test_a_pod_without_identity_is_not_parsed():
    assert parse.parse_pod({"metadata": {"labels": {naming.LABEL_ROLE: "prefill"}}}) is None


def test_a_drain_mark_makes_the_parsed_pod_leave():
    pod = {
        "metadata": {"name": "p", "uid": "u", "labels": IDENTITY, "annotations": {naming.ANNOTATION_DRAINING: "5"}},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        "spec": {"nodeName": "n1"},
    }
    obs = parse.parse_pod(pod)
    assert (obs.group, obs.role, obs.ready, obs.scheduled, obs.leaving_routing) == (2, "prefill", True, True, True)
    assert obs.draining_since == 5.0
