"""A control that the Kubernetes API server refuses or cannot be reached for: the attempt
is audited with result error, and the API answers a clear JSON error (422 naming the field, 502 for
a refusal of RolloutUI's own account, 503 when unreachable), never a 500.

The dashboard's services run against the real Kubernetes adapter (``controller.k8s.KubernetesCluster``)
talking HTTP to the API server double, whose RBAC and validation produce the errors."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer
from crd_jsonschema import crd_schema, modelserving_causes
from test_k8s_cluster_adapter import manifest

from controller.core import naming
from controller.k8s import KubernetesCluster
from rolloutui.models import AuditRecord

WEB = "rolloutui-web"
READ_ONLY = "read-only"
VERBS_OF = {WEB: {"get", "list", "watch", "patch"}, READ_ONLY: {"get", "list", "watch"}}


def authorizer(user, verb, group, resource, namespace, name) -> bool:
    return user is None or verb in VERBS_OF.get(user, set())


def causes(obj):
    # A rule the API server enforces and the dashboard does not know about: the double refuses a
    # change-cause that mentions "forbidden-word" (422 with the field, as an admission webhook would).
    cause = ((obj.get("metadata") or {}).get("annotations") or {}).get(naming.ANNOTATION_CHANGE_CAUSE, "")
    if "forbidden-word" in cause:
        return [{"field": "metadata.annotations", "message": "the change-cause may not say forbidden-word"}]
    return modelserving_causes(obj)


@pytest.fixture
def server() -> Iterator[RunningApiServer]:
    with RunningApiServer(
        RESOURCES, {MODELSERVINGS}, {MODELSERVINGS: causes}, {MODELSERVINGS: crd_schema()}, authorizer=authorizer
    ) as running:
        admin = KubernetesCluster(running.api_client())
        admin.create_modelserving(manifest("chat"))
        yield running


def use_cluster(monkeypatch, cluster) -> None:
    from rolloutui.services import controls, state

    monkeypatch.setattr(controls, "get_cluster", lambda: cluster)
    monkeypatch.setattr(state, "get_cluster", lambda: cluster)


def pause(client, reason: str):
    return client.post(
        "/api/modelservings/default/chat/pause", json.dumps({"reason": reason}), content_type="application/json"
    )


def test_a_control_the_cluster_accepts_goes_through_the_adapter(server, monkeypatch, operator_client, db):
    use_cluster(monkeypatch, KubernetesCluster(server.api_client(WEB)))
    monkeypatch.setattr("rolloutui.services.controls.enqueue.reconcile_soon", lambda ns, name: None)
    monkeypatch.setattr("rolloutui.api.views.state.get_state", lambda ns, name: {})
    resp = pause(operator_client, "works")
    assert resp.status_code == 200, resp.content
    assert AuditRecord.objects.get(action="pause").result == "ok"


def test_a_control_refused_by_rbac_is_audited_and_answered_502(server, monkeypatch, operator_client, db):
    use_cluster(monkeypatch, KubernetesCluster(server.api_client(READ_ONLY)))
    resp = pause(operator_client, "p99 regression")
    assert resp.status_code == 502, resp.content
    body = resp.json()
    assert body["cluster"] == "Forbidden" and "forbidden" in body["detail"]
    record = AuditRecord.objects.get(action="pause")
    assert (record.result, record.actor_name, record.reason) == ("error", "operator", "p99 regression")
    assert record.error.startswith("Forbidden:")


def test_a_control_the_api_server_finds_invalid_is_audited_and_answered_422_naming_the_field(
    server, monkeypatch, operator_client, db
):
    use_cluster(monkeypatch, KubernetesCluster(server.api_client(WEB)))
    resp = pause(operator_client, "says forbidden-word")
    assert resp.status_code == 422, resp.content
    body = resp.json()
    assert body["cluster"] == "Invalid" and "forbidden-word" in body["metadata.annotations"][0]
    record = AuditRecord.objects.get(action="pause")
    assert record.result == "error" and record.error.startswith("Invalid:")


def test_a_control_when_the_api_server_is_unreachable_is_audited_and_answered_503(monkeypatch, operator_client, db):
    from rolloutui.embedded_redis import free_port

    with RunningApiServer(RESOURCES, {MODELSERVINGS}) as gone:
        client = gone.api_client()
        client.configuration.host = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    use_cluster(monkeypatch, KubernetesCluster(client))
    resp = pause(operator_client, "during an outage")
    assert resp.status_code == 503, resp.content
    assert resp.json()["cluster"] == "Unreachable"
    record = AuditRecord.objects.get(action="pause")
    assert record.result == "error" and record.error.startswith("Unreachable:")


def test_reads_of_an_unreachable_cluster_answer_503_not_500(monkeypatch, viewer_client, db):
    from rolloutui.embedded_redis import free_port

    with RunningApiServer(RESOURCES, {MODELSERVINGS}) as gone:
        api = gone.api_client()
        api.configuration.host = f"http://127.0.0.1:{free_port()}"
    use_cluster(monkeypatch, KubernetesCluster(api))
    resp = viewer_client.get("/api/modelservings/default/chat/manifest/")
    assert resp.status_code == 503 and resp.json()["cluster"] == "Unreachable"
