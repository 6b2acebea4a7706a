"""The embedded (database-backed) cluster applies the revision labels of request paths: pods are
created with them and an unchanged role's pods get a new revision's label by a patch, in place."""

from __future__ import annotations

import copy

import pytest

from controller.core import naming
from controller.core.plan import PATCH_LABELS
from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from tests.factories import coordinated, modelserving, role

from .helpers import ManualClock, config

pytestmark = [pytest.mark.django_db]


def converge(cluster, clock, *, passes: int = 200) -> list:
    actions = []
    for _ in range(passes):
        result = reconcile(cluster, NoRouter(), clock, "default", "pd", build_state_view=False)
        actions += result.actions
        status = cluster.get_modelserving("default", "pd").get("status") or {}
        if (
            status.get("converged")
            and status.get("currentRevision") == status.get("updateRevision")
            and not result.actions
        ):
            return actions
        clock.t += 1
        tick(cluster)
    raise AssertionError(f"no convergence; status {cluster.get_modelserving('default', 'pd').get('status')}")


def test_the_embedded_cluster_labels_pods_per_compatible_revision_and_patches_them_in_place():
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="controller", config=config())
    cluster.add_node(8)
    m = modelserving(
        name="pd",
        replicas=1,
        strategy=coordinated(),
        roles=[role("prefill", replicas=1), role("decode", replicas=2)],
        traffic={"path": ["prefill", "decode"]},
        drain={"timeoutSeconds": 5},
    )
    cluster.create_modelserving(m)
    converge(cluster, clock)
    old = cluster.get_modelserving("default", "pd")["status"]["updateRevision"]
    prefill = {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in cluster.list_pods("default", "pd")
        if p["metadata"]["labels"][naming.LABEL_ROLE] == "prefill"
    }
    roles = copy.deepcopy(m["spec"]["template"]["roles"])
    roles[1]["entryTemplate"]["spec"]["containers"][0]["image"] = "engine:v2"
    cluster.patch_modelserving("default", "pd", {"spec": {"template": {"roles": roles}}})
    actions = converge(cluster, clock)

    new = cluster.get_modelserving("default", "pd")["status"]["updateRevision"]
    assert {a.role for a in actions if a.verb == PATCH_LABELS} == {"prefill"}
    for pod in cluster.list_pods("default", "pd"):
        labels = pod["metadata"]["labels"]
        wanted = {old, new} if labels[naming.LABEL_ROLE] == "prefill" else {new}
        assert naming.compat_revisions(labels) == wanted, pod["metadata"]["name"]
    assert {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in cluster.list_pods("default", "pd")
        if p["metadata"]["labels"][naming.LABEL_ROLE] == "prefill"
    } == prefill
