"""A pass cache changes no result (``core.passcache``): two copies of one cluster, driven through the
same random passes, one reconciled with a cache carried from pass to pass and the other with none
(the reference: everything computed, nothing remembered), take the same actions, write the same
status and show the same state view on every pass.

Between passes the pods change as a rollout changes them: created by the passes, becoming Ready
when the kubelet settles, deleted or turning unready behind the controller's back, and a new
revision when the template changes mid-way. What the memos read besides the pods changes too: the
ModelServing or one role scaled, a stored revision made unreadable.
"""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.passcache import PassCache
from controller.core.planner.context import build_context
from controller.core.ports import Conflict, NotFound
from controller.core.reconcile import _running, reconcile
from controller.core.revisions import History
from controller.core.spec import parse_modelserving

from .harness import CountingRouter, FixedClock, MiniCluster, manifest, role
from .support import NAME, NS, change_image, patch_spec
from .test_planner_properties import modelservings

# The settings of every property below: random ModelServings through random passes (slow to draw).
RANDOM_PASSES = settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PASSES = st.lists(
    st.one_of(
        st.tuples(st.just("pass"), st.booleans()),  # the pods become Ready afterwards, or not
        st.tuples(st.just("delete-pod"), st.integers(0, 10_000)),
        st.tuples(st.just("unready-pod"), st.integers(0, 10_000)),
        st.tuples(st.just("change-image"), st.sampled_from(["engine:v2", "engine:v3", "engine:v1"])),
        st.tuples(st.just("scale"), st.integers(1, 5)),
        st.tuples(st.just("scale-role"), st.integers(1, 3)),
        st.tuples(st.just("corrupt"), st.integers(0, 10_000)),
    ),
    min_size=1,
    max_size=24,
)


def _one_pass(cluster: MiniCluster, clock: FixedClock, cache: PassCache | None) -> dict:
    """One reconcile pass, what it decided and showed, as plain data."""
    result = reconcile(cluster, CountingRouter(), clock, NS, NAME, cache=cache)
    return {
        "actions": [a.to_trace() for a in result.actions],
        "blocked": result.blocked,
        "status": result.status,
        "view": result.view,
        "error": result.error,
    }


def _change_pods(cluster: MiniCluster, op: str, arg: int) -> None:
    """A pod deleted, or turned unready, behind the controller's back (the test cluster lists a
    changed pod under a new resourceVersion, as an API server does)."""
    names = sorted(cluster.pods)
    if not names:
        return
    name = names[arg % len(names)]
    if op == "delete-pod":
        del cluster.pods[name]
        return
    pod = copy.deepcopy(cluster.pods[name])
    pod["status"]["conditions"] = [c for c in pod["status"].get("conditions", []) if c["type"] != "Ready"] + [
        {"type": "Ready", "status": "False"}
    ]
    cluster.pods[name] = pod


SETTLED = manifest(replicas=2, roles=[role("prefill", replicas=1, workers=1), role("decode")])


def _change_spec(cluster: MiniCluster, op: str, arg) -> None:
    """The template changed (a new revision), the ModelServing or its first role scaled, or a stored
    revision made unreadable."""
    if op == "change-image":
        change_image(cluster, arg)
    elif op == "scale":
        patch_spec(cluster, {"replicas": arg})
    elif op == "scale-role":
        roles = copy.deepcopy(cluster.ms[(NS, NAME)]["spec"]["template"]["roles"])
        roles[0]["replicas"] = arg
        patch_spec(cluster, {"template": {"roles": roles}})
    elif cluster.revisions:
        names = sorted(cluster.revisions)
        cluster.revisions[names[arg % len(names)]]["data"] = "<corrupted>"


@RANDOM_PASSES
@given(m=modelservings(), passes=PASSES)
# Settled, then what a group's memos read besides its pods changes while its pods do not.
@example(m=SETTLED, passes=[("pass", True)] * 3 + [("scale-role", 3), ("pass", True), ("pass", True)])
@example(m=SETTLED, passes=[("pass", True)] * 3 + [("scale", 1), ("pass", False), ("scale", 3), ("pass", True)])
@example(
    m=SETTLED,
    passes=[("pass", True)] * 3 + [("change-image", "engine:v2"), ("pass", False), ("corrupt", 0), ("pass", True)],
)
def test_random_passes_with_a_cache_carried_across_them_decide_and_show_what_passes_without_one_do(m, passes):
    cached_cluster, cached_clock, cache = MiniCluster(), FixedClock(), PassCache()
    plain_cluster, plain_clock = MiniCluster(), FixedClock()
    cached_cluster.create_modelserving(m)
    plain_cluster.create_modelserving(m)  # the same objects: the test cluster numbers uids in order
    for n, (op, arg) in enumerate([("pass", True), *passes]):
        if op == "pass":
            with_cache = _one_pass(cached_cluster, cached_clock, cache)
            without = _one_pass(plain_cluster, plain_clock, None)
            assert with_cache == without, f"pass {n} ({op})"
            for cluster, clock in ((cached_cluster, cached_clock), (plain_cluster, plain_clock)):
                if arg:
                    cluster.settle()
                clock.t += 1
        elif op in ("change-image", "scale", "scale-role", "corrupt"):
            _change_spec(cached_cluster, op, arg)
            _change_spec(plain_cluster, op, arg)
        else:
            _change_pods(cached_cluster, op, arg)
            _change_pods(plain_cluster, op, arg)
    assert cached_cluster.pods.keys() == plain_cluster.pods.keys()


class SharingCluster(MiniCluster):
    """The test cluster as the in-memory and embedded stores behave (``ports.SharedObjects``): the
    ModelServing and the revisions are handed out as the stored objects themselves, and every write
    stores new dicts (the spec object kept across a status write), so the memos kept by identity
    (the spec's parse, the revisions' parses and hashes, the resolved strategy) hit."""

    def read_modelserving(self, namespace, name):
        try:
            return self.ms[(namespace, name)]
        except KeyError:
            raise NotFound(name) from None

    def replace_modelserving_status(self, namespace, name, status, *, resource_version):
        obj = self.ms[(namespace, name)]
        if obj["metadata"]["resourceVersion"] != resource_version:
            raise Conflict(name)
        meta = {**obj["metadata"], "resourceVersion": str(next(self.rv))}
        self.ms[(namespace, name)] = new = {**obj, "status": copy.deepcopy(status), "metadata": meta}
        return new

    def list_revisions(self, namespace, ms_name):
        return [r for r in self.revisions.values() if r["metadata"]["labels"].get(naming.LABEL_NAME) == ms_name]

    def set_revision_number(self, namespace, name, number):
        self.revisions[name] = {**self.revisions[name], "revision": number}
        return self.revisions[name]

    def annotate_revision(self, namespace, name, annotations):
        if name not in self.revisions:
            raise NotFound(name)
        old = self.revisions[name]
        meta = old["metadata"]
        new_meta = {**meta, "annotations": {**(meta.get("annotations") or {}), **annotations}}
        self.revisions[name] = {**old, "metadata": new_meta}
        return self.revisions[name]


def _change_shared(cluster: MiniCluster, op: str, arg) -> None:
    """``_change_spec`` and ``_change_pods``, a stored revision replaced by a new object rather than
    changed in place; and an abort annotation written or removed (the metadata changes, the spec
    object does not)."""
    if op == "corrupt":
        if cluster.revisions:
            names = sorted(cluster.revisions)
            name = names[arg % len(names)]
            cluster.revisions[name] = {**cluster.revisions[name], "data": "<corrupted>"}
    elif op == "abort-note":
        stable = sorted(r["metadata"]["labels"][naming.LABEL_REVISION] for r in cluster.revisions.values())
        note = json.dumps({"revision": "x", "stable": stable[arg % len(stable)]}) if stable and arg % 3 else None
        cluster.patch_modelserving(NS, NAME, {"metadata": {"annotations": {naming.ANNOTATION_ABORT: note}}})
    elif op in ("change-image", "scale", "scale-role"):
        _change_spec(cluster, op, arg)
    else:
        _change_pods(cluster, op, arg)


@RANDOM_PASSES
@given(m=modelservings(), passes=PASSES, notes=st.lists(st.integers(0, 10_000), max_size=4))
@example(
    m=SETTLED,
    passes=[("pass", True)] * 3 + [("change-image", "engine:v2"), ("pass", False), ("corrupt", 0), ("pass", True)],
    notes=[1, 0],
)
def test_passes_over_a_store_that_shares_its_objects_decide_and_show_with_a_cache_what_they_do_without_one(
    m, passes, notes
):
    shared_cluster, shared_clock, cache, parse_cache = SharingCluster(), FixedClock(), PassCache(), {}
    plain_cluster, plain_clock = MiniCluster(), FixedClock()
    shared_cluster.create_modelserving(m)
    plain_cluster.create_modelserving(m)
    ops = [("pass", True), *passes]
    for i, note in enumerate(notes):  # abort annotations written between passes, spread over the run
        ops.insert(min(len(ops), 2 + 3 * i), ("abort-note", note))
    for n, (op, arg) in enumerate(ops):
        if op == "pass":
            shared = reconcile(
                shared_cluster, CountingRouter(), shared_clock, NS, NAME, cache=cache, parse_cache=parse_cache
            )
            plain = reconcile(plain_cluster, CountingRouter(), plain_clock, NS, NAME)
            assert _outcome(shared) == _outcome(plain), f"pass {n} ({op})"
            for cluster, clock in ((shared_cluster, shared_clock), (plain_cluster, plain_clock)):
                if arg:
                    cluster.settle()
                clock.t += 1
        else:
            _change_shared(shared_cluster, op, arg)
            _change_shared(plain_cluster, op, arg)
    assert shared_cluster.pods.keys() == plain_cluster.pods.keys()


def _outcome(result) -> dict:
    return {
        "actions": [a.to_trace() for a in result.actions],
        "blocked": result.blocked,
        "status": result.status,
        "view": result.view,
        "error": result.error,
    }


@RANDOM_PASSES
@given(m=modelservings(), passes=PASSES)
# Group 1 scaled away (its pods gone two passes later), then back.
@example(
    m=SETTLED, passes=[("pass", True)] * 3 + [("scale", 1)] + [("pass", True)] * 3 + [("scale", 3), ("pass", True)]
)
def test_availability_taken_from_the_last_pass_equals_availability_read_from_every_group(m, passes):
    """``context._availability_since``: the tables built from the last pass's, with only the
    changed groups read again and the gone ones dropped, equal those read from every group; and so
    do what the groups' pods run, taken per instance (``reconcile._running``)."""
    cluster, clock, cache, tables_cache = MiniCluster(), FixedClock(), PassCache(), PassCache()
    cluster.create_modelserving(m)
    for op, arg in [("pass", True), *passes]:
        if op != "pass":
            _change_shared(cluster, op, arg)
            continue
        result = reconcile(cluster, CountingRouter(), clock, NS, NAME, cache=cache)
        if result.observed is not None and result.error is None:
            obj = cluster.read_modelserving(NS, NAME)
            ms = parse_modelserving(obj)
            history = History.from_objects(cluster.list_revisions(NS, NAME))
            status = obj.get("status") or {}
            kept = build_context(ms, history, result.observed, clock.t, status, None, tables_cache)
            read = build_context(ms, history, result.observed, clock.t, status, None, None)
            assert kept.instance_available == read.instance_available
            assert kept.group_available == read.group_available
            assert kept.memos.keys() == result.observed.groups.keys()
            for group in result.observed.groups.values():  # the digests' input, per instance kept
                assert _running(group, tables_cache) == group.running()
        if arg:
            cluster.settle()
        clock.t += 1
