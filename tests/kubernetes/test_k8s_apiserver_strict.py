"""The API server double refuses what a real API server refuses, in the same shape, and the
adapter (``KubernetesCluster``) turns each refusal into the port's error naming the field:

- unknown fields of a ModelServing are pruned per the CRD's structural schema (the adapter sends
  ``fieldValidation=Strict``, so a misspelt field is refused instead of silently lost);
- 422 bodies are ``Status`` objects with ``details.causes[].field`` (schema and CEL rules);
- immutable fields: metadata.name/uid, pod spec fields other than images, revision data;
- ``metadata.resourceVersion`` conflicts on update are 409.
"""

from __future__ import annotations

import copy
import json

import kubernetes
import pytest
from test_k8s_cluster_adapter import NS, manifest, pod

from controller.core import naming
from controller.core.ports import Conflict
from controller.k8s import Invalid, KubernetesCluster

GROUP, VERSION = naming.API_VERSION.split("/")
PATH = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{naming.PLURAL}"


@pytest.fixture
def cluster(api_client) -> KubernetesCluster:
    return KubernetesCluster(api_client)


def http(api_client, method: str, path: str, body=None, content_type="application/json", query=None):
    """One raw request; returns (status, parsed body, headers), errors included."""
    url = api_client.configuration.host + path
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    response = api_client.rest_client.pool_manager.request(
        method,
        url,
        body=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": content_type, "Accept": "application/json"},
    )
    return response.status, json.loads(response.data or b"{}"), response.headers


# ------------------------------------------------------------------------------------ pruning


def test_unknown_fields_are_pruned_with_a_warning_as_the_api_server_does(api_client):
    body = manifest()
    body["spec"]["replica"] = 3  # misspelt
    body["spec"]["template"]["roles"][0]["replica"] = 2
    body["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["anyPodSpecField"] = True  # preserved
    status, stored, headers = http(api_client, "POST", PATH, body)
    assert status == 201
    assert "replica" not in stored["spec"] and "replica" not in stored["spec"]["template"]["roles"][0]
    assert stored["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["anyPodSpecField"] is True
    warnings = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]
    assert any('unknown field \\"spec.replica\\"' in w or 'unknown field "spec.replica"' in w for w in warnings)


def test_strict_field_validation_refuses_unknown_fields_naming_them(api_client):
    body = manifest()
    body["spec"]["replica"] = 3
    status, error, _ = http(api_client, "POST", PATH, body, query={"fieldValidation": "Strict"})
    assert status == 400
    assert error["kind"] == "Status" and error["reason"] == "BadRequest"
    assert 'strict decoding error: unknown field "spec.replica"' in error["message"]


def test_the_adapter_refuses_a_misspelt_field_instead_of_losing_it(cluster):
    body = manifest()
    body["spec"]["replica"] = 3
    with pytest.raises(Invalid, match=r'unknown field "spec\.replica"') as raised:
        cluster.create_modelserving(body)
    assert raised.value.fields == ["spec.replica"]
    cluster.create_modelserving(manifest())
    with pytest.raises(Invalid, match=r'unknown field "spec\.pause"'):
        cluster.patch_modelserving(NS, "chat", {"spec": {"pause": True}})  # meant "paused"
    assert "pause" not in cluster.get_modelserving(NS, "chat")["spec"]


def test_status_written_by_the_controller_is_kept_whole(cluster):
    ms = cluster.create_modelserving(manifest())
    status = {
        "phase": "Progressing",
        "groups": [{"ordinal": 0}],
        "conditions": [{"type": "A", "status": "True", "x": 1}],
    }
    stored = cluster.replace_modelserving_status(NS, "chat", status, resource_version=ms["metadata"]["resourceVersion"])
    assert stored["status"] == status


# ------------------------------------------------------------------------------------ 422 Status


def test_a_schema_violation_is_a_422_status_with_a_cause_per_field(api_client):
    body = manifest()
    body["spec"]["replicas"] = -1
    body["spec"]["template"]["roles"][0]["name"] = "Decode"
    status, error, _ = http(api_client, "POST", PATH, body)
    assert status == 422
    assert {k: error[k] for k in ("apiVersion", "kind", "status", "reason", "code")} == {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "reason": "Invalid",
        "code": 422,
    }
    assert error["message"].startswith(f'ModelServing.{GROUP} "chat" is invalid: [')
    details = error["details"]
    assert (details["name"], details["group"], details["kind"]) == ("chat", GROUP, "ModelServing")
    fields = {c["field"] for c in details["causes"]}
    assert fields == {"spec.replicas", "spec.template.roles[0].name"}
    assert all(
        c["reason"] == "FieldValueInvalid" and c["message"].startswith("Invalid value") for c in details["causes"]
    )
    assert "traceback" not in json.dumps(error)


def test_the_adapter_raises_invalid_naming_each_field(cluster):
    body = manifest()
    body["spec"]["replicas"] = -1
    body["spec"]["recoveryPolicy"] = "Restart"
    with pytest.raises(Invalid) as raised:
        cluster.create_modelserving(body)
    assert sorted(raised.value.fields) == ["spec.recoveryPolicy", "spec.replicas"]
    assert "spec.replicas: Invalid value: -1" in str(raised.value)
    assert 'spec.recoveryPolicy: Unsupported value: "Restart"' in str(raised.value)


def test_a_cel_rule_violation_names_the_field_the_rule_sits_on(cluster):
    body = manifest()
    body["spec"]["template"]["roles"].append(copy.deepcopy(body["spec"]["template"]["roles"][0]))
    with pytest.raises(Invalid) as raised:
        cluster.create_modelserving(body)
    assert raised.value.fields == ["spec.template.roles"]
    assert "role names must be unique" in str(raised.value)


def test_a_patch_that_breaks_the_schema_is_refused_and_changes_nothing(cluster):
    cluster.create_modelserving(manifest())
    before = cluster.get_modelserving(NS, "chat")
    with pytest.raises(Invalid, match=r"spec\.replicas"):
        cluster.patch_modelserving(NS, "chat", {"spec": {"replicas": -2}})
    assert cluster.get_modelserving(NS, "chat") == before


# ------------------------------------------------------------------------------------ immutable fields


def test_a_put_naming_another_object_is_a_bad_request(api_client, cluster):
    ms = cluster.create_modelserving(manifest())
    body = copy.deepcopy(ms)
    body["metadata"]["name"] = "other"
    status, error, _ = http(api_client, "PUT", f"{PATH}/chat", body)
    assert status == 400 and "does not match the name on the URL" in error["message"]


def test_a_put_with_another_uid_is_a_failed_precondition(api_client, cluster):
    ms = cluster.create_modelserving(manifest())
    body = copy.deepcopy(ms)
    body["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    status, error, _ = http(api_client, "PUT", f"{PATH}/chat", body)
    assert status == 409 and "Precondition failed: UID in precondition" in error["message"]


@pytest.mark.parametrize("field", ["name", "uid"])
def test_a_patch_that_changes_name_or_uid_is_refused_as_immutable(api_client, cluster, field):
    cluster.create_modelserving(manifest())
    status, error, _ = http(
        api_client, "PATCH", f"{PATH}/chat", {"metadata": {field: "changed"}}, "application/merge-patch+json"
    )
    assert status == 422
    assert error["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "changed": field is immutable',
            "field": f"metadata.{field}",
        }
    ]


def test_a_pod_spec_change_other_than_an_image_is_invalid_naming_spec(cluster):
    cluster.create_modelserving(manifest())
    cluster.create_pod(pod("chat-0-decode-0-0"))
    with pytest.raises(Invalid) as raised:
        cluster.patch_pod(NS, "chat-0-decode-0-0", {"spec": {"containers": [{"name": "engine", "args": ["--x"]}]}})
    assert raised.value.fields == ["spec"]
    assert raised.value.causes[0]["reason"] == "FieldValueForbidden"
    patched = cluster.patch_pod(NS, "chat-0-decode-0-0", {"spec": {"containers": [{"name": "engine", "image": "e:2"}]}})
    assert patched["spec"]["containers"][0]["image"] == "e:2"


def test_a_revisions_data_is_immutable(api_client, cluster):
    cluster.create_modelserving(manifest())
    rev = cluster.create_revision(
        {
            "metadata": {"name": "chat-abc", "namespace": NS, "labels": {naming.LABEL_NAME: "chat"}},
            "data": {"a": 1},
            "revision": 1,
        }
    )
    assert cluster.set_revision_number(NS, "chat-abc", 3)["revision"] == 3  # the number may change
    path = f"/apis/apps/v1/namespaces/{NS}/controllerrevisions/chat-abc"
    status, error, _ = http(api_client, "PATCH", path, {"data": {"a": 2}}, "application/merge-patch+json")
    assert status == 422 and error["details"]["causes"][0]["field"] == "data"
    assert rev["data"] == {"a": 1}


# ------------------------------------------------------------------------------------ conflicts


def test_a_stale_resource_version_is_a_409_conflict_on_every_kind_of_update(api_client, cluster):
    ms = cluster.create_modelserving(manifest())
    stale = ms["metadata"]["resourceVersion"]
    cluster.patch_modelserving(NS, "chat", {"spec": {"paused": True}})
    with pytest.raises(Conflict):
        cluster.patch_modelserving(NS, "chat", {"spec": {"paused": False}}, resource_version=stale)
    with pytest.raises(Conflict):
        cluster.replace_modelserving_status(NS, "chat", {"phase": "x"}, resource_version=stale)
    status, error, _ = http(
        api_client,
        "PATCH",
        f"{PATH}/chat",
        [{"op": "replace", "path": "/metadata/resourceVersion", "value": stale}],
        "application/json-patch+json",
    )
    assert status == 409 and error["reason"] == "Conflict"
    assert error["message"].startswith(f'Operation cannot be fulfilled on modelservings.{GROUP} "chat"')
    assert (error["details"]["name"], error["details"]["kind"]) == ("chat", "modelservings")


def test_the_client_library_sees_the_same_status_body(api_client):
    custom = kubernetes.client.CustomObjectsApi(api_client)
    body = manifest()
    body["spec"]["replicas"] = -1
    with pytest.raises(kubernetes.client.ApiException) as raised:
        custom.create_namespaced_custom_object(GROUP, VERSION, NS, naming.PLURAL, body)
    assert raised.value.status == 422
    assert json.loads(raised.value.body)["details"]["causes"][0]["field"] == "spec.replicas"
