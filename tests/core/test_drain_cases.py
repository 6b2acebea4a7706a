"""The named cases of ``drain.remove_pods``: what one pod needs, when to look again, who leaves
while an engine drains, and what a removal does with a few pods together."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from controller.core.observe import PodObs
from controller.core.planner import drain
from controller.core.planner.builder import PlanBuilder

NOW = 200.0


def _pod(name="p-0", *, ready=False, deleting=False, draining_since=None) -> PodObs:
    neutral = {f.name: None for f in dataclasses.fields(PodObs)}
    return PodObs(
        **neutral
        | {"name": name, "uid": f"uid-{name}", "ready": ready, "deleting": deleting}
        | {"draining_since": draining_since}
    )


@pytest.mark.parametrize(
    ("pod", "in_flight", "may_start", "case"),
    [
        pytest.param(_pod(ready=True, deleting=True), 0, True, drain.TERMINATING, id="a terminating pod is waited for"),
        pytest.param(_pod(draining_since=190.0), 0, True, drain.DRAINED, id="a drain with no request left ends"),
        pytest.param(_pod(draining_since=150.0), 3, True, drain.DRAINING, id="a drain with requests left waits"),
        pytest.param(
            _pod(draining_since=100.0), 2, True, drain.DRAIN_TIMED_OUT, id="a drain at its timeout ends anyway"
        ),
        pytest.param(
            _pod(draining_since=150.0), 3, False, drain.DRAINING, id="a paused rollout still finishes a drain"
        ),
        pytest.param(_pod(ready=True), 0, True, drain.START_DRAIN, id="a ready pod is drained first"),
        pytest.param(_pod(ready=True), 0, False, drain.HOLD, id="a paused rollout starts no drain"),
        pytest.param(_pod(ready=False), 0, True, drain.DELETE_NOW, id="a pod that serves nothing goes at once"),
        pytest.param(_pod(ready=False), 0, False, drain.DELETE_NOW, id="a paused rollout still deletes a pod"),
    ],
)
def test_each_pod_to_remove_is_in_one_named_case(pod, in_flight, may_start, case):
    got = drain.pod_case(pod, NOW, 100.0, {pod.name: in_flight}, may_start)
    assert got == case


@pytest.mark.parametrize(
    ("may_start", "case"),
    [
        pytest.param(True, drain.DELETE_NOW, id="without a drain timeout a ready pod is deleted at once"),
        pytest.param(False, drain.HOLD, id="without a drain timeout a paused rollout keeps a ready pod"),
    ],
)
def test_a_drain_timeout_of_zero_turns_drains_off(may_start, case):
    assert drain.pod_case(_pod(ready=True), NOW, 0.0, {}, may_start) == case


@pytest.mark.parametrize(
    ("elapsed", "timeout", "delay"),
    [
        pytest.param(3.0, 10.0, drain.DRAIN_POLL_SECONDS, id="a young drain is looked at again after the poll"),
        pytest.param(9.8, 10.0, 0.2, id="a drain near its timeout is looked at again at the timeout"),
        pytest.param(12.0, 10.0, 0.0, id="a drain past its timeout is looked at again at once"),
    ],
)
def test_a_waiting_drain_is_looked_at_again_soon_and_no_later_than_its_timeout(elapsed, timeout, delay):
    assert drain.drain_poll_delay(elapsed, timeout) == pytest.approx(delay)


def test_while_an_engine_drains_only_its_pods_that_never_served_leave():
    never_served = _pod("w-1")
    drained = _pod("w-2", draining_since=100.0)
    was_ready = _pod("w-3", ready=True)
    assert drain._leaving_with_a_draining_engine([never_served, drained, was_ready]) == [never_served]


def _remove(pods, in_flight, *, may_start=True, timeout=100.0):
    ctx = SimpleNamespace(
        now=NOW, observed=SimpleNamespace(in_flight=in_flight), ms=SimpleNamespace(drain_timeout_seconds=timeout)
    )
    out = PlanBuilder(ctx)
    where = {"group": 1, "role": "decode", "ordinal": 0, "revision": "r2", "reason": "update"}
    drain.remove_pods(out, pods, **where, may_start=may_start)
    return out


@pytest.mark.parametrize(
    ("pods", "in_flight", "actions", "interrupted", "blocked", "requeue"),
    [
        pytest.param(
            [_pod("e-0", ready=True), _pod("e-1", ready=True)],
            {},
            [("drain", ["e-0", "e-1"])],
            {},
            [],
            drain.DRAIN_POLL_SECONDS,
            id="an engine that serves is marked draining and looked at again soon",
        ),
        pytest.param(
            [_pod("e-0", draining_since=150.0), _pod("e-1", draining_since=150.0)],
            {"e-0": 3},
            [],
            {},
            ["draining decode-0: waiting for 3 in-flight request(s) (timeout 100 s)"],
            drain.DRAIN_POLL_SECONDS,
            id="an engine whose entry still has requests keeps all its pods and says why",
        ),
        pytest.param(
            [_pod("e-0", draining_since=150.0), _pod("e-1")],
            {"e-0": 3},
            [("delete", ["e-1"])],
            {},
            ["draining decode-0: waiting for 3 in-flight request(s) (timeout 100 s)"],
            drain.DRAIN_POLL_SECONDS,
            id="a pod that never served leaves while its engine drains",
        ),
        pytest.param(
            [_pod("e-0", draining_since=100.0), _pod("e-1", draining_since=100.0)],
            {"e-0": 2},
            [("delete", ["e-0", "e-1"])],
            {"e-0": 2},
            [],
            None,
            id="at the drain timeout the engine goes and the delete names the requests it cuts off",
        ),
    ],
)
def test_a_removal_drains_deletes_and_waits_by_its_pods_cases(pods, in_flight, actions, interrupted, blocked, requeue):
    out = _remove(pods, in_flight)
    assert [(a.verb, a.pod_names) for a in out.actions] == actions
    assert {name: n for a in out.actions for name, n in a.interrupted.items()} == interrupted
    assert [b.reason for b in out.blocked] == blocked
    assert out.requeue_after == (None if requeue is None else pytest.approx(requeue))
    assert out.removing_pods == {p.name for p in pods}


def test_a_paused_removal_leaves_ready_pods_out_of_the_pods_it_removes():
    out = _remove([_pod("e-0", ready=True)], {}, may_start=False)
    assert (out.actions, out.removing_pods) == ([], set())
