"""Gang scheduling through the Kubernetes adapter: with ``schedulerName: volcano`` the controller
creates one ``scheduling.volcano.sh/v1beta1`` PodGroup per ServingGroup before the group's pods,
keeps its figures in step with the spec, deletes it with the group, and the API server collects the
rest with the ModelServing (owner reference). Image digests are read from the pods' container
statuses and recorded on their ControllerRevision, where a tag that moved is flagged."""

from __future__ import annotations

import json

import kubernetes

from controller.core import digests, gang, naming
from controller.core.ports import PODGROUP, NoRouter
from controller.core.reconcile import reconcile
from controller.k8s import KubernetesCluster
from tests.factories import modelserving, role

NS = "default"


class Clock:
    def now(self) -> float:
        return 1000.0


def manifest(name: str, replicas: int = 2) -> dict:
    """A gang-scheduled ModelServing in queue gpu: one prefill instance of an entry and three
    workers per ServingGroup, one GPU each."""
    return modelserving(
        name=name,
        namespace=NS,
        annotations={gang.ANNOTATION_QUEUE: "gpu"},
        replicas=replicas,
        roles=[role("prefill", workers=3, image="vllm:1")],
        schedulerName="volcano",
    )


def podgroups(apiserver) -> dict:
    items = apiserver.call(
        lambda: [o for (r, _, _), o in apiserver.emu.store.items() if r == "scheduling.volcano.sh/v1beta1/podgroups"]
    )
    return {p["metadata"]["name"]: p for p in items}


def test_podgroups_are_created_before_the_pods_and_follow_the_group(apiserver, api_client):
    cluster = KubernetesCluster(api_client)
    ms = cluster.create_modelserving(manifest("chat"))
    assert reconcile(cluster, NoRouter(), Clock(), NS, "chat").error is None
    pgs = podgroups(apiserver)
    assert sorted(pgs) == ["chat-0", "chat-1"]
    for pg in pgs.values():
        assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1"
        assert pg["spec"] == {"minMember": 4, "minResources": {naming.GPU_RESOURCE: "4"}, "queue": "gpu"}
        assert pg["metadata"]["ownerReferences"][0]["uid"] == ms["metadata"]["uid"]
    pods = cluster.list_pods(NS, "chat")
    assert len(pods) == 8
    for pod in pods:
        group = pod["metadata"]["labels"][naming.LABEL_GROUP_NAME]
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"][gang.ANNOTATION_GROUP_NAME] == group
        assert pod["metadata"]["annotations"][gang.ANNOTATION_TASK_SPEC] == "prefill-0"
        # The PodGroup was stored first: its resourceVersion is older than every pod's.
        assert int(pgs[group]["metadata"]["resourceVersion"]) < int(pod["metadata"]["resourceVersion"])
    # The adapter reads them back through the owned-object API.
    assert sorted(p["metadata"]["name"] for p in cluster.list_owned(PODGROUP, NS, "chat")) == ["chat-0", "chat-1"]

    # Scaled to one group: chat-1's pods are deleted; once gone its PodGroup is deleted too.
    cluster.patch_modelserving(NS, "chat", {"spec": {"replicas": 1}})
    reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    core = kubernetes.client.CoreV1Api(api_client)
    for pod in cluster.list_pods(NS, "chat"):
        if pod["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == "1":
            core.delete_namespaced_pod(pod["metadata"]["name"], NS, grace_period_seconds=0, _preload_content=False)
    reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    assert sorted(podgroups(apiserver)) == ["chat-0"]

    # A PodGroup someone deleted is put back before any pod needs it.
    cluster.delete_owned(PODGROUP, NS, "chat-0")
    reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    assert sorted(podgroups(apiserver)) == ["chat-0"]

    cluster.delete_modelserving(NS, "chat")
    assert podgroups(apiserver) == {}
    assert json.loads(core.list_namespaced_pod(NS, _preload_content=False).data)["items"] == []


def test_no_podgroup_is_read_or_written_for_the_default_scheduler(apiserver, api_client):
    cluster = KubernetesCluster(api_client)
    obj = manifest("plain", replicas=1)
    del obj["spec"]["schedulerName"]
    cluster.create_modelserving(obj)
    assert reconcile(cluster, NoRouter(), Clock(), NS, "plain").error is None
    assert podgroups(apiserver) == {}
    assert all(
        gang.ANNOTATION_GROUP_NAME not in (p["metadata"].get("annotations") or {})
        for p in cluster.list_pods(NS, "plain")
    )


def report_running(core, digest_of_image: dict[str, str], only: set[str] | None = None) -> None:
    """A node agent's status for our pods: running, with the imageID the registry gave it."""
    pods = json.loads(core.list_namespaced_pod(NS, label_selector=naming.LABEL_NAME, _preload_content=False).data)
    for pod in pods["items"]:
        if only is not None and pod["metadata"]["name"] not in only:
            continue
        statuses = [
            {
                "name": c["name"],
                "image": "docker.io/library/" + c["image"],
                "imageID": f"docker.io/library/{c['image'].split(':')[0]}@{digest_of_image[c['image']]}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": "2026-11-29T00:00:00Z"}},
            }
            for c in pod["spec"]["containers"]
        ]
        core.patch_namespaced_pod_status(
            pod["metadata"]["name"],
            NS,
            {"status": {"phase": "Running", "containerStatuses": statuses}},
            _content_type="application/merge-patch+json",
            _preload_content=False,
        )


def test_digests_are_read_from_container_statuses_and_a_moved_tag_flags_its_revision(apiserver, api_client):
    cluster = KubernetesCluster(api_client)
    obj = manifest("chat", replicas=2)
    del obj["spec"]["schedulerName"]
    cluster.create_modelserving(obj)
    reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    core = kubernetes.client.CoreV1Api(api_client)
    first, moved = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    report_running(core, {"vllm:1": first})
    result = reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    assert {i["digest"] for i in result.view["instances"]} == {first}
    (rev,) = cluster.list_revisions(NS, "chat")
    assert json.loads(rev["metadata"]["annotations"][digests.ANNOTATION_DIGESTS]) == {"vllm:1": {"digest": first}}
    # The tag is pushed again; one pod is recreated and pulls the new bytes.
    group1 = {
        p["metadata"]["name"]
        for p in cluster.list_pods(NS, "chat")
        if p["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == "1"
    }
    report_running(core, {"vllm:1": moved}, only=group1)
    result = reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    assert {i["group"]: i["digest"] for i in result.view["instances"]} == {0: first, 1: moved}
    (rev,) = cluster.list_revisions(NS, "chat")
    assert json.loads(rev["metadata"]["annotations"][digests.ANNOTATION_DIGESTS]) == {
        "vllm:1": {"digest": first, "moved": moved}
    }
    # Read back by a fresh pass (a restarted controller): the flag is in the cluster.
    again = reconcile(cluster, NoRouter(), Clock(), NS, "chat")
    (shown,) = again.view["revisions"]
    assert shown["digestMoved"] is True and shown["images"] == [{"image": "vllm:1", "digest": first, "moved": moved}]
