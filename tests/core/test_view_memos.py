"""With a cache (``passcache``), the state view memoises each group's entries (its instances, and
its row of the group table) by the observed group, which is reused while its pods are the same
parses, under a key of everything else they read: the pass's shape (spec sizes, update revision,
verification, namespace), the pods expected per instance, the in-flight counts of the group's pods,
and for the row the group's status record. Whatever changes besides the pods must show in the view;
what does not change is handed back as the very same objects, which the publisher's delta then skips
by identity."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.observe import observe
from controller.core.view import build_view
from controller.runtime.delta import make_delta
from tests.factories import coordinated, prefill_decode, role_strategy

from .harness import _versioned, manifest, role, step
from .support import (
    NAME,
    NS,
    ROLLOUTS,
    cache_of,
    change_image,
    deploy,
    every_pass_of_a_rollout,
    patch_spec,
    status,
    view_with_and_without_memos,
)


def converged(roles=None, replicas=2, **kw):
    cluster, clock = deploy(manifest(replicas=replicas, roles=roles or [role("serve", workers=1)], **kw))
    return cluster, clock


def view(cluster, clock, *, pods=None, obj=None, in_flight=None):
    return build_view(
        obj or cluster.ms[(NS, NAME)],
        pods if pods is not None else cluster.list_pods(NS, NAME),
        cluster.list_revisions(NS, NAME),
        in_flight or {},
        clock.t,
        cache=cache_of(cluster),
    )


def test_an_unchanged_group_is_handed_back_as_the_same_entries_and_the_delta_skips_it():
    cluster, clock = converged()
    first = view(cluster, clock)
    clock.t += 5
    again = view(cluster, clock)
    assert all(a is b for a, b in zip(first["instances"], again["instances"]))
    assert all(a is b for a, b in zip(first["groups"], again["groups"]))
    delta = make_delta(first, again)
    assert delta["lists"]["instances"] == {"upsert": [], "patch": [], "remove": []}
    assert delta["lists"]["groups"] == {"upsert": [], "patch": [], "remove": []}


def test_the_in_flight_count_of_a_draining_pod_shows_though_its_pods_did_not_change():
    cluster, clock = converged()
    pod = next(p for p in cluster.pods.values() if p["metadata"]["name"].startswith(f"{NAME}-0-"))
    pod["metadata"].setdefault("annotations", {})[naming.ANNOTATION_DRAINING] = str(clock.t)
    _versioned(pod)
    name = pod["metadata"]["name"]
    counts = []
    for n in (3, 3, 1, 0):
        v = view(cluster, clock, in_flight={name: n})
        counts.append(
            (
                next(i["inFlight"] for i in v["instances"] if name.startswith(f"{NAME}-{i['group']}-{i['role']}-")),
                next(d["inFlight"] for d in v["drain"] if d["pod"] == name),
            )
        )
    assert counts == [(3, 3), (3, 3), (1, 1), (0, 0)]


def test_a_changed_status_record_changes_the_groups_row_but_not_its_instances():
    cluster, clock = converged()
    first = view(cluster, clock)
    obj = copy.deepcopy(cluster.ms[(NS, NAME)])
    obj["status"]["groups"][0]["phase"] = "Updating"
    second = view(cluster, clock, obj=obj)
    assert second["groups"][0]["phase"] == "Updating" and first["groups"][0]["phase"] != "Updating"
    assert second["groups"][1] is first["groups"][1]
    assert all(a is b for a, b in zip(first["instances"], second["instances"]))


def test_a_scale_down_marks_the_groups_above_the_replicas_as_surge_though_no_pod_changed():
    cluster, clock = converged(replicas=3)
    before = view(cluster, clock)
    assert not any(i["surge"] for i in before["instances"])
    patch_spec(cluster, {"replicas": 2})
    after = view(cluster, clock)
    assert {i["group"] for i in after["instances"] if i["surge"]} == {2}
    assert [g["ordinal"] for g in after["groups"] if g["surge"]] == [2]


def test_a_revision_that_can_no_longer_be_read_holds_unchanged_instances_to_the_specs_pod_count():
    cluster, clock = converged()
    assert {i["state"] for i in view(cluster, clock)["instances"]} == {"Ready"}
    patch_spec(cluster, {"template": {"roles": [role("serve", workers=2)]}})
    revisions = copy.deepcopy(cluster.list_revisions(NS, NAME))
    for rev in revisions:
        rev["data"] = None
    unreadable = build_view(
        cluster.ms[(NS, NAME)], cluster.list_pods(NS, NAME), revisions, {}, clock.t, cache=cache_of(cluster)
    )
    assert {i["state"] for i in unreadable["instances"]} == {"Creating"}  # 2 of the 3 pods wanted
    assert {i["state"] for i in view(cluster, clock)["instances"]} == {"Ready"}


def test_under_role_level_strategies_an_unchanged_role_reports_the_new_update_revision():
    cluster, clock = converged(roles=prefill_decode(), strategy=role_strategy())
    old = status(cluster)["updateRevision"]
    view(cluster, clock)  # memoised under the old update revision
    change_image(cluster, "engine:v2", roles=["prefill"])
    step(cluster, clock, settle=False)  # stores the update revision; decode's pods are untouched
    new = status(cluster)["updateRevision"]
    assert new != old
    decode = [i for i in view(cluster, clock)["instances"] if i["role"] == "decode"]
    assert decode and {i["revision"] for i in decode} == {new}


@pytest.mark.parametrize("rollout", list(ROLLOUTS), ids=list(ROLLOUTS))
def test_every_view_of_a_rollout_is_the_same_with_and_without_the_memos(rollout):
    """Through a whole rollout (pods changing a few at a time, groups replaced, a pod lost midway,
    in-flight counts moving on the pods that leave routing), the memoised entries never change a
    view."""

    def same_view(cluster, clock, n):
        leaving = [p.name for p in observe(cluster.list_pods(NS, NAME)).leaving_routing]
        memoised, fresh = view_with_and_without_memos(cluster, clock, {name: n % 3 for name in leaving})
        assert memoised == fresh, f"pass {n}"

    every_pass_of_a_rollout(rollout, same_view)


def test_when_only_in_flight_counts_change_the_groups_other_instances_are_the_same_entries():
    # One group of two roles: a request on one instance changes that entry only (before, any count
    # in the group rebuilt every entry of it, walking every instance's gates again).
    cluster, clock = converged(roles=[role("prefill"), role("decode")], replicas=1)
    pods = cluster.list_pods(NS, NAME)
    busy = next(p["metadata"]["name"] for p in pods if "-decode-" in p["metadata"]["name"])
    first = view(cluster, clock, pods=pods, in_flight={busy: 2})
    again = view(cluster, clock, pods=pods, in_flight={busy: 5})

    def mine(entry):
        return busy.startswith(f"{NAME}-{entry['group']}-{entry['role']}-{entry['ordinal']}-")

    pairs = list(zip(first["instances"], again["instances"], strict=True))
    changed = [(a, b) for a, b in pairs if mine(a)]
    unchanged = [(a, b) for a, b in pairs if not mine(a)]
    assert [(a["inFlight"], b["inFlight"]) for a, b in changed] == [(2, 5)]
    assert unchanged and all(a is b for a, b in unchanged)
    assert {i["group"] for i in first["instances"]} == {0}
    idle = view(cluster, clock, pods=pods)
    assert [i["inFlight"] for i in idle["instances"]] == [0] * len(idle["instances"])


def _with_times(pod):
    """``pod`` with the times the gates read, which the test cluster does not write: created at 0,
    scheduled at 10, started at 20, Ready at 30 unless the test set when."""
    pod["metadata"].setdefault("creationTimestamp", "2026-11-30T10:00:00Z")
    times = {"PodScheduled": "2026-11-30T10:00:10Z", "Ready": "2026-11-30T10:00:30Z"}
    for condition in pod["status"].get("conditions", []):
        if condition["type"] in times and condition["status"] == "True":
            condition.setdefault("lastTransitionTime", times[condition["type"]])
    for container in pod["status"].get("containerStatuses", []):
        if "running" in container["state"]:
            container["state"]["running"].setdefault("startedAt", "2026-11-30T10:00:20Z")
    return pod


def _views_with_and_without_memos(cluster, clock, in_flight, routed):
    obj = cluster.ms[(NS, NAME)]
    pods = [_with_times(pod) for pod in cluster.list_pods(NS, NAME)]
    revisions = cluster.list_revisions(NS, NAME)
    memoised = build_view(obj, pods, revisions, in_flight, clock.t, routed=routed, cache=cache_of(cluster))
    return memoised, build_view(obj, pods, revisions, in_flight, clock.t, routed=routed)


def _nth_pod(cluster, n):
    names = sorted(cluster.pods)
    return cluster.pods[names[n % len(names)]] if names else None


def _set_ready(pod, ready, t):
    conditions = [c for c in pod["status"].get("conditions", []) if c["type"] != "Ready"]
    ready_condition = {"type": "Ready", "status": "True", "lastTransitionTime": t} if ready else None
    pod["status"]["conditions"] = conditions + [ready_condition or {"type": "Ready", "status": "False"}]


def _change_one_pod(cluster, clock, op, n, arg):
    """One pod turned Ready or unready, verified (passed or failed) for the revision it runs,
    marked draining or deleted behind the controller's back."""
    pod = _nth_pod(cluster, n)
    if pod is None:
        return
    annotations = pod["metadata"].setdefault("annotations", {})
    if op == "ready":
        _set_ready(pod, arg, clock.t)
    elif op == "verify":
        revision = pod["metadata"]["labels"][naming.LABEL_REVISION]
        annotations[naming.ANNOTATION_VERIFICATION] = json.dumps({"revision": revision, "passed": arg, "at": clock.t})
    elif op == "drain":
        annotations[naming.ANNOTATION_DRAINING] = str(clock.t)
    else:
        del cluster.pods[pod["metadata"]["name"]]


ONE_AT_A_TIME = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["ready", "verify"]), st.integers(0, 10_000), st.booleans()),
        st.tuples(st.sampled_from(["drain", "delete"]), st.integers(0, 10_000), st.none()),
        st.tuples(st.just("in-flight"), st.integers(0, 10_000), st.integers(0, 3)),
        st.tuples(st.just("route"), st.integers(0, 10_000), st.sampled_from(["absent", None, 0.0, 5.0, 500.0])),
        st.tuples(st.just("router-table"), st.just(0), st.booleans()),  # the router tells, or not
        st.tuples(st.just("pass"), st.just(0), st.booleans()),  # the pods settle afterwards, or not
        st.tuples(st.just("change-image"), st.just(0), st.sampled_from(["engine:v2", "engine:v3"])),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(verification=st.booleans(), ops=ONE_AT_A_TIME)
# Each thing an entry reads besides its pods, changed while its pods do not: the router's table of
# its entry pod, the verification spec, the in-flight counts; then a rollout, a pod at a time.
@example(verification=False, ops=[("pass", 0, True), ("route", 0, "absent"), ("route", 0, 5.0), ("route", 0, None)])
@example(verification=False, ops=[("pass", 0, True), ("router-table", 0, False), ("router-table", 0, True)])
@example(verification=True, ops=[("pass", 0, True), ("verify", 0, True), ("verify", 0, False), ("verify", 2, True)])
# A worker pod with a request in flight deleted: its instance's pods are no longer those named before.
@example(verification=False, ops=[("in-flight", 7, 2), ("delete", 7, None), ("in-flight", 8, 1)])
@example(
    verification=False,
    ops=[("in-flight", 0, 2), ("in-flight", 0, 3), ("in-flight", 2, 1), ("in-flight", 0, 0), ("drain", 2, None)]
    + [("in-flight", 2, 1), ("pass", 0, False), ("in-flight", 2, 2), ("delete", 2, None)],
)
@example(
    verification=False,
    ops=[("change-image", 0, "engine:v2"), ("pass", 0, False), ("in-flight", 1, 1), ("pass", 0, True)]
    + [("ready", 3, False), ("pass", 0, True), ("pass", 0, False), ("ready", 3, True)]
    + [("pass", 0, True)] * 6,
)
def test_one_group_of_many_instances_changing_one_pod_at_a_time_shows_what_a_view_without_memos_shows(
    verification, ops
):
    """One ServingGroup of 9 instances (the seed example's shape, smaller): every pass changes one
    pod, one in-flight count or one routed flag, or runs the controller (which replaces pods a few
    at a time during a rollout); the view built through the memos of the earlier views (each
    instance's entry kept by its pods) equals the view built from scratch, pass by pass."""
    roles = [role("a", replicas=6), role("b", replicas=3, workers=1)]
    cluster, clock = deploy(manifest(replicas=1, roles=roles, strategy=coordinated("50%")))
    if verification:  # after the deploy: nothing verifies the test cluster's pods
        patch_spec(cluster, {"verification": {"path": "/v1/models"}})
    in_flight: dict[str, int] = {}
    routed: dict[str, float | None] | None = {name: None for name in cluster.pods}
    for n, (op, index, arg) in enumerate(ops):
        pod = _nth_pod(cluster, index)
        name = pod["metadata"]["name"] if pod is not None else "none"
        if op == "in-flight":
            in_flight[name] = arg
        elif op == "route" and routed is not None:
            routed.pop(name, None) if arg == "absent" else routed.__setitem__(name, arg)
        elif op == "router-table":
            routed = {p: None for p in cluster.pods} if arg else None
        elif op == "pass":
            step(cluster, clock, settle=arg)
        elif op == "change-image":
            change_image(cluster, arg)
        else:
            _change_one_pod(cluster, clock, op, index, arg)
        memoised, fresh = _views_with_and_without_memos(cluster, clock, in_flight, routed)
        assert memoised == fresh, f"pass {n} ({op})"


def test_one_pod_changed_in_a_group_of_many_instances_rebuilds_that_instances_entry_only():
    cluster, clock = converged(roles=[role("a", replicas=6), role("b", replicas=3)], replicas=1)
    first = view(cluster, clock)
    pod = cluster.pods[f"{NAME}-0-a-4-0"]
    _set_ready(pod, False, clock.t)
    second = view(cluster, clock)
    changed = [(a, b) for a, b in zip(first["instances"], second["instances"], strict=True) if a is not b]
    assert [(b["role"], b["ordinal"], b["state"]) for _, b in changed] == [("a", 4, "Creating")]
    delta = make_delta(first, second)["lists"]["instances"]
    assert len(delta["upsert"]) + len(delta["patch"]) == 1 and not delta["remove"]
