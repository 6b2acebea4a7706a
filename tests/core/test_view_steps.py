"""The named steps of ``view.build_view``: what it takes from the spec (or from what runs when the
manifest is invalid), and a draining pod's entry."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.core.observe import observe_plain
from controller.core.spec import parse_modelserving
from controller.core.view import _drain_entry, _from_what_runs, _spec_side

from .harness import manifest, role
from .support import deploy


def _pods(roles, replicas):
    cluster, _ = deploy(manifest(replicas=replicas, roles=roles))
    return cluster.list_pods("default", "ms")


@pytest.mark.parametrize(
    ("annotations", "summary"),
    [
        ({}, {"replicas": 2, "partition": 0, "paused": False}),
        ({naming.ANNOTATION_AUTOSCALE: "on"}, {"replicas": 2, "partition": 0, "paused": False, "autoscale": True}),
    ],
    ids=["a spec without autoscale shows its sizes only", "autoscale on shows in the summary"],
)
def test_a_valid_spec_gives_its_sizes_timeout_and_strategy(annotations, summary):
    m = manifest(replicas=2, roles=[role("prefill", replicas=3), role("decode")])
    parsed = parse_modelserving(m)
    side = _spec_side(parsed, {"annotations": annotations}, {}, observe_plain([]))
    assert side.summary == summary
    assert side.replicas == 2
    assert side.role_replicas == {"prefill": 3, "decode": 1}
    assert side.timeout == parsed.drain_timeout_seconds
    assert side.strategy_type == parsed.strategy.type
    assert side.verification is False


@pytest.mark.parametrize(
    ("status", "strategy_type"),
    [
        ({}, "ServingGroupRollingUpdate"),
        ({"strategy": {"type": "RoleRollingUpdate"}}, "RoleRollingUpdate"),
    ],
    ids=["without a recorded strategy, group rolling", "the strategy the last status recorded"],
)
def test_an_invalid_manifest_shows_what_runs(status, strategy_type):
    observed = observe_plain(_pods([role("prefill", replicas=3), role("decode")], replicas=2))
    side = _spec_side(None, {}, status, observed)
    assert side == _from_what_runs(observed, status)
    assert side.replicas == 2
    assert side.role_replicas == {"prefill": 3, "decode": 1}
    assert (side.timeout, side.strategy_type, side.verification) == (0.0, strategy_type, False)
    assert side.summary == {"replicas": 2, "partition": None, "paused": False}


def _draining_pod(since):
    pod = _pods([role("serve")], replicas=1)[0]
    pod["metadata"].setdefault("annotations", {})[naming.ANNOTATION_DRAINING] = since
    return observe_plain([pod]).all_pods()[0]


@pytest.mark.parametrize(
    ("mark", "now", "in_flight", "since", "left"),
    [
        ("100", 120.0, 2, 100.0, 10.0),
        ("100", 140.0, 0, 100.0, 0.0),
        ("not a time", 150.0, 0, 150.0, 30.0),
    ],
    ids=[
        "drained since 100, timeout 30, at 120: 10 s left",
        "past its timeout: 0 s left, never negative",
        "a mark that cannot be read counts from now",
    ],
)
def test_a_draining_pods_entry(mark, now, in_flight, since, left):
    pod = _draining_pod(mark)
    entry = _drain_entry(pod, 0, "serve", 0, {pod.name: in_flight}, now, 30.0)
    assert entry == {
        "pod": pod.name,
        "group": 0,
        "role": "serve",
        "ordinal": 0,
        "inFlight": in_flight,
        "since": since,
        "secondsLeft": left,
    }
