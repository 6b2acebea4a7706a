"""Observation of a list whose objects the port shares (``ports.SharedObjects``): a pod object met
again is taken as the same version without reading it; everything else is read as from a plain
list, so the two give the same observation whatever changed between two lists."""

from __future__ import annotations

import copy
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.observe import Observed, observe
from controller.core.observe import _observe_pods as one_by_one_with
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
    """What the planner reads of an observation, as plain data."""
    return {
        "groups": {
            ordinal: {
                key: (
                    sorted((i, p.name, p.resource_version, p.ready, p.deleting) for i, p in inst.pods.items()),
                    inst.all_ready,
                    inst.deleting,
                )
                for key, inst in group.instances.items()
            }
            for ordinal, group in observed.groups.items()
        },
        "order": list(observed.groups),  # the planner walks some of them in this order
        "leaving": [p.name for p in observed.leaving_routing],
        "foreign": observed.foreign,
    }


def one_by_one(pods: list[dict]) -> Observed:
    return one_by_one_with(list(pods), None)


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
def test_a_shared_list_is_observed_as_the_same_plain_list_through_any_changes(passes):
    """Shared objects (taken by identity), a plain list (by version) and the pods one by one (no
    previous list remembered: the reference) give the same observation after any changes, each
    observed after the previous lists as a controller's passes are."""

    def each_way(pods):
        return [summary(observe(SharedObjects(pods))), summary(observe(list(pods))), summary(one_by_one(pods))]

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
    pods = converged_pods()
    observe(SharedObjects(pods))
    changed_in_place = pods[0]
    changed_in_place["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    changed_in_place["metadata"]["resourceVersion"] = str(next(_versions))
    group = int(changed_in_place["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL])
    assert not observe(SharedObjects(pods)).groups[group].deleting
    assert observe(list(pods)).groups[group].deleting


def test_a_pod_created_at_the_head_of_the_list_shifts_every_pod_and_is_still_observed():
    pods = converged_pods()
    observe(SharedObjects(pods))
    newcomer = recreated(pods[0])
    newcomer["metadata"]["name"] = "a-" + newcomer["metadata"]["name"]  # sorts first
    shifted = [newcomer, *pods[:-1]]  # same length: every pod moved one place
    assert summary(observe(SharedObjects(shifted))) == summary(observe(list(shifted)))


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
