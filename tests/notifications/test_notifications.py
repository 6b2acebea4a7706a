"""Notifications: delivered to real HTTP endpoints started by the tests, filtered per destination,
retried by the worker's task, and never in the way of a control."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database.store import DatabaseCluster
from rolloutui.models import AuditRecord, NotificationDelivery, NotifiedTransition
from rolloutui.services import controls, notifications
from rolloutui.services.notifications import NotificationConfigError
from rolloutui.tasks import deliver_notification
from tests.live.helpers import manifest

from .receiver import Receiver

pytestmark = pytest.mark.django_db

SECRET_PATH = "/services/T000/B000/s3cr3t-token"


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


@pytest.fixture
def small():
    cluster = DatabaseCluster(actor="test")
    cluster.add_node(8)
    cluster.create_modelserving(manifest())
    run_reconcile("default", "small")
    return cluster


@pytest.fixture
def worker_inline(celery_eager):
    """Tasks run inline, and as in a worker their retries do not reach the caller (eager mode runs
    each retry at once, without the back-off's wait)."""
    celery_eager.conf.task_eager_propagates = False
    return celery_eager


def configure(settings, *destinations: dict) -> None:
    settings.ROLLOUTUI_NOTIFICATIONS = json.dumps({"destinations": list(destinations)})


def pause(operator, django_capture_on_commit_callbacks, reason="hold for the night"):
    # The deliveries are queued when the control's transaction commits: run those callbacks.
    with django_capture_on_commit_callbacks(execute=True):
        return controls.pause(operator, "default", "small", reason=reason, source="api")


def test_an_operator_pause_reaches_a_webhook_as_one_json_object_with_a_link(
    settings, receiver, small, operator, worker_inline, django_capture_on_commit_callbacks
):
    settings.ROLLOUTUI_PUBLIC_URL = "https://rollouts.example.com"
    configure(settings, {"name": "ops", "type": "webhook", "url": receiver.url()})
    record = pause(operator, django_capture_on_commit_callbacks)
    [body] = receiver.bodies()
    assert body == {
        "kind": "paused",
        "namespace": "default",
        "name": "small",
        "revision": record.to_revision,
        "message": "default/small: paused by operator: hold for the night",
        "at": record.created_at.isoformat(),
        "url": "https://rollouts.example.com/modelservings/default/small/",
    }
    assert receiver.requests[0]["contentType"] == "application/json"
    delivery = NotificationDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code, delivery.last_error) == (
        "delivered",
        1,
        200,
        "",
    )
    assert delivery.delivered_at is not None and delivery.host == "127.0.0.1"


@pytest.mark.parametrize(
    ("public_url", "link"),
    [
        ("https://rollouts.example.com", "https://rollouts.example.com/modelservings/default/small/"),
        ("", None),
    ],
)
def test_a_slack_destination_gets_text_and_blocks_and_a_link_only_when_the_public_url_is_set(
    settings, receiver, small, operator, worker_inline, django_capture_on_commit_callbacks, public_url, link
):
    settings.ROLLOUTUI_PUBLIC_URL = public_url
    configure(settings, {"name": "chat", "type": "slack", "url": receiver.url(SECRET_PATH)})
    pause(operator, django_capture_on_commit_callbacks, reason="p99 <too> high & rising")
    [body] = receiver.bodies(SECRET_PATH)
    assert body["text"] == "default/small: paused by operator: p99 <too> high & rising"
    # Slack's mrkdwn: &, < and > are escaped as &amp; &lt; &gt; (Slack's "escaping text" rule).
    assert body["blocks"][0] == {
        "type": "section",
        "text": {"type": "mrkdwn", "text": "default/small: paused by operator: p99 &lt;too&gt; high &amp; rising"},
    }
    buttons = [e["url"] for b in body["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert buttons == ([link] if link else [])


FILTER_CASES = [
    # (filters, wanted by a destination with them: a pause of default/small)
    ({}, True),
    ({"kinds": ["paused"]}, True),
    ({"kinds": ["completed", "rolled_back"]}, False),
    ({"namespaces": ["default"]}, True),
    ({"namespaces": ["team-a"]}, False),
    ({"workloads": ["small"]}, True),
    ({"workloads": ["default/small"]}, True),
    ({"workloads": ["team-a/small"]}, False),
    ({"namespaces": ["default"], "workloads": ["big"]}, False),
    ({"namespaces": ["default"], "workloads": ["small"], "kinds": ["paused"]}, True),
]


@pytest.mark.parametrize(("filters", "wanted"), FILTER_CASES)
def test_a_destination_gets_only_the_events_its_filters_name(
    settings, receiver, small, operator, worker_inline, django_capture_on_commit_callbacks, filters, wanted
):
    configure(
        settings,
        {"name": "filtered", "type": "webhook", "url": receiver.url("/filtered"), "filters": filters},
        {"name": "everything", "type": "webhook", "url": receiver.url("/all")},
    )
    pause(operator, django_capture_on_commit_callbacks)
    assert len(receiver.bodies("/all")) == 1
    assert len(receiver.bodies("/filtered")) == (1 if wanted else 0)
    assert set(NotificationDelivery.objects.values_list("destination", flat=True)) == (
        {"filtered", "everything"} if wanted else {"everything"}
    )


def test_a_failing_endpoint_is_retried_by_the_task_until_it_answers(
    settings, receiver, small, operator, worker_inline, django_capture_on_commit_callbacks
):
    configure(settings, {"name": "flaky", "type": "webhook", "url": receiver.url()})
    receiver.answers = [500, 503]
    pause(operator, django_capture_on_commit_callbacks)
    assert len(receiver.bodies()) == 3
    delivery = NotificationDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code, delivery.last_error) == (
        "delivered",
        3,
        200,
        "",
    )
    # Celery waits between attempts with exponential back-off (eager mode runs them at once).
    assert deliver_notification.retry_backoff is True
    assert deliver_notification.retry_backoff_max == settings.ROLLOUTUI_NOTIFY_BACKOFF_MAX_SECONDS
    assert deliver_notification.max_retries == settings.ROLLOUTUI_NOTIFY_MAX_RETRIES


def test_a_delivery_is_failed_once_the_retries_are_spent_and_keeps_the_last_answer(
    settings, receiver, small, operator, worker_inline, django_capture_on_commit_callbacks, caplog
):
    configure(settings, {"name": "down", "type": "webhook", "url": receiver.url(SECRET_PATH)})
    tries = deliver_notification.max_retries + 1
    receiver.answers = [502] * tries
    pause(operator, django_capture_on_commit_callbacks)
    delivery = NotificationDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("failed", tries, 502)
    assert delivery.last_error == "HTTP 502 from 127.0.0.1"
    assert len(receiver.bodies()) == tries
    # The URL may hold a token: no log line of the attempts repeats it.
    assert "s3cr3t" not in caplog.text


def test_an_endpoint_that_does_not_answer_never_delays_a_control_through_the_api(
    settings, receiver, small, operator_client, django_capture_on_commit_callbacks
):
    """Not eager: the control only queues the delivery; the worker sends it."""
    configure(settings, {"name": "slow", "type": "webhook", "url": receiver.url()})
    receiver.answers = [500]
    import threading

    receiver.hold = threading.Event()  # the endpoint would hang until released
    with django_capture_on_commit_callbacks(execute=True):
        resp = operator_client.post(
            "/api/modelservings/default/small/pause", {"reason": "3 a.m."}, content_type="application/json"
        )
    assert resp.status_code == 200, resp.content
    assert receiver.requests == []
    delivery = NotificationDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.kind) == ("pending", 0, "paused")
    # The worker's attempts: the endpoint answers 500 once released, then 200 to the retry.
    receiver.hold.set()
    deliver_notification.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 2, 200)


def test_an_unreachable_endpoint_is_recorded_without_its_url(settings, receiver, small, operator, worker_inline):
    url = receiver.url(SECRET_PATH)
    receiver.server.shutdown()
    receiver.server.server_close()
    configure(settings, {"name": "gone", "type": "slack", "url": url})
    settings.ROLLOUTUI_NOTIFY_TIMEOUT_SECONDS = 1
    [delivery] = notifications.notify(
        notifications.Event("paused", "default", "small", "1", "default/small: paused", timezone.now())
    )
    deliver_notification.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == (
        "failed",
        deliver_notification.max_retries + 1,
        None,
    )
    assert delivery.last_error.endswith("no answer from 127.0.0.1") and "s3cr3t" not in delivery.last_error


def _view(revision: str, *, converged: bool, current: str, deadline: bool = False) -> dict:
    conditions = []
    if deadline:
        conditions.append(
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "no progress"}
        )
    return {"updateRevision": revision, "currentRevision": current, "converged": converged, "conditions": conditions}


def test_a_completed_rollout_and_an_exceeded_deadline_are_notified_once_per_revision(
    settings, receiver, worker_inline, django_capture_on_commit_callbacks
):
    configure(settings, {"name": "ops", "type": "webhook", "url": receiver.url()})
    passes = [
        _view("r1", converged=True, current="r1"),  # found settled at start: not news
        _view("r2", converged=False, current="r1"),  # r2 rolls out
        _view("r2", converged=False, current="r1", deadline=True),
        _view("r2", converged=False, current="r1", deadline=True),  # the same deadline, seen again
        _view("r2", converged=True, current="r2"),
        _view("r2", converged=True, current="r2"),  # the next pass (or a restarted worker)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        for view in passes:
            notifications.after_reconcile("default", "small", view)
    assert [(b["kind"], b["revision"]) for b in receiver.bodies()] == [
        ("progress_deadline_exceeded", "r2"),
        ("completed", "r2"),
    ]
    assert set(NotifiedTransition.objects.exclude(kind="_rolling").values_list("kind", "revision")) == {
        ("progress_deadline_exceeded", "r2"),
        ("completed", "r2"),
    }


def _record(**fields) -> AuditRecord:
    base = {"source": "api", "action": "pause", "namespace": "default", "name": "small", "result": "ok"}
    return AuditRecord(**{**base, **fields})


@pytest.mark.parametrize(
    ("record", "kinds"),
    [
        (_record(), ["paused"]),
        (_record(action="isvc_pause"), ["paused"]),
        (_record(result="error"), []),  # a refused control is no event
        (_record(action="rollback"), ["rolled_back"]),
        (_record(action="rollback_release"), ["rolled_back"]),
        # Argo Rollouts' abort: back to the stable revision, left paused.
        (_record(action="abort"), ["aborted"]),
        (_record(action="approve", namespace="", name="chat-llm:v2"), ["release_approved"]),
        (_record(action="resume"), []),
        (_record(action="set_image"), []),
        (
            _record(source="analysis", action="pause", details={"condition": "AnalysisInconclusive"}),
            ["analysis_inconclusive"],
        ),
        (_record(source="analysis", action="pause"), ["analysis_failed"]),
        # Argo Rollouts: a failed analysis aborts the rollout back to stable (RolloutAborted).
        (_record(source="analysis", action="rollback"), ["analysis_failed", "aborted"]),
    ],
)
def test_each_audit_record_stands_for_the_event_kinds_of_its_action_and_source(record, kinds):
    assert notifications.kinds_of_record(record) == kinds


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ([], "(top level)"),
        ({"destination": []}, "destination"),
        ({"destinations": {}}, "destinations"),
        ({"destinations": ["x"]}, "destinations[0]"),
        ({"destinations": [{"type": "webhook", "url": "http://h/"}]}, "destinations[0].name"),
        ({"destinations": [{"name": "a", "type": "email", "url": "http://h/"}]}, "destinations[0].type"),
        ({"destinations": [{"name": "a", "type": "slack"}]}, "destinations[0].url"),
        ({"destinations": [{"name": "a", "type": "slack", "url": "ftp://h/x"}]}, "destinations[0].url"),
        (
            {"destinations": [{"name": "a", "type": "slack", "url": "http://h/", "urlFrom": {"env": "X"}}]},
            "destinations[0].url",
        ),
        ({"destinations": [{"name": "a", "type": "slack", "urlFrom": {"secret": "X"}}]}, "destinations[0].urlFrom"),
        (
            {"destinations": [{"name": "a", "type": "slack", "urlFrom": {"env": "NOT_SET_ANYWHERE"}}]},
            "destinations[0].urlFrom.env",
        ),
        (
            {
                "destinations": [
                    {"name": "a", "type": "webhook", "url": "http://h/", "filters": {"kinds": ["paused", "x"]}}
                ]
            },
            "destinations[0].filters.kinds",
        ),
        (
            {"destinations": [{"name": "a", "type": "webhook", "url": "http://h/", "filters": {"namespaces": "prod"}}]},
            "destinations[0].filters.namespaces",
        ),
        (
            {"destinations": [{"name": "a", "type": "webhook", "url": "http://h/", "filters": {"labels": []}}]},
            "destinations[0].filters.labels",
        ),
        (
            {
                "destinations": [
                    {"name": "a", "type": "webhook", "url": "http://h/"},
                    {"name": "a", "type": "slack", "url": "http://h/"},
                ]
            },
            "destinations[1].name",
        ),
    ],
)
def test_a_wrong_notification_setting_is_refused_naming_its_field(document, field):
    with pytest.raises(NotificationConfigError) as refused:
        notifications.parse(document, environ={})
    assert refused.value.field == field
    assert str(refused.value).startswith(f"ROLLOUTUI_NOTIFICATIONS: {field}: ")


def test_a_url_from_the_environment_is_read_from_there_and_never_shown(tmp_path):
    config = tmp_path / "notifications.yaml"
    config.write_text(
        "destinations:\n"
        "  - name: chat\n    type: slack\n    urlFrom: {env: SLACK_URL}\n    filters: {kinds: [aborted]}\n"
    )
    [chat] = notifications.read(str(config), environ={"SLACK_URL": "https://hooks.slack.example" + SECRET_PATH})
    assert chat.url.endswith(SECRET_PATH) and chat.host == "hooks.slack.example"
    assert "s3cr3t" not in repr(chat)


names = st.sampled_from(["default", "prod", "team-a", "small", "chat"])
events = st.builds(
    lambda kind, namespace, name: notifications.Event(kind, namespace, name, "1", "m", timezone.now()),
    st.sampled_from(notifications.KINDS),
    names,
    names,
)
filter_sets = st.fixed_dictionaries(
    {},
    optional={
        "namespaces": st.frozensets(names, min_size=1),
        "workloads": st.frozensets(st.one_of(names, st.builds("{}/{}".format, names, names)), min_size=1),
        "kinds": st.frozensets(st.sampled_from(notifications.KINDS), min_size=1),
    },
)


@given(event=events, filters=filter_sets, extra=filter_sets)
def test_a_filter_only_ever_narrows_what_a_destination_receives(event, filters, extra):
    """Every filter given must match: a destination with more filters never gets an event that the
    same destination with fewer would not, and one without filters gets every event."""
    fewer = notifications.Destination("d", "webhook", "http://h/", **filters)
    more = notifications.Destination("d", "webhook", "http://h/", **{**extra, **filters})
    assert notifications.Destination("d", "webhook", "http://h/").wants(event)
    if more.wants(event):
        assert fewer.wants(event)


def test_the_analysis_pausing_for_lack_of_evidence_reaches_the_destination_through_its_audit_record(
    settings, receiver, worker_inline, django_capture_on_commit_callbacks
):
    from controller.runtime.analysis import announce

    configure(
        settings,
        {"name": "oncall", "type": "webhook", "url": receiver.url(), "filters": {"kinds": ["analysis_inconclusive"]}},
    )
    entry = {
        "source": "analysis",
        "action": "pause",
        "reason": "3 windows without enough requests (canary 4 of 50)",
        "fromRevision": "2",
        "toRevision": "2",
        "details": {"window": None, "condition": "AnalysisInconclusive"},
    }
    with django_capture_on_commit_callbacks(execute=True):
        announce("default", "small", [entry])
    [body] = receiver.bodies()
    assert (body["kind"], body["revision"]) == ("analysis_inconclusive", "2")
    assert body["message"] == (
        "default/small: analysis inconclusive: 3 windows without enough requests (canary 4 of 50)"
    )


def test_a_wrong_notification_setting_stops_the_start_naming_the_field(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["ROLLOUTUI_VAR_DIR"] = str(tmp_path)
    env["ROLLOUTUI_NOTIFICATIONS"] = json.dumps({"destinations": [{"name": "a", "type": "email", "url": "http://h/"}]})
    started = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode != 0
    assert "ROLLOUTUI_NOTIFICATIONS: destinations[0].type: must be one of webhook, slack, got 'email'" in started.stderr
