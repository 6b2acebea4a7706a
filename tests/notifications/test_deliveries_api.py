"""Who reads the deliveries (``GET /api/notifications/deliveries/`` and the Notifications page):
operators, of the namespaces where they may operate; a destination's URL is never shown."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from rolloutui.models import NamespaceGrant, NotificationDelivery
from rolloutui.services import notifications

pytestmark = pytest.mark.django_db

TOKEN_URL = "https://hooks.slack.example/services/T000/B000/s3cr3t-token"


@pytest.fixture
def deliveries(settings):
    settings.ROLLOUTUI_NOTIFICATIONS = json.dumps(
        {"destinations": [{"name": "chat", "type": "slack", "url": TOKEN_URL}]}
    )
    for namespace, name in (("team-a", "chat"), ("team-b", "code"), ("", "chat-llm:v2")):
        notifications.notify(
            notifications.Event(
                "paused", namespace, name, "1", f"{namespace}/{name}: paused <b>now</b>", timezone.now()
            )
        )


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def listed(client) -> list[tuple[str, str]]:
    resp = client.get("/api/notifications/deliveries/")
    assert resp.status_code == 200, resp.content
    assert b"s3cr3t" not in resp.content
    return sorted((row["namespace"], row["name"]) for row in resp.json()["results"])


def test_an_operator_everywhere_reads_every_delivery_with_the_destination_host_only(deliveries, operator):
    client = client_of(operator)
    assert listed(client) == [("", "chat-llm:v2"), ("team-a", "chat"), ("team-b", "code")]
    row = client.get("/api/notifications/deliveries/").json()["results"][0]
    assert (row["destination"], row["type"], row["host"], row["status"]) == (
        "chat",
        "slack",
        "hooks.slack.example",
        "pending",
    )


def test_a_namespace_operator_reads_the_deliveries_of_their_namespaces_only(deliveries, django_user_model):
    alice = django_user_model.objects.create_user(username="alice", password="x")
    NamespaceGrant.objects.create(user=alice, namespace="team-a", role="operator")
    assert listed(client_of(alice)) == [("team-a", "chat")]


def test_a_viewer_reads_no_delivery(deliveries, viewer):
    assert client_of(viewer).get("/api/notifications/deliveries/").status_code == 403
    assert client_of(viewer).get("/notifications/").status_code == 403


def test_the_notifications_page_lists_deliveries_escaped_and_without_the_url(deliveries, operator):
    resp = client_of(operator).get("/notifications/")
    assert resp.status_code == 200
    page = resp.content.decode()
    assert "paused &lt;b&gt;now&lt;/b&gt;" in page and "<b>now</b>" not in page
    assert "hooks.slack.example" in page and "s3cr3t" not in page
    assert NotificationDelivery.objects.count() == 3


def test_the_workload_list_links_to_notifications_only_for_those_who_may_open_them(deliveries, viewer, operator):
    assert 'href="/notifications/"' not in client_of(viewer).get("/").content.decode()
    assert 'href="/notifications/"' in client_of(operator).get("/").content.decode()
