"""The Events feed (``GET /api/events/``), a pod's events and log (``GET /api/pods/.../events|log/``)
and the charts' time ranges on the stored history (``GET .../history/?from=&to=&points=``)."""

from __future__ import annotations

import pytest
from django.test import Client

from rolloutui.models import AuditRecord, NamespaceGrant, NotificationDelivery

from .helpers import NAMESPACE

pytestmark = pytest.mark.django_db
STATE_REDIS_DB = 15  # away from the broker (0), the channel layer (1), the live state (2) and the other tests


def _bound_pod(ms) -> str:
    """Run the simulated kubelets until a pod of ``ms`` is running; its name."""
    from controller.simcluster.database.tick import tick
    from rolloutui.services import cluster

    c = cluster.get_cluster()
    if not c.list_nodes():
        for _ in range(6):
            c.add_node(8)
    now = c.clock.now()
    for step in range(1, 30):
        tick(c, now=now + step * 2.0)
        for pod in c.list_pods(NAMESPACE, ms["name"]):
            if any(s.get("state", {}).get("running") for s in pod.get("status", {}).get("containerStatuses") or []):
                return pod["metadata"]["name"]
    raise AssertionError("no pod started")


def test_a_pods_events_and_log_are_read_through_the_api(viewer_client, ms):
    pod = _bound_pod(ms)
    events = viewer_client.get(f"/api/pods/{NAMESPACE}/{pod}/events/")
    assert events.status_code == 200, events.content
    assert [e["reason"] for e in events.json()][:2] == ["Scheduled", "Pulling"]
    assert {"Pulled", "Started"} <= {e["reason"] for e in events.json()}
    log = viewer_client.get(f"/api/pods/{NAMESPACE}/{pod}/log/", {"tail": 2})
    assert log.status_code == 200, log.content
    body = log.json()
    assert len(body["lines"]) == 2 and body["masked"] is True and body["tail"] == 2
    full = viewer_client.get(f"/api/pods/{NAMESPACE}/{pod}/log/").json()["lines"]
    assert "Starting the model server" in full[0]["line"]


def test_an_operator_reads_the_log_unmasked_and_a_bad_tail_names_the_field(operator_client, ms):
    pod = _bound_pod(ms)
    assert operator_client.get(f"/api/pods/{NAMESPACE}/{pod}/log/").json()["masked"] is False
    bad = operator_client.get(f"/api/pods/{NAMESPACE}/{pod}/log/", {"tail": "lots"})
    assert bad.status_code == 400 and "tail" in bad.json()


def test_a_pod_is_404_when_unknown_or_in_a_namespace_the_user_may_not_view(ms, django_user_model):
    alice = django_user_model.objects.create_user("alice", password="x-very-long-pw")
    NamespaceGrant.objects.create(user=alice, namespace="team-a", role="viewer")
    client = Client()
    client.force_login(alice)
    pod = _bound_pod(ms)
    assert client.get(f"/api/pods/{NAMESPACE}/{pod}/events/").status_code == 404
    assert client.get(f"/api/pods/{NAMESPACE}/{pod}/log/").status_code == 404
    assert Client().get(f"/api/pods/{NAMESPACE}/{pod}/log/").status_code == 401


def test_a_log_line_is_masked_for_a_viewer_as_the_manifest_is():
    from rolloutui.services.pods import mask_line

    line = "INFO args: --api-key=sk-123 --hf-token hf_abc HF_TOKEN=hf_abc DB=postgres://app:pw@db/x --max-tokens 9"
    assert mask_line(line) == (
        "INFO args: --api-key=<masked> --hf-token <masked> HF_TOKEN=<masked> DB=postgres://app:<masked>@db/x"
        " --max-tokens 9"
    )
    assert mask_line("INFO:     Uvicorn running on http://0.0.0.0:8000") == (
        "INFO:     Uvicorn running on http://0.0.0.0:8000"
    )


def _audit(action, *, namespace=NAMESPACE, name="chat", who="operator", reason="why"):
    return AuditRecord.objects.create(
        actor_name=who, source="api", action=action, namespace=namespace, name=name, reason=reason
    )


def test_the_events_feed_merges_audit_records_and_deliveries_newest_first_with_filters(operator_client, viewer_client):
    _audit("pause", reason="investigating")
    _audit("isvc_rollback", name="llm", who="carol")
    _audit("set_image", namespace="team-b", name="other")
    NotificationDelivery.objects.create(
        destination="ops",
        destination_type="slack",
        host="hooks.example",
        kind="paused",
        namespace=NAMESPACE,
        name="chat",
    )
    items = operator_client.get("/api/events/").json()
    assert [(i["type"], i["action"]) for i in items][:4] == [
        ("notification", "paused"),
        ("audit", "set_image"),
        ("audit", "isvc_rollback"),
        ("audit", "pause"),
    ]
    rollback = next(i for i in items if i["action"] == "isvc_rollback")
    assert rollback["kind"] == "InferenceService" and rollback["who"] == "carol"
    assert [i["action"] for i in operator_client.get("/api/events/", {"who": "carol"}).json()] == ["isvc_rollback"]
    assert {i["action"] for i in operator_client.get("/api/events/", {"namespace": "team-b"}).json()} == {"set_image"}
    assert [i["action"] for i in operator_client.get("/api/events/", {"workload": f"{NAMESPACE}/chat"}).json()] == [
        "paused",
        "pause",
    ]
    assert [i["type"] for i in operator_client.get("/api/events/", {"type": "notification"}).json()] == ["notification"]
    # A viewer is not shown deliveries (the Notifications page needs operate).
    assert "notification" not in {i["type"] for i in viewer_client.get("/api/events/").json()}
    newest = items[0]["t"]
    assert operator_client.get("/api/events/", {"since": newest}).json() == []
    assert operator_client.get("/api/events/", {"type": "gossip"}).status_code == 400
    assert operator_client.get("/api/events/", {"limit": 0}).status_code == 400


def test_the_events_feed_shows_only_the_namespaces_a_grant_allows(django_user_model):
    _audit("pause", namespace="team-a", name="a")
    _audit("pause", namespace="team-b", name="b")
    alice = django_user_model.objects.create_user("alice", password="x-very-long-pw")
    NamespaceGrant.objects.create(user=alice, namespace="team-a", role="operator")
    NotificationDelivery.objects.create(destination="x", destination_type="webhook", kind="paused", namespace="team-b")
    client = Client()
    client.force_login(alice)
    items = client.get("/api/events/").json()
    assert {(i["namespace"], i["type"]) for i in items} == {("team-a", "audit")}
    assert client.get("/api/events/", {"namespace": "team-b"}).json() == []


def test_the_controllers_events_on_the_simulated_cluster_join_the_feed(operator_client, state_redis):
    from rolloutui.services import cluster

    cluster.get_cluster().record_event(
        "team-c", "chat", reason="RolloutDegraded", message="phase Progressing -> Degraded", type="Warning"
    )
    items = operator_client.get("/api/events/", {"type": "event", "namespace": "team-c"}).json()
    assert [(i["action"], i["level"], i["kind"], i["who"]) for i in items] == [
        ("RolloutDegraded", "Warning", "ModelServing", "controller")
    ]


def _samples(ms, times, revision="rev-a"):
    from controller.models import ProgressSample

    for t in times:
        ProgressSample.objects.create(
            namespace=ms["namespace"],
            name=ms["name"],
            t=t,
            data={"t": t, "roles": {}, "available": 1, "floor": 1, "updateRevision": revision},
        )


def test_a_time_range_of_the_history_is_downsampled_on_the_server(viewer_client, ms):
    import time

    base = time.time()
    _samples(ms, [base + i for i in range(1000)])
    url = f"/api/modelservings/{NAMESPACE}/{ms['name']}/history/"
    body = viewer_client.get(url, {"from": base + 100, "to": base + 699, "points": 50}).json()
    ts = [p["t"] for p in body["points"]]
    assert body["downsampled"] is True and len(ts) <= 50 and ts == sorted(ts)
    assert ts[0] >= base + 100 and ts[-1] == base + 699
    assert body["stored"]["to"] == base + 999 and body["stored"]["from"] <= base
    small = viewer_client.get(url, {"from": base + 10, "to": base + 19}).json()
    assert [p["t"] for p in small["points"]] == [base + i for i in range(10, 20)] and not small["downsampled"]
    assert viewer_client.get(url, {"from": base + 5, "to": base}).status_code == 400
    assert viewer_client.get(url, {"points": 1}).status_code == 400
    # Without a range the answer is the list it always was.
    assert isinstance(viewer_client.get(url).json(), list)


def test_the_rollout_range_starts_where_the_newest_revision_started_rolling_out(viewer_client, ms):
    import time

    base = time.time()
    _samples(ms, [base + i for i in range(10)], revision="rev-a")
    _samples(ms, [base + 10 + i for i in range(5)], revision="rev-b")
    body = viewer_client.get(f"/api/modelservings/{NAMESPACE}/{ms['name']}/history/", {"range": "rollout"}).json()
    assert body["from"] == base + 10
    assert [p["updateRevision"] for p in body["points"]] == ["rev-b"] * 5


def test_the_stored_history_keeps_the_last_hour_whole_and_six_hours_thinned_for_the_ranges(ms):
    from controller.models import ProgressSample
    from controller.runtime import progress

    ProgressSample.objects.filter(namespace=NAMESPACE, name=ms["name"]).delete()
    base = 1_000_000.0
    ProgressSample.objects.bulk_create(
        ProgressSample(namespace=NAMESPACE, name=ms["name"], t=base + i * 2.0, data={"t": base + i * 2.0})
        for i in range(7 * 1800)  # 7 h, one sample every 2 s
    )
    now = base + (7 * 1800 - 1) * 2.0
    progress.prune(NAMESPACE, ms["name"], now)
    ts = list(
        ProgressSample.objects.filter(namespace=NAMESPACE, name=ms["name"]).order_by("t").values_list("t", flat=True)
    )
    assert ts[0] >= now - progress.KEEP_SECONDS  # nothing older than 6 h
    recent = [t for t in ts if t >= now - progress.RECENT_SECONDS]
    assert len(recent) == 1801  # the last hour as sampled, both ends included
    older = [t for t in ts if t < now - progress.RECENT_SECONDS]
    assert len({int(t // progress.THIN_SECONDS) for t in older}) == len(older)  # one per 10 s
    assert 1790 <= len(older) <= 1801
