"""The three observe paths agree (``observe.paths``): the plain one (every pod parsed, no cache:
the reference), by version (a plain list through a cache: parses kept by uid and resourceVersion,
groups regrouped incrementally) and by identity (a list whose objects the port shares,
``ports.SharedObjects``: a pod object met again is taken as the same version without reading it).
Whatever changed between two lists, the three give the same observation."""

from __future__ import annotations

import copy
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.observe import Observed, observe, observe_plain
from controller.core.passcache import PassCache
from controller.core.ports import SharedObjects
from controller.simcluster.memory.clock import VirtualClock
from controller.simcluster.memory.store import InMemoryStore

from .harness import manifest, role
from .support import deploy

_versions = itertools.count(10_000)
_uids = itertools.count()


def converged_pods() -> list[dict]:
    cluster, _ = deploy(
        manifest(replicas=3, roles=[role("prefill", replicas=1, workers=1), role("decode", replicas=2)])
    )
    return sorted(cluster.list_pods("default", "ms"), key=lambda p: p["metadata"]["name"])


def summary(observed: Observed) -> dict:
    """Everything an observation holds, as plain data: each group's and instance's fields, and of
    each pod its identity and version (a pod is read from that version alone)."""
    return {
        "groups": {
            ordinal: (
                {
                    key: (
                        sorted(
                            (i, p.name, p.uid, p.resource_version, p.ready, p.deleting) for i, p in inst.pods.items()
                        ),
                        list(inst.pods),  # the order the pods came in
                        inst.astuple()[4:],  # every aggregate after the pods
                    )
                    for key, inst in group.instances.items()
                },
                list(group.instances),
                dict(group.revision_counts),
                list(group.revision_counts),
                group.astuple()[3:],
            )
            for ordinal, group in observed.groups.items()
        },
        "order": list(observed.groups),  # the planner walks some of them in this order
        "leaving": [p.name for p in observed.leaving_routing],
        "foreign": observed.foreign,
    }


def new_version(pod: dict, **changes) -> dict:
    """The pod as a port that copies on write hands it out after a change: a new object."""
    new = copy.deepcopy(pod)
    new["metadata"]["resourceVersion"] = str(next(_versions))
    if "ready" in changes:
        new["status"]["conditions"] = [
            c if c["type"] != "Ready" else {**c, "status": "True" if changes["ready"] else "False"}
            for c in new["status"]["conditions"]
        ]
    if changes.get("deleting"):
        new["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    if changes.get("draining"):
        new["metadata"].setdefault("annotations", {})[naming.ANNOTATION_DRAINING] = "1"
    return new


def recreated(pod: dict) -> dict:
    """The same name, another pod (a new uid): a replacement."""
    new = new_version(pod, ready=False)
    new["metadata"]["uid"] = f"recreated-{next(_uids)}"
    return new


CHANGES = st.sampled_from(["ready", "unready", "deleting", "draining", "recreate", "remove", "restore"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(CHANGES, st.integers(0, 1_000)), max_size=4), min_size=1, max_size=8))
def test_the_three_observe_paths_give_the_same_observation_through_any_changes(passes):
    """Shared objects (taken by identity), a plain list (by version) and the plain path (nothing
    remembered: the reference) give the same observation after any changes, the first two each
    with its own cache carried from list to list as a controller's passes are."""
    by_identity, by_version = PassCache(), PassCache()

    def each_way(pods):
        return [
            summary(observe(SharedObjects(pods), cache=by_identity)),
            summary(observe(list(pods), cache=by_version)),
            summary(observe_plain(list(pods))),
        ]

    pods = converged_pods()
    removed: list[dict] = []
    first, *others = each_way(pods)
    assert all(other == first for other in others)
    for changes in passes:
        for change, at in changes:
            if change == "restore":
                if removed:
                    pods.append(removed.pop())
                    pods.sort(key=lambda p: p["metadata"]["name"])
                continue
            if not pods:
                continue
            i = at % len(pods)
            if change == "remove":
                removed.append(pods.pop(i))
            elif change == "recreate":
                pods[i] = recreated(pods[i])
            else:
                flag = {"ready": {"ready": True}, "unready": {"ready": False}}.get(change, {change: True})
                pods[i] = new_version(pods[i], **flag)
        first, *others = each_way(pods)
        assert all(other == first for other in others)


def test_a_pod_object_met_again_in_a_shared_list_is_not_read_again():
    """The contract that makes it correct: a port that shares objects never changes one. A pod
    changed in place (which such a port never does) shows the mechanism: the shared list is not
    read again, a plain list is."""
    pods, cache = converged_pods(), PassCache()
    observe(SharedObjects(pods), cache=cache)
    changed_in_place = pods[0]
    changed_in_place["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    changed_in_place["metadata"]["resourceVersion"] = str(next(_versions))
    group = int(changed_in_place["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL])
    assert not observe(SharedObjects(pods), cache=cache).groups[group].deleting
    assert observe(list(pods), cache=cache).groups[group].deleting


def test_a_pod_created_at_the_head_of_the_list_shifts_every_pod_and_is_still_observed():
    pods, cache = converged_pods(), PassCache()
    observe(SharedObjects(pods), cache=cache)
    newcomer = recreated(pods[0])
    newcomer["metadata"]["name"] = "a-" + newcomer["metadata"]["name"]  # sorts first
    shifted = [newcomer, *pods[:-1]]  # same length: every pod moved one place
    assert summary(observe(SharedObjects(shifted), cache=cache)) == summary(observe_plain(shifted))


def test_without_a_cache_nothing_of_one_observation_is_reused_by_the_next():
    """The reference path remembers nothing: the same pods observed twice are parsed twice."""
    pods = converged_pods()
    first, second = observe(pods), observe(pods)
    assert first.groups[0] is not second.groups[0]
    assert summary(first) == summary(second)


def test_with_a_cache_an_unchanged_group_is_the_group_observed_before():
    pods, cache = converged_pods(), PassCache()
    assert observe(pods, cache=cache).groups[0] is observe(list(pods), cache=cache).groups[0]


def test_the_in_memory_simulator_shares_its_pods_unless_it_copies_reads():
    pod = converged_pods()[0]
    for key in ("uid", "resourceVersion"):
        del pod["metadata"][key]
    for copy_reads, shared in ((False, True), (True, False)):
        store = InMemoryStore(VirtualClock(), copy_reads=copy_reads)
        store.create_pod(copy.deepcopy(pod))
        listed = store.list_pods("default", "ms")
        assert len(listed) == 1
        assert isinstance(listed, SharedObjects) is shared


def test_with_a_cache_a_changed_group_keeps_the_instances_whose_pods_did_not_change():
    """A group rebuilt because one pod changed takes its other instances as they were (the same
    objects: what the planner and the view keep per instance stays valid), and the changed one anew,
    equal to what the plain path builds."""
    pods, cache = converged_pods(), PassCache()
    before = observe(SharedObjects(pods), cache=cache).groups[0]
    i = next(i for i, p in enumerate(pods) if p["metadata"]["labels"][naming.LABEL_ROLE] == "decode")
    changed = pods[i]["metadata"]["labels"]
    pods[i] = new_version(pods[i], ready=False)
    after = observe(SharedObjects(pods), cache=cache)
    group = after.groups[0]
    assert group is not before
    changed_key = (changed[naming.LABEL_ROLE], int(changed[naming.LABEL_ROLE_ORDINAL]))
    for key, inst in group.instances.items():
        assert (inst is before.instances[key]) == (key != changed_key)
    assert summary(after) == summary(observe_plain(pods))


def test_after_a_pod_is_removed_the_shared_pods_that_shifted_place_are_not_read_again():
    """Pods added or removed shift every later pod's place: each object met again anywhere in the
    previous list is still taken as the version it was (shown as above, by a pod changed in place,
    which such a port never does), and the observation equals the plain path's otherwise."""
    pods, cache = converged_pods(), PassCache()
    observe(SharedObjects(pods), cache=cache)
    del pods[1]  # every later pod moves up one place (the first stays: the cache knows the list by it)
    changed_in_place = pods[-1]
    changed_in_place["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    changed_in_place["metadata"]["resourceVersion"] = str(next(_versions))
    group = int(changed_in_place["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL])
    assert not observe(SharedObjects(pods), cache=cache).groups[group].deleting
    assert observe(list(pods), cache=PassCache()).groups[group].deleting
