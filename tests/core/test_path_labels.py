"""The pod label contract of request paths (``planner.labels``): every pod carries
``revision.serving.rolloutui.io/<hash>: "true"`` for every revision its role template is equal in,
kept up to date by label patches (no restart), and only when the ModelServing declares a path."""

from __future__ import annotations

from controller.core import naming
from controller.core.plan import PATCH_LABELS
from controller.core.planner.labels import label_patch
from controller.core.revisions import HASH_LENGTH
from tests.factories import coordinated, prefill_decode

from .harness import manifest, run_until_converged, step
from .support import change_image, deploy, status

PATH = {"path": ["prefill", "decode"]}


def with_path(**kw) -> dict:
    return manifest(replicas=2, roles=prefill_decode(), strategy=coordinated(), traffic=PATH, **kw)


def compat(pod: dict) -> set[str]:
    return naming.compat_revisions(pod["metadata"]["labels"])


def pods_of(cluster, role: str) -> list[dict]:
    return [p for p in cluster.pods.values() if p["metadata"]["labels"][naming.LABEL_ROLE] == role]


def test_a_new_pod_carries_the_label_of_the_revision_it_was_created_from():
    cluster, _ = deploy(with_path())
    rev = status(cluster)["updateRevision"]
    assert cluster.pods
    for pod in cluster.pods.values():
        assert pod["metadata"]["labels"][naming.LABEL_REVISION] == rev
        assert compat(pod) == {rev}
        assert pod["metadata"]["labels"][naming.revision_compat_label(rev)] == "true"


def test_a_new_revision_adds_its_label_to_the_unchanged_roles_pods_by_a_patch_without_restart():
    cluster, clock = deploy(with_path())
    old = status(cluster)["updateRevision"]
    prefill_uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(cluster, "prefill")}
    change_image(cluster, "engine:v2", roles=["decode"])
    first = step(cluster, clock)
    new = status(cluster)["updateRevision"]
    assert new != old
    patched = [a for a in first.actions if a.verb == PATCH_LABELS]
    assert {a.role for a in patched} == {"prefill"}
    assert all(
        p["metadata"]["labels"][naming.revision_compat_label(new)] == "true" for p in pods_of(cluster, "prefill")
    )
    run_until_converged(cluster, clock)
    # The same prefill pods (no restart), now compatible with both revisions; decode only with the new.
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods_of(cluster, "prefill")} == prefill_uids
    assert all(compat(p) == {old, new} for p in pods_of(cluster, "prefill"))
    assert all(compat(p) == {new} for p in pods_of(cluster, "decode"))


def test_a_revision_gone_from_the_history_loses_its_label():
    cluster, clock = deploy(with_path(revisionHistoryLimit=0))
    first = status(cluster)["updateRevision"]
    change_image(cluster, "engine:v2", roles=["decode"])
    run_until_converged(cluster, clock)
    second = status(cluster)["updateRevision"]
    assert all(compat(p) == {first, second} for p in pods_of(cluster, "prefill"))
    change_image(cluster, "engine:v3", roles=["decode"])
    run_until_converged(cluster, clock)
    third = status(cluster)["updateRevision"]
    step(cluster, clock)
    # The second revision is referenced by no pod any more: collected, and its label with it. The
    # prefill pods still run the first (their creation revision), which therefore stays.
    stored = {r["metadata"]["labels"][naming.LABEL_REVISION] for r in cluster.revisions.values()}
    assert second not in stored and first in stored
    assert all(compat(p) == {first, third} for p in pods_of(cluster, "prefill"))
    assert all(compat(p) == {third} for p in pods_of(cluster, "decode"))


def test_without_a_path_no_pod_gets_a_compatibility_label_and_no_label_patch_is_planned():
    cluster, clock = deploy(manifest(replicas=2, roles=prefill_decode(), strategy=coordinated()))
    change_image(cluster, "engine:v2", roles=["decode"])
    result = step(cluster, clock)
    assert all(a.verb != PATCH_LABELS for a in result.actions)
    run_until_converged(cluster, clock)
    assert all(not compat(p) for p in cluster.pods.values())


def test_a_label_patch_adds_the_missing_revisions_and_removes_the_gone_ones():
    add = label_patch({"a1"}, ["a1", "b2"])
    assert add == {"metadata": {"labels": {naming.revision_compat_label("b2"): "true"}}}
    remove = label_patch({"a1", "b2"}, ["b2"])
    assert remove == {"metadata": {"labels": {naming.revision_compat_label("a1"): None}}}
    assert label_patch({"b2"}, ["b2"]) is None


def test_the_label_key_fits_kubernetes_limits_prefix_at_most_253_and_name_at_most_63():
    prefix, _, name = naming.revision_compat_label("0" * HASH_LENGTH).partition("/")
    assert len(prefix) <= 253 and len(name) <= 63
    assert name == "0" * HASH_LENGTH
