"""Drain before delete (domain.md "Drain", kthena-modelserving.md 5.2).

A Ready serving pod chosen for deletion (rollout, scale-down, recovery) is first marked with the
``serving.rolloutui.io/draining`` annotation (value: the drain start time), and deleted once the
router reports 0 in-flight requests for it or ``drain.timeoutSeconds`` has passed since the mark.
In-flight counts come from ``CountingRouter``; time from ``FixedClock`` (one second per pass).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from controller.core import naming

from .helpers import NAME, NS, CountingRouter, converged_cluster, manifest, role, set_images, spec_of, step

DRAINING = naming.ANNOTATION_DRAINING


def role_rolling(timeout=100, replicas=2, groups=1, workers=0, **spec_extra):
    return manifest(
        replicas=groups,
        roles=[role("serve", replicas=replicas, workers=workers, maxUnavailable=1)],
        strategy={"type": "RoleRollingUpdate"},
        drain={"timeoutSeconds": timeout},
        **spec_extra,
    )


def group_rolling(timeout=100, groups=2):
    return manifest(replicas=groups, roles=[role("serve", replicas=1)], drain={"timeoutSeconds": timeout})


def marked(cluster):
    return sorted(n for n, p in cluster.pods.items() if DRAINING in (p["metadata"].get("annotations") or {}))


def deleted(cluster):
    return sorted(n for n, p in cluster.pods.items() if p["metadata"].get("deletionTimestamp"))


def verbs(result):
    return [(a.verb, tuple(a.pod_names)) for a in result.actions]


def passes(cluster, clock, router, n):
    out = []
    for _ in range(n):
        out.append(step(cluster, clock, router))
    return out


# -- every deletion path drains a Ready pod first -----------------------------------------------


def _rollout(cluster):
    set_images(cluster, "engine:v2")


def _scale_down_role(cluster):
    template = spec_of(cluster)["template"]
    template["roles"][0]["replicas"] = 1
    cluster.patch_modelserving(NS, NAME, {"spec": {"template": template}})


def _scale_down_groups(cluster):
    cluster.patch_modelserving(NS, NAME, {"spec": {"replicas": 1}})


def _recovery(cluster):
    worker = next(p for n, p in cluster.pods.items() if n.endswith("-serve-1-1"))
    worker["status"]["phase"] = "Failed"


@pytest.mark.parametrize(
    "m, change, victim",
    [
        pytest.param(role_rolling(), _rollout, "ms-0-serve-1-0", id="role rolling update"),
        pytest.param(group_rolling(), _rollout, "ms-1-serve-0-0", id="serving group rolling update"),
        pytest.param(role_rolling(), _scale_down_role, "ms-0-serve-1-0", id="role scale-down"),
        pytest.param(group_rolling(), _scale_down_groups, "ms-1-serve-0-0", id="group scale-down"),
        pytest.param(
            role_rolling(workers=1),
            _recovery,
            "ms-0-serve-1-0",
            id="RoleRecreate recovery of an instance with a failed worker",
        ),
    ],
)
def test_a_ready_pod_is_marked_draining_and_deleted_only_when_its_in_flight_requests_reach_zero(m, change, victim):
    cluster, clock = converged_cluster(m)
    router = CountingRouter()
    router.counts[victim] = 3
    uid = cluster.pods[victim]["metadata"]["uid"]
    change(cluster)
    first = step(cluster, clock, router)
    assert ("drain", (victim,)) in verbs(first) or any(
        a.verb == "drain" and victim in a.pod_names for a in first.actions
    )
    assert victim in marked(cluster) and victim not in deleted(cluster)
    mark_time = float(cluster.pods[victim]["metadata"]["annotations"][DRAINING])
    assert mark_time == clock.t - 1
    assert first.requeue_after is not None and first.requeue_after <= 0.5
    waiting = passes(cluster, clock, router, 5)
    assert victim in cluster.pods and cluster.pods[victim]["metadata"]["uid"] == uid and victim not in deleted(cluster)
    assert any("in-flight" in b["reason"] and b.get("kind") == "drain" for b in waiting[-1].blocked)
    router.counts[victim] = 0
    step(cluster, clock, router, settle=False)
    assert victim in deleted(cluster)


@pytest.mark.parametrize(
    "in_flight, seconds_after_mark, deleted_now",
    [
        pytest.param(0, 1, True, id="no requests: deleted on the next pass"),
        pytest.param(2, 1, False, id="2 requests 1 s after the mark: wait"),
        pytest.param(2, 99, False, id="2 requests 1 s before the timeout: wait"),
        pytest.param(2, 100, True, id="2 requests at the timeout: delete anyway"),
        pytest.param(1, 500, True, id="1 request long after the timeout: delete"),
    ],
)
def test_a_draining_pod_is_deleted_at_zero_in_flight_or_at_the_drain_timeout(
    in_flight, seconds_after_mark, deleted_now
):
    cluster, clock = converged_cluster(role_rolling(timeout=100))
    router = CountingRouter()
    victim = "ms-0-serve-1-0"
    router.counts[victim] = 5
    set_images(cluster, "engine:v2")
    step(cluster, clock, router)
    mark = float(cluster.pods[victim]["metadata"]["annotations"][DRAINING])
    router.counts[victim] = in_flight
    clock.t = mark + seconds_after_mark
    step(cluster, clock, router, settle=False)
    assert (victim in deleted(cluster)) == deleted_now


def test_a_not_ready_pod_serves_no_traffic_and_is_deleted_without_a_drain():
    cluster, clock = converged_cluster(role_rolling())
    victim = "ms-0-serve-1-0"
    for c in cluster.pods[victim]["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "False"
    set_images(cluster, "engine:v2")
    result = step(cluster, clock, CountingRouter(), settle=False)
    assert victim in deleted(cluster) and not any(a.verb == "drain" and victim in a.pod_names for a in result.actions)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(timeout=st.integers(1, 20), counts=st.lists(st.integers(0, 4), min_size=1, max_size=30))
def test_a_drain_ends_exactly_at_the_first_pass_with_no_requests_or_past_the_timeout(timeout, counts):
    cluster, clock = converged_cluster(role_rolling(timeout=timeout))
    router = CountingRouter()
    victim = "ms-0-serve-1-0"
    router.counts[victim] = 1
    set_images(cluster, "engine:v2")
    step(cluster, clock, router)
    mark = float(cluster.pods[victim]["metadata"]["annotations"][DRAINING])
    for n in counts:
        router.counts[victim] = n
        now = clock.t
        step(cluster, clock, router, settle=False)
        expect = n == 0 or now - mark >= timeout
        assert (victim in deleted(cluster)) == expect, (now, mark, n)
        if expect:
            return
        cluster.settle()


# -- pause and cancel ---------------------------------------------------------------------------


def test_a_paused_rollout_finishes_a_started_drain_but_starts_no_new_one():
    cluster, clock = converged_cluster(role_rolling(replicas=3))
    router = CountingRouter()
    for n in cluster.pods:
        router.counts[n] = 1
    set_images(cluster, "engine:v2")
    step(cluster, clock, router)
    first = marked(cluster)
    assert len(first) == 1
    uid = cluster.pods[first[0]]["metadata"]["uid"]
    cluster.patch_modelserving(NS, NAME, {"spec": {"paused": True}})
    results = passes(cluster, clock, router, 3)
    assert first[0] in cluster.pods and cluster.pods[first[0]]["metadata"]["uid"] == uid  # still draining
    router.counts[first[0]] = 0
    results += passes(cluster, clock, router, 20)
    assert any(a.verb == "delete" and first[0] in a.pod_names for r in results for a in r.actions)
    assert first[0] not in cluster.pods or cluster.pods[first[0]]["metadata"]["uid"] != uid
    assert not any(a.verb == "drain" for r in results for a in r.actions)
    assert marked(cluster) == []
    assert any(b.get("kind") == "paused" for b in results[-1].blocked)


def test_pausing_before_the_rollout_starts_no_drain():
    cluster, clock = converged_cluster(role_rolling(replicas=3))
    cluster.patch_modelserving(NS, NAME, {"spec": {"paused": True}})
    set_images(cluster, "engine:v2")
    results = passes(cluster, clock, CountingRouter(), 5)
    assert not any(a.verb in ("drain", "delete") for r in results for a in r.actions)
    assert marked(cluster) == []


def _revert_image(cluster):
    set_images(cluster, "engine:v1")


def _scale_back_up(cluster):
    template = spec_of(cluster)["template"]
    template["roles"][0]["replicas"] = 2
    cluster.patch_modelserving(NS, NAME, {"spec": {"template": template}})


def _scale_groups_back_up(cluster):
    cluster.patch_modelserving(NS, NAME, {"spec": {"replicas": 2}})


@pytest.mark.parametrize(
    "m, start, cancel, victim",
    [
        pytest.param(role_rolling(), _rollout, _revert_image, "ms-0-serve-1-0", id="role rollout reverted"),
        pytest.param(role_rolling(), _scale_down_role, _scale_back_up, "ms-0-serve-1-0", id="role scale-down undone"),
        pytest.param(group_rolling(), _rollout, _revert_image, "ms-1-serve-0-0", id="group rollout reverted"),
        pytest.param(
            group_rolling(), _scale_down_groups, _scale_groups_back_up, "ms-1-serve-0-0", id="group scale-down undone"
        ),
    ],
)
def test_a_cancelled_drain_clears_the_mark_and_keeps_the_pod(m, start, cancel, victim):
    cluster, clock = converged_cluster(m)
    router = CountingRouter()
    router.counts[victim] = 4
    uid = cluster.pods[victim]["metadata"]["uid"]
    start(cluster)
    step(cluster, clock, router)
    assert marked(cluster) == [victim]
    cancel(cluster)
    result = step(cluster, clock, router)
    assert any(a.verb == "undrain" and victim in a.pod_names for a in result.actions)
    assert marked(cluster) == []
    results = passes(cluster, clock, router, 5)
    assert cluster.pods[victim]["metadata"]["uid"] == uid
    assert not any(a.verb in ("drain", "delete") for r in results for a in r.actions)
    assert cluster.get_modelserving(NS, NAME)["status"].get("converged")


def test_the_workers_of_a_draining_instance_stay_until_the_entrys_requests_finish():
    """An instance is one engine (entry + workers): the entry's in-flight requests run on the
    workers too, so deleting a worker mid-drain breaks them exactly like deleting the entry."""
    cluster, clock = converged_cluster(role_rolling(workers=1))
    router = CountingRouter()
    router.counts["ms-0-serve-1-0"] = 3
    set_images(cluster, "engine:v2")
    for _ in range(5):
        step(cluster, clock, router)
        if "ms-0-serve-1-0" in cluster.pods:
            assert "ms-0-serve-1-1" in cluster.pods and "ms-0-serve-1-1" not in deleted(cluster)
    router.counts["ms-0-serve-1-0"] = 0
    step(cluster, clock, router, settle=False)
    assert {"ms-0-serve-1-0", "ms-0-serve-1-1"} <= set(deleted(cluster))
