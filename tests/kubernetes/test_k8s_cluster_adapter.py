"""KubernetesCluster against an API server double over real HTTP: the cluster port's contract."""

from __future__ import annotations

import copy

import kubernetes
import pytest

from controller.core import naming
from controller.core.ports import ClusterError, ClusterPort, Conflict, NotFound
from controller.k8s import KubernetesCluster
from tests.factories import modelserving, role

NS = "default"


def manifest(name: str = "chat", *, api_version: str = naming.API_VERSION, image: str = "engine:v1") -> dict:
    return modelserving(
        name=name, namespace=NS, api_version=api_version, replicas=1, roles=[role("decode", image=image, gpus=None)]
    )


def pod(name: str, ms: str = "chat", *, image: str = "engine:v1") -> dict:
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {naming.LABEL_NAME: ms, naming.LABEL_ROLE: "decode"},
            "annotations": {"keep": "me"},
        },
        "spec": {
            "containers": [
                {
                    "name": "engine",
                    "image": image,
                    "args": ["--port", "8000"],
                    "resources": {"limits": {naming.GPU_RESOURCE: "1"}},
                },
                {"name": "sidecar", "image": "proxy:1"},
            ],
            "readinessGates": [{"conditionType": naming.CONDITION_INPLACE_READY}],
        },
    }


@pytest.fixture
def cluster(api_client) -> KubernetesCluster:
    return KubernetesCluster(api_client)


def test_the_adapter_satisfies_the_cluster_port_protocol(cluster):
    assert isinstance(cluster, ClusterPort)


def test_a_modelserving_round_trips_through_create_get_list_patch_and_delete(cluster):
    created = cluster.create_modelserving(manifest())
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    assert cluster.get_modelserving(NS, "chat")["spec"] == manifest()["spec"]
    assert [m["metadata"]["name"] for m in cluster.list_modelservings(NS)] == ["chat"]
    assert [m["metadata"]["name"] for m in cluster.list_modelservings()] == ["chat"]
    assert cluster.list_modelservings("elsewhere") == []

    patched = cluster.patch_modelserving(
        NS, "chat", {"spec": {"paused": True}}, resource_version=created["metadata"]["resourceVersion"]
    )
    assert patched["spec"]["paused"] is True
    assert patched["spec"]["template"] == manifest()["spec"]["template"]  # a merge patch keeps the rest

    cluster.delete_modelserving(NS, "chat")
    with pytest.raises(NotFound):
        cluster.get_modelserving(NS, "chat")


def test_a_kthena_manifest_is_stored_under_our_api_group(cluster):
    created = cluster.create_modelserving(manifest(api_version=naming.KTHENA_API_VERSION))
    assert created["apiVersion"] == naming.API_VERSION
    assert cluster.get_modelserving(NS, "chat")["kind"] == "ModelServing"


def test_a_modelserving_without_a_namespace_goes_to_default_and_one_without_a_name_is_refused(cluster):
    body = manifest()
    del body["metadata"]["namespace"]
    assert cluster.create_modelserving(body)["metadata"]["namespace"] == "default"
    del body["metadata"]["name"]
    with pytest.raises(ClusterError, match="metadata.name"):
        cluster.create_modelserving(body)


def test_a_missing_modelserving_raises_not_found_naming_it(cluster):
    with pytest.raises(NotFound, match="default/ghost"):
        cluster.get_modelserving(NS, "ghost")


def test_creating_a_modelserving_twice_raises_conflict(cluster):
    cluster.create_modelserving(manifest())
    with pytest.raises(Conflict):
        cluster.create_modelserving(manifest())


def test_a_spec_patch_from_a_stale_resource_version_raises_conflict(cluster):
    created = cluster.create_modelserving(manifest())
    cluster.patch_modelserving(NS, "chat", {"spec": {"replicas": 2}})
    with pytest.raises(Conflict):
        cluster.patch_modelserving(
            NS, "chat", {"spec": {"replicas": 3}}, resource_version=created["metadata"]["resourceVersion"]
        )
    assert cluster.get_modelserving(NS, "chat")["spec"]["replicas"] == 2


def test_a_status_write_from_a_stale_version_raises_conflict_and_a_retry_from_fresh_state_succeeds(cluster):
    created = cluster.create_modelserving(manifest())
    seen_version = created["metadata"]["resourceVersion"]
    # Someone changes the spec after the controller read it: its status was planned for the old spec.
    cluster.patch_modelserving(NS, "chat", {"spec": {"replicas": 3}})

    with pytest.raises(Conflict):
        cluster.replace_modelserving_status(
            NS, "chat", {"replicas": 1, "observedGeneration": 1}, resource_version=seen_version
        )
    assert "status" not in cluster.get_modelserving(NS, "chat")  # nothing was overwritten

    fresh = cluster.get_modelserving(NS, "chat")  # re-read and re-plan from it
    status = {"replicas": fresh["spec"]["replicas"], "observedGeneration": fresh["metadata"]["generation"]}
    written = cluster.replace_modelserving_status(
        NS, "chat", status, resource_version=fresh["metadata"]["resourceVersion"]
    )
    assert written["status"] == {"replicas": 3, "observedGeneration": 2}
    assert written["spec"]["replicas"] == 3


def test_a_status_write_replaces_the_whole_status_and_never_touches_the_spec(cluster):
    created = cluster.create_modelserving(manifest())
    first = cluster.replace_modelserving_status(
        NS,
        "chat",
        {"replicas": 1, "groups": [{"ordinal": 0}]},
        resource_version=created["metadata"]["resourceVersion"],
    )
    second = cluster.replace_modelserving_status(
        NS, "chat", {"replicas": 1}, resource_version=first["metadata"]["resourceVersion"]
    )
    assert second["status"] == {"replicas": 1}
    assert second["spec"] == manifest()["spec"]
    assert second["metadata"]["generation"] == created["metadata"]["generation"]  # status is not a spec change


def test_pods_are_created_with_a_controller_owner_reference_to_their_modelserving(cluster):
    ms = cluster.create_modelserving(manifest())
    created = cluster.create_pod(pod("chat-0-decode-0-0"))
    assert created["metadata"]["ownerReferences"] == [
        {
            "apiVersion": naming.API_VERSION,
            "kind": "ModelServing",
            "name": "chat",
            "uid": ms["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert created["metadata"]["namespace"] == NS
    assert created["status"]["phase"] == "Pending"
    assert created["spec"]["containers"][0]["args"] == ["--port", "8000"]


def test_a_pod_whose_template_writes_quantities_as_numbers_is_created_as_written(cluster, apiserver):
    # Most Kthena examples write `nvidia.com/gpu: 1`; the API server accepts it, the client's
    # V1Pod model would not, so the adapter sends the pod as plain JSON.
    cluster.create_modelserving(manifest())
    body = pod("chat-0-decode-0-0")
    body["spec"]["containers"][0]["resources"] = {"limits": {naming.GPU_RESOURCE: 1, "memory": "8Gi"}}
    created = cluster.create_pod(body)
    assert created["spec"]["containers"][0]["resources"]["limits"] == {naming.GPU_RESOURCE: 1, "memory": "8Gi"}
    stored = apiserver.call(lambda: apiserver.emu.store[("/v1/pods", NS, "chat-0-decode-0-0")]["spec"]["containers"][0])
    assert stored["resources"]["limits"][naming.GPU_RESOURCE] == 1


def test_a_pod_owner_reference_follows_a_modelserving_recreated_under_the_same_name(cluster):
    old = cluster.create_modelserving(manifest())
    cluster.delete_modelserving(NS, "chat")
    new = cluster.create_modelserving(manifest())
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    created = cluster.create_pod(pod("chat-0-decode-0-0"))
    assert created["metadata"]["ownerReferences"][0]["uid"] == new["metadata"]["uid"]


def test_a_pod_without_the_name_label_is_refused_with_a_clear_reason(cluster):
    cluster.create_modelserving(manifest())
    body = pod("stray")
    del body["metadata"]["labels"][naming.LABEL_NAME]
    with pytest.raises(ValueError, match="serving.rolloutui.io/name"):
        cluster.create_pod(body)


def test_a_pod_of_a_missing_modelserving_cannot_be_owned_and_raises_not_found(cluster):
    with pytest.raises(NotFound):
        cluster.create_pod(pod("chat-0-decode-0-0"))


def test_creating_a_pod_that_exists_raises_conflict(cluster):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    with pytest.raises(Conflict):
        cluster.create_pod(pod("chat-0-decode-0-0"))


def test_pods_are_listed_per_modelserving_by_the_name_label(cluster, apiserver):
    cluster.create_modelserving(manifest("chat"))
    cluster.create_modelserving(manifest("other"))
    cluster.create_pod(pod("chat-0-decode-0-0", "chat"))
    cluster.create_pod(pod("other-0-decode-0-0", "other"))
    assert [p["metadata"]["name"] for p in cluster.list_pods(NS, "chat")] == ["chat-0-decode-0-0"]
    assert [p["metadata"]["name"] for p in cluster.list_pods(NS, "other")] == ["other-0-decode-0-0"]
    assert cluster.list_pods(NS, "chat")[0]["kind"] == "Pod"
    # The label selector went to the server (kmock alone would ignore it; the adapter filters again).
    assert any(c[2].get("labelSelector") == f"{naming.LABEL_NAME}=chat" for c in apiserver.emu.calls)


def test_a_merge_patch_sets_and_removes_pod_annotations_and_keeps_the_others(cluster):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    marked = cluster.patch_pod(
        NS, "chat-0-decode-0-0", {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: "12.5"}}}
    )
    assert marked["metadata"]["annotations"] == {"keep": "me", naming.ANNOTATION_DRAINING: "12.5"}
    cleared = cluster.patch_pod(
        NS, "chat-0-decode-0-0", {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: None}}}
    )
    assert cleared["metadata"]["annotations"] == {"keep": "me"}


def test_an_image_patch_naming_only_the_container_keeps_the_rest_of_the_pod_spec(cluster, apiserver):
    cluster.create_modelserving(manifest())
    created = cluster.create_pod(pod("chat-0-decode-0-0"))
    patched = cluster.patch_pod(
        NS,
        "chat-0-decode-0-0",
        {
            "metadata": {"annotations": {naming.ANNOTATION_INPLACE_STATE: '{"targetRevision": "abc"}'}},
            "spec": {"containers": [{"name": "engine", "image": "engine:v2"}]},
        },
    )
    engine, sidecar = patched["spec"]["containers"]
    assert engine == {**created["spec"]["containers"][0], "image": "engine:v2"}
    assert sidecar == created["spec"]["containers"][1]
    assert patched["metadata"]["uid"] == created["metadata"]["uid"]  # in place: same pod
    assert patched["metadata"]["annotations"][naming.ANNOTATION_INPLACE_STATE] == '{"targetRevision": "abc"}'
    # It went over the wire as a JSON merge patch.
    assert any(c[0] == "PATCH" and c[1].endswith("/pods/chat-0-decode-0-0") for c in apiserver.emu.calls)


def test_an_image_patch_naming_an_unknown_container_is_refused(cluster):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    with pytest.raises(ValueError, match="nope"):
        cluster.patch_pod(NS, "chat-0-decode-0-0", {"spec": {"containers": [{"name": "nope", "image": "x"}]}})


def test_setting_a_pod_condition_adds_or_replaces_it_by_type_and_keeps_the_others(cluster, apiserver):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    # The kubelet reported Ready.
    apiserver.call(
        lambda: apiserver.emu.store[("/v1/pods", NS, "chat-0-decode-0-0")]["status"].update(
            conditions=[{"type": "Ready", "status": "True"}], phase="Running"
        )
    )

    gate_false = cluster.set_pod_condition(
        NS,
        "chat-0-decode-0-0",
        {"type": naming.CONDITION_INPLACE_READY, "status": "False", "reason": "StartInPlaceUpdate"},
    )
    conditions = {c["type"]: c for c in gate_false["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions[naming.CONDITION_INPLACE_READY]["status"] == "False"
    assert conditions[naming.CONDITION_INPLACE_READY]["reason"] == "StartInPlaceUpdate"
    assert conditions[naming.CONDITION_INPLACE_READY]["lastTransitionTime"]

    gate_true = cluster.set_pod_condition(
        NS, "chat-0-decode-0-0", {"type": naming.CONDITION_INPLACE_READY, "status": "True"}
    )
    types = [c["type"] for c in gate_true["status"]["conditions"]]
    assert types == ["Ready", naming.CONDITION_INPLACE_READY]  # replaced, not appended
    assert gate_true["status"]["phase"] == "Running"
    # Written through the status subresource.
    assert any(c[0] == "PATCH" and c[1].endswith("/pods/chat-0-decode-0-0/status") for c in apiserver.emu.calls)


def test_a_condition_time_in_clock_seconds_is_written_as_an_api_time(cluster):
    # The core's clock speaks epoch seconds; metav1.Time on the server needs RFC 3339.
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    written = cluster.set_pod_condition(
        NS,
        "chat-0-decode-0-0",
        {
            "type": naming.CONDITION_INPLACE_READY,
            "status": "True",
            "reason": "PodCreated",
            "lastTransitionTime": 1_800_000_000.25,
        },
    )
    (gate,) = written["status"]["conditions"]
    assert gate["lastTransitionTime"] == "2027-01-15T08:00:00Z"


def test_a_condition_without_a_valid_status_is_refused(cluster):
    with pytest.raises(ValueError, match="True/False/Unknown"):
        cluster.set_pod_condition(NS, "p", {"type": "X", "status": True})


def test_deleting_a_pod_with_a_stale_uid_raises_conflict_and_keeps_the_replacement(cluster):
    cluster.create_modelserving(manifest())
    old = cluster.create_pod(pod("chat-0-decode-0-0"))
    cluster.delete_pod(NS, "chat-0-decode-0-0", uid=old["metadata"]["uid"])
    assert cluster.list_pods(NS, "chat") == []
    replacement = cluster.create_pod(pod("chat-0-decode-0-0"))
    with pytest.raises(Conflict):
        cluster.delete_pod(NS, "chat-0-decode-0-0", uid=old["metadata"]["uid"])
    assert [p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")] == [replacement["metadata"]["uid"]]
    with pytest.raises(NotFound):
        cluster.delete_pod(NS, "never-existed")


def test_revisions_are_controller_revisions_holding_the_data_and_the_number(cluster):
    ms = cluster.create_modelserving(manifest())
    data = {
        "roles": [
            {
                "name": "decode",
                "workerReplicas": 0,
                "entryTemplate": {"spec": {"containers": [{"name": "engine", "image": "engine:v1"}]}},
            }
        ]
    }
    revision = {
        "metadata": {
            "name": naming.revision_object_name("chat", "5d8f7c"),
            "namespace": NS,
            "labels": {naming.LABEL_NAME: "chat", naming.LABEL_REVISION: "5d8f7c"},
            "annotations": {naming.ANNOTATION_REVISION_DATA_VERSION: naming.REVISION_DATA_VERSION},
        },
        "data": data,
        "revision": 1,
    }
    created = cluster.create_revision(revision)
    assert created["kind"] == "ControllerRevision" and created["apiVersion"] == "apps/v1"
    assert created["metadata"]["ownerReferences"][0]["uid"] == ms["metadata"]["uid"]
    with pytest.raises(Conflict):
        cluster.create_revision(revision)

    listed = cluster.list_revisions(NS, "chat")
    assert [(r["metadata"]["name"], r["revision"], r["data"]) for r in listed] == [("chat-5d8f7c", 1, data)]

    renumbered = cluster.set_revision_number(NS, "chat-5d8f7c", 4)
    assert renumbered["revision"] == 4 and renumbered["data"] == data

    cluster.delete_revision(NS, "chat-5d8f7c")
    assert cluster.list_revisions(NS, "chat") == []
    with pytest.raises(NotFound):
        cluster.delete_revision(NS, "chat-5d8f7c")


def test_revision_data_that_cannot_be_parsed_comes_back_as_stored(cluster, apiserver):
    # Reads are raw JSON, never the client's models: data the core cannot parse reaches it
    # unchanged (the core reports it, never guesses), even a non-object the models would reject.
    cluster.create_modelserving(manifest())
    cluster.create_revision(
        {
            "metadata": {"name": "chat-bad", "namespace": NS, "labels": {naming.LABEL_NAME: "chat"}},
            "data": {"roles": "not a list"},
            "revision": 2,
        }
    )
    apiserver.call(
        lambda: apiserver.emu.store[("apps/v1/controllerrevisions", NS, "chat-bad")].update(data="<corrupted>")
    )
    assert cluster.list_revisions(NS, "chat")[0]["data"] == "<corrupted>"


def test_events_are_recorded_on_the_modelserving(cluster, apiserver):
    ms = cluster.create_modelserving(manifest())
    cluster.record_event(NS, "chat", reason="RolloutStarted", message="revision 2 (engine:v2) rolling out")
    cluster.record_event(NS, "chat", reason="RolloutBlocked", message="surge pod unschedulable", type="Warning")
    events = [obj for (res, _, _), obj in apiserver.emu.store.items() if res == "/v1/events"]
    assert sorted(e["reason"] for e in events) == ["RolloutBlocked", "RolloutStarted"]
    for event in events:
        assert event["involvedObject"] == {
            "apiVersion": naming.API_VERSION,
            "kind": "ModelServing",
            "name": "chat",
            "namespace": NS,
            "uid": ms["metadata"]["uid"],
        }
        assert event["source"]["component"] == "rolloutui-controller"
    assert {e["type"] for e in events} == {"Normal", "Warning"}


def test_an_event_that_cannot_be_written_does_not_fail_the_caller():
    # No API server at all: the recorder logs and carries on.
    cluster = KubernetesCluster(kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9")))
    cluster.record_event(NS, "chat", reason="X", message="y")


def test_deleting_a_modelserving_lets_the_garbage_collector_remove_what_it_owns(cluster):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    cluster.create_revision(
        {
            "metadata": {"name": "chat-1", "namespace": NS, "labels": {naming.LABEL_NAME: "chat"}},
            "data": {},
            "revision": 1,
        }
    )
    cluster.delete_modelserving(NS, "chat")
    assert cluster.list_pods(NS, "chat") == []
    assert cluster.list_revisions(NS, "chat") == []


def test_an_unreachable_api_server_raises_a_cluster_error_naming_the_call():
    client = kubernetes.client.ApiClient(kubernetes.client.Configuration(host="http://127.0.0.1:9"))
    cluster = KubernetesCluster(client)
    with pytest.raises(ClusterError, match="cannot reach the API server"):
        cluster.get_modelserving(NS, "chat")


def test_objects_come_back_as_plain_json_dicts_with_camel_case_keys(cluster):
    cluster.create_modelserving(manifest())
    body = copy.deepcopy(pod("chat-0-decode-0-0"))
    created = cluster.create_pod(body)
    assert "readinessGates" in created["spec"] and "ownerReferences" in created["metadata"]
    assert body == pod("chat-0-decode-0-0")  # the caller's dict is not modified


def test_a_cluster_without_the_crd_says_how_to_install_it():
    from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer

    without_crd = {k: v for k, v in RESOURCES.items() if k != MODELSERVINGS}
    with RunningApiServer(without_crd, set()) as server:
        cluster = KubernetesCluster(server.api_client())
        with pytest.raises(ClusterError, match="is the ModelServing CRD installed"):
            cluster.list_modelservings()


def test_a_modelserving_the_crd_schema_refuses_raises_a_cluster_error_with_the_servers_reason(cluster):
    body = manifest()
    body["spec"]["replicas"] = -1
    with pytest.raises(ClusterError, match=r"invalid: spec\.replicas: Invalid value: -1"):
        cluster.create_modelserving(body)
