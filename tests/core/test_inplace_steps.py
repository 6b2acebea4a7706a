"""The named steps of ``inplace.continue_update``: where one pod of an instance under in-place
update stands, when it left routing, and what the instance's pods ask for together."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from controller.core.observe import PodObs
from controller.core.planner import inplace
from controller.core.planner.builder import PlanBuilder
from controller.core.planner.drain import DRAIN_POLL_SECONDS

TARGET_ROLE = {"name": "serve", "entryTemplate": {"spec": {"containers": [{"name": "engine", "image": "engine:v2"}]}}}
STATE = {"targetRevision": "B", "containers": {"engine": {"imageID": "id-v1", "runningImage": "engine:v1"}}}


def _raw(image="engine:v1", *, image_id="id-v1", ready=True) -> dict:
    status = {"containerStatuses": [{"name": "engine", "image": image, "imageID": image_id, "ready": ready}]}
    return {"spec": {"containers": [{"name": "engine", "image": image}]}, "status": status}


def _pod(name="serve-0", **fields) -> PodObs:
    neutral = {f.name: None for f in dataclasses.fields(PodObs)}
    defaults = {"name": name, "role": "serve", "index": 0, "role_hash": "old", "deleting": False, "has_gate": True}
    return PodObs(**neutral | defaults | {"gate": True, "raw": _raw()} | fields)


def _ctx(now=110.0, in_flight=None, timeout=30.0):
    return SimpleNamespace(
        now=now,
        equivalent={"B"},
        update_hash="B",
        update_role_hashes={"serve": "new"},
        observed=SimpleNamespace(in_flight=in_flight or {}),
        ms=SimpleNamespace(drain_timeout_seconds=timeout),
    )


RESTARTED = _raw("engine:v2", image_id="id-v2")


@pytest.mark.parametrize(
    ("pod", "now", "in_flight", "step"),
    [
        pytest.param(_pod(deleting=True), 110.0, 0, inplace.TERMINATING, id="a terminating pod is left alone"),
        pytest.param(
            _pod(role_hash="new"), 110.0, 0, inplace.ON_TARGET, id="a pod on the target template is left alone"
        ),
        pytest.param(
            _pod(gate=True), 110.0, 0, inplace.LEAVE_ROUTING, id="a gated pod still routed leaves routing first"
        ),
        pytest.param(
            _pod(has_gate=False), 110.0, 0, inplace.LEAVE_ROUTING, id="an ungated pod without drain mark leaves routing"
        ),
        pytest.param(
            _pod(gate=False, gate_since=100.0),
            110.0,
            2,
            inplace.WAIT_IN_FLIGHT,
            id="a pod out of routing waits its requests",
        ),
        pytest.param(
            _pod(gate=False, gate_since=100.0),
            131.0,
            2,
            inplace.PATCH,
            id="at the drain timeout the pod is patched anyway",
        ),
        pytest.param(
            _pod(has_gate=False, draining_since=100.0), 110.0, 0, inplace.PATCH, id="a drained ungated pod is patched"
        ),
        pytest.param(
            _pod(inplace_state=STATE),
            110.0,
            0,
            inplace.RESTARTING,
            id="a patched pod not yet on its new image restarts",
        ),
        pytest.param(
            _pod(inplace_state=STATE, failing_reason="CrashLoopBackOff"),
            110.0,
            0,
            inplace.FAILING,
            id="a patched pod whose container fails is failing",
        ),
        pytest.param(
            _pod(inplace_state=STATE, raw=RESTARTED),
            110.0,
            0,
            inplace.FINISH,
            id="a pod ready on a new image id finishes",
        ),
        pytest.param(
            _pod(inplace_state=STATE | {"completed": True}, gate=True),
            110.0,
            0,
            inplace.COMPLETED,
            id="a completed pod is done",
        ),
        pytest.param(
            _pod(inplace_state=STATE | {"completed": True}, gate=False),
            110.0,
            0,
            inplace.REOPEN_GATE,
            id="a completed pod with its gate down gets it up again",
        ),
        pytest.param(
            _pod(inplace_state={"targetRevision": "C"}, gate=True),
            110.0,
            0,
            inplace.LEAVE_ROUTING,
            id="the state of an update to another revision counts as no state",
        ),
    ],
)
def test_each_pod_under_in_place_update_is_at_one_named_step(pod, now, in_flight, step):
    assert inplace.pod_step(_ctx(now, {pod.name: in_flight}), pod, TARGET_ROLE) == step


@pytest.mark.parametrize(
    ("pod", "since"),
    [
        pytest.param(_pod(gate=True), None, id="a gated pod with its gate up still serves"),
        pytest.param(_pod(gate=None), None, id="a gated pod without the condition yet still serves"),
        pytest.param(_pod(gate=False, gate_since=100.0), 100.0, id="a gated pod left when its gate went false"),
        pytest.param(_pod(gate=False), float("-inf"), id="a gate false since an unknown time left long ago"),
        pytest.param(_pod(has_gate=False, draining_since=90.0), 90.0, id="an ungated pod left at its drain mark"),
        pytest.param(_pod(has_gate=False), None, id="an ungated pod without drain mark still serves"),
    ],
)
def test_a_pod_leaves_routing_by_its_gate_or_else_by_its_drain_mark(pod, since):
    assert inplace.out_of_routing_since(pod) == since


def _sorted(*pods, now=110.0, in_flight=None):
    out = PlanBuilder(_ctx(now, in_flight))
    inst = SimpleNamespace(pods={i: p for i, p in enumerate(pods)})
    return out, inplace._pods_by_step(out, inst, TARGET_ROLE)


def test_pods_that_leave_routing_or_wait_are_being_removed_and_the_rest_are_not():
    leaving, waiting, done = _pod("a", gate=True), _pod("b", gate=False, gate_since=100.0), _pod("c", role_hash="new")
    out, (leave_routing, *_, waiting_in_flight) = _sorted(leaving, waiting, done, in_flight={"b": 3})
    assert out.removing_pods == {"a", "b"}
    assert (leave_routing, waiting_in_flight) == ([leaving], 3)


def test_a_pod_waiting_for_its_requests_asks_for_a_pass_by_its_timeout_at_the_latest():
    # Gate False since t=100, timeout 30 s: at t=129.8 the next look is at the timeout, 0.2 s on.
    out, _ = _sorted(_pod(gate=False, gate_since=100.0), now=129.8, in_flight={"serve-0": 1})
    assert out.requeue_after == pytest.approx(0.2)
    out, _ = _sorted(_pod(gate=False, gate_since=100.0), now=110.0, in_flight={"serve-0": 1})
    assert out.requeue_after == DRAIN_POLL_SECONDS


@pytest.mark.parametrize(
    ("pod", "gate_up", "finish"),
    [
        pytest.param(
            _pod(inplace_state=STATE, raw=RESTARTED, gate=False), True, True, id="a finished gated pod gets its gate up"
        ),
        pytest.param(
            _pod(inplace_state=STATE, raw=RESTARTED, gate=True), False, True, id="a gate already up is not set again"
        ),
        pytest.param(
            _pod(inplace_state=STATE, raw=RESTARTED, has_gate=False, gate=None),
            False,
            True,
            id="an ungated pod only finishes",
        ),
        pytest.param(
            _pod(inplace_state=STATE | {"completed": True}, gate=False),
            True,
            False,
            id="a completed pod only reopens its gate",
        ),
    ],
)
def test_a_finished_pod_gets_its_gate_up_unless_it_is(pod, gate_up, finish):
    _, (_, _, to_gate_up, to_finish, _, _) = _sorted(pod)
    assert (to_gate_up == [pod], to_finish == [pod]) == (gate_up, finish)
