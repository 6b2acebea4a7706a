"""With a cache (``passcache``), the state view memoises each group's entries (its instances, and
its row of the group table) by the observed group, which is reused while its pods are the same
parses, under a key of everything else they read: the pass's shape (spec sizes, update revision,
verification, namespace), the pods expected per instance, the in-flight counts of the group's pods,
and for the row the group's status record. Whatever changes besides the pods must show in the view;
what does not change is handed back as the very same objects, which the publisher's delta then skips
by identity."""

from __future__ import annotations

import copy

import pytest

from controller.core import naming
from controller.core.observe import observe
from controller.core.view import build_view
from controller.runtime.delta import make_delta
from tests.factories import prefill_decode, role_strategy

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
