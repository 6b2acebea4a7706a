"""DatabaseCluster keeps the API server's semantics over database rows."""

from __future__ import annotations

import pytest

from controller.core.ports import ClusterPort, Conflict, NotFound, SharedObjects
from controller.models import SimObject
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.objects import Invalid

from .helpers import ManualClock, config, manifest, pod

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster():
    return DatabaseCluster(ManualClock(), actor="test", config=config())


def test_the_database_cluster_implements_the_cluster_port(cluster):
    assert isinstance(cluster, ClusterPort)


def test_creating_a_modelserving_twice_is_a_conflict(cluster):
    created = cluster.create_modelserving(manifest())
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]
    with pytest.raises(Conflict):
        cluster.create_modelserving(manifest())


def test_a_write_with_a_stale_resource_version_is_a_conflict(cluster):
    created = cluster.create_modelserving(manifest())
    rv = created["metadata"]["resourceVersion"]
    cluster.patch_modelserving("default", "small", {"spec": {"replicas": 3}}, resource_version=rv)
    with pytest.raises(Conflict):
        cluster.patch_modelserving("default", "small", {"spec": {"replicas": 4}}, resource_version=rv)
    with pytest.raises(Conflict):
        cluster.replace_modelserving_status("default", "small", {"phase": "Healthy"}, resource_version=rv)
    assert cluster.get_modelserving("default", "small")["spec"]["replicas"] == 3


def test_a_compare_and_set_that_loses_a_race_raises_conflict(cluster):
    created = cluster.create_modelserving(manifest())
    rv = created["metadata"]["resourceVersion"]
    # Another process writes the row between our read and our write: the UPDATE matches no row.
    SimObject.objects.filter(kind="ModelServing", name="small").update(resource_version=int(rv) + 7)
    with pytest.raises(Conflict):
        cluster.replace_modelserving_status("default", "small", {"phase": "Healthy"}, resource_version=str(int(rv)))


def test_a_write_that_changes_nothing_keeps_the_resource_version(cluster):
    created = cluster.create_modelserving(manifest())
    rv = created["metadata"]["resourceVersion"]
    same = cluster.patch_modelserving("default", "small", {"spec": {"replicas": 2}})
    assert same["metadata"]["resourceVersion"] == rv
    cluster.replace_modelserving_status("default", "small", {}, resource_version=rv)
    assert cluster.get_modelserving("default", "small")["metadata"]["resourceVersion"] == rv


def test_what_a_read_or_a_write_returns_is_the_callers_own_and_changing_it_changes_nothing_stored(cluster):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("small-0-decode-0", ms="small"))
    # A caller that edits what it read and sends the edit back (the dashboard's services do) must
    # find its change applied: the process's shared decoded copy must not have taken the edit.
    ms = cluster.get_modelserving("default", "small")
    ms["spec"]["replicas"] = 5
    written = cluster.patch_modelserving("default", "small", {"spec": {"replicas": ms["spec"]["replicas"]}})
    assert written["metadata"]["generation"] == 2
    written["spec"]["replicas"] = 9
    got = cluster.get_pod("default", "small-0-decode-0")
    got["metadata"]["labels"]["edited"] = "yes"
    patched = cluster.patch_pod("default", "small-0-decode-0", {"metadata": {"labels": {"other": "x"}}})
    patched["metadata"]["labels"]["edited-after"] = "yes"
    assert cluster.get_modelserving("default", "small")["spec"]["replicas"] == 5
    labels = cluster.get_pod("default", "small-0-decode-0")["metadata"]["labels"]
    assert labels["other"] == "x" and "edited" not in labels and "edited-after" not in labels
    listed = cluster.list_pods("default", "small")[0]["metadata"]["labels"]
    assert "edited" not in listed and "edited-after" not in listed


def test_generation_moves_only_when_the_spec_changes(cluster):
    created = cluster.create_modelserving(manifest())
    rv = created["metadata"]["resourceVersion"]
    after_status = cluster.replace_modelserving_status("default", "small", {"phase": "Healthy"}, resource_version=rv)
    assert after_status["metadata"]["generation"] == 1
    assert int(after_status["metadata"]["resourceVersion"]) > int(rv)
    after_annotation = cluster.patch_modelserving("default", "small", {"metadata": {"annotations": {"a": "b"}}})
    assert after_annotation["metadata"]["generation"] == 1
    after_spec = cluster.patch_modelserving("default", "small", {"spec": {"paused": True}})
    assert after_spec["metadata"]["generation"] == 2
    assert after_spec["status"] == {"phase": "Healthy"}  # the main resource never writes status


def test_the_generation_read_alone_follows_every_write_and_says_when_the_modelserving_is_gone(cluster):
    created = cluster.create_modelserving(manifest())
    assert cluster.generation_of("default", "small") == 1
    cluster.replace_modelserving_status(
        "default", "small", {"phase": "Healthy"}, resource_version=created["metadata"]["resourceVersion"]
    )
    cluster.patch_modelserving("default", "small", {"metadata": {"annotations": {"a": "b"}}})
    assert cluster.generation_of("default", "small") == 1
    cluster.patch_modelserving("default", "small", {"spec": {"paused": True}})
    assert (
        cluster.generation_of("default", "small")
        == 2
        == cluster.get_modelserving("default", "small")["metadata"]["generation"]
    )
    cluster.delete_modelserving("default", "small")
    with pytest.raises(NotFound):
        cluster.generation_of("default", "small")


def test_the_passs_read_is_shared_its_status_kept_as_given_and_get_still_hands_out_a_copy(cluster):
    created = cluster.create_modelserving(manifest())
    status = {"phase": "Healthy", "groups": [{"index": 0}]}
    written = cluster.replace_modelserving_status(
        "default", "small", status, resource_version=created["metadata"]["resourceVersion"]
    )
    read = cluster.read_modelserving("default", "small")
    # The status handed over is what the store keeps and what it returns: no copy either way.
    assert read["status"] is status and written["status"] is status
    assert cluster.read_modelserving("default", "small") is read  # shared, like the pod lists
    assert written["metadata"] is not read["metadata"] and list(written) == list(read)
    mine = cluster.get_modelserving("default", "small")
    mine["spec"]["replicas"] = 7
    mine["status"]["phase"] = "Edited"
    assert read["spec"]["replicas"] == 2 and status["phase"] == "Healthy"


def test_deleting_a_bound_pod_starts_termination_and_keeps_its_name(cluster):
    cluster.add_node(8)
    cluster.create_pod(pod("p-0"))
    cluster.update_pod("default", "p-0", lambda p: {**p, "spec": {**p["spec"], "nodeName": "node-0"}})
    cluster.delete_pod("default", "p-0")
    terminating = cluster.get_pod("default", "p-0")
    assert terminating["metadata"]["deletionTimestamp"]
    with pytest.raises(Conflict):
        cluster.create_pod(pod("p-0"))
    rv = terminating["metadata"]["resourceVersion"]
    cluster.delete_pod("default", "p-0")  # deleting again changes nothing
    assert cluster.get_pod("default", "p-0")["metadata"]["resourceVersion"] == rv


def test_deleting_an_unbound_pod_removes_it_at_once(cluster):
    cluster.create_pod(pod("p-1"))
    cluster.delete_pod("default", "p-1")
    with pytest.raises(NotFound):
        cluster.get_pod("default", "p-1")
    cluster.create_pod(pod("p-1"))  # the name is free again


def test_deleting_with_a_stale_uid_is_a_conflict(cluster):
    cluster.create_pod(pod("p-2"))
    with pytest.raises(Conflict):
        cluster.delete_pod("default", "p-2", uid="not-its-uid")


def test_only_container_images_of_a_pod_may_change(cluster):
    cluster.create_pod(pod("p-3"))
    with pytest.raises(Invalid):
        cluster.patch_pod("default", "p-3", {"spec": {"schedulerName": "other"}})
    patched = cluster.patch_pod("default", "p-3", {"metadata": {"annotations": {"x": "1"}}})
    assert patched["metadata"]["annotations"]["x"] == "1"


def test_pods_and_revisions_are_listed_per_modelserving(cluster):
    cluster.create_pod(pod("a-0", ms="a"))
    cluster.create_pod(pod("b-0", ms="b"))
    assert [p["metadata"]["name"] for p in cluster.list_pods("default", "a")] == ["a-0"]
    rev = {
        "metadata": {"name": "a-abc", "namespace": "default", "labels": {"serving.rolloutui.io/name": "a"}},
        "data": {"roles": []},
        "revision": 2,
    }
    cluster.create_revision(rev)
    with pytest.raises(Conflict):
        cluster.create_revision(rev)
    cluster.set_revision_number("default", "a-abc", 3)
    assert [r["revision"] for r in cluster.list_revisions("default", "a")] == [3]
    cluster.delete_revision("default", "a-abc")
    assert cluster.list_revisions("default", "a") == []


def test_pods_are_listed_as_shared_objects_an_unchanged_pod_the_same_a_changed_one_new(cluster):
    """``ports.SharedObjects``: observation takes a pod object met again as the same version."""
    cluster.create_pod(pod("a-0", ms="a"))
    cluster.create_pod(pod("a-1", ms="a"))
    first = cluster.list_pods("default", "a")
    assert isinstance(first, SharedObjects)
    cluster.patch_pod("default", "a-1", {"metadata": {"annotations": {"x": "1"}}})
    second = cluster.list_pods("default", "a")
    assert second[0] is first[0]
    assert second[1] is not first[1]
    assert second[1]["metadata"]["annotations"]["x"] == "1" and "x" not in first[1]["metadata"]["annotations"]


def test_a_listed_pod_reads_back_as_the_pod_stored(cluster):
    """Pods are listed from their JSON text, decoded with orjson: the same objects as the store's
    own reads (the JSONField's), non-ASCII text included."""
    cluster.create_pod(pod("a-0", ms="a", image="engine:é-v1"))
    (listed,) = cluster.list_pods("default", "a")
    assert listed == cluster.get_pod("default", "a-0")
    assert listed["spec"]["containers"][0]["image"] == "engine:é-v1"


def test_a_readiness_gate_condition_makes_a_ready_pod_ready(cluster):
    from .helpers import is_ready

    cluster.add_node(8)
    cluster.create_pod(pod("g-0", gates=("InPlaceUpdateReady",)))
    from controller.simcluster.database.tick import tick

    for t in range(0, 60, 1):
        tick(cluster, now=cluster.clock.now() + t)
    assert not is_ready(cluster.get_pod("default", "g-0"))
    cluster.set_pod_condition("default", "g-0", {"type": "InPlaceUpdateReady", "status": "True"})
    assert is_ready(cluster.get_pod("default", "g-0"))


def test_deleting_a_modelserving_collects_its_pods_revisions_and_traffic(cluster):
    from controller.models import SimTraffic

    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("small-0", ms="small"))
    cluster.create_revision(
        {
            "metadata": {"name": "small-abc", "namespace": "default", "labels": {"serving.rolloutui.io/name": "small"}},
            "data": {"roles": []},
            "revision": 1,
        }
    )
    SimTraffic.objects.create(namespace="default", name="small", rps=1)
    cluster.delete_modelserving("default", "small")
    assert cluster.list_pods("default", "small") == [] and cluster.list_revisions("default", "small") == []
    assert not SimTraffic.objects.exists()
    with pytest.raises(NotFound):
        cluster.get_modelserving("default", "small")
