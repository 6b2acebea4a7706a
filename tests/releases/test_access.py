"""Release records follow the namespace grants exactly as ModelServings do (``services.access``):
a release, a target or an environment is shown only to whoever may view its namespace; a record
of a namespace the user may not view answers 404, as if it did not exist. Model versions are not
namespaced: anyone who may view somewhere sees the registry, but the releases listed under a
version are only those of the namespaces the user may view."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from rolloutui.models import NamespaceGrant
from rolloutui.services.releases import records
from tests.conftest import TEST_PASSWORD

from .conftest import version_values

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_teams(operator, approver):
    """staging -> team-a/chat, production -> team-b/chat, one planned release on each (no cluster
    needed: planning writes records only)."""
    records.register_model_version(operator, version_values("v1"), source="api")
    records.approve(approver, "chat-llm", "v1", reason="eval passed", source="api")
    for env, namespace, approval in (("staging", "team-a", False), ("production", "team-b", True)):
        records.create_environment(
            operator,
            {
                "name": env,
                "requiresApproval": approval,
                "targets": [{"namespace": namespace, "name": "chat", "roles": ["decode"]}],
            },
            source="api",
        )
        records.create_release(
            operator,
            {"environment": env, "modelVersion": "chat-llm:v1", "reason": f"secret plan of {namespace}"},
            source="api",
        )


def client_of(django_user_model, username: str, namespace: str) -> Client:
    user = django_user_model.objects.create_user(username=username, password=TEST_PASSWORD)
    NamespaceGrant.objects.create(user=user, namespace=namespace, role="viewer")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice(django_user_model):
    """Views team-a only."""
    return client_of(django_user_model, "alice", "team-a")


def test_the_release_list_shows_only_releases_of_namespaces_the_user_may_view(two_teams, alice, viewer_client):
    mine = alice.get("/api/deployment-revisions/").json()["results"]
    assert [(r["target"]["namespace"], r["reason"]) for r in mine] == [("team-a", "secret plan of team-a")]
    assert alice.get("/api/deployment-revisions/?namespace=team-b").json()["results"] == []
    everyone = viewer_client.get("/api/deployment-revisions/").json()["results"]
    assert {r["target"]["namespace"] for r in everyone} == {"team-a", "team-b"}


def test_environments_list_only_targets_the_user_may_view_and_others_are_not_found(two_teams, alice):
    listed = alice.get("/api/environments/").json()["results"]
    assert [e["name"] for e in listed] == ["staging"]
    assert [t["namespace"] for t in listed[0]["targets"]] == ["team-a"]
    assert alice.get("/api/environments/staging/").status_code == 200
    assert alice.get("/api/environments/production/").status_code == 404


def test_an_environment_shows_only_its_targets_in_namespaces_the_user_may_view(two_teams, operator, alice):
    records.create_environment(
        operator,
        {
            "name": "canary",
            "targets": [
                {"namespace": "team-a", "name": "chat-canary", "roles": ["decode"]},
                {"namespace": "team-b", "name": "chat-canary", "roles": ["decode"]},
            ],
        },
        source="api",
    )
    shown = alice.get("/api/environments/canary/").json()
    assert [t["namespace"] for t in shown["targets"]] == ["team-a"]


def test_a_model_version_lists_only_its_releases_in_namespaces_the_user_may_view(two_teams, alice):
    assert [v["key"] for v in alice.get("/api/model-versions/").json()["results"]] == ["chat-llm:v1"]
    detail = alice.get("/api/model-versions/chat-llm/v1/").json()
    assert [(d["namespace"], d["environment"]) for d in detail["deployments"]] == [("team-a", "staging")]


def test_the_releases_page_embeds_only_records_of_namespaces_the_user_may_view(two_teams, alice):
    html = alice.get("/releases/").content.decode()
    assert "team-b" not in html and "secret plan of team-b" not in html
    found = re.search(r'<script id="releases-data" type="application/json">(.*?)</script>', html, re.S)
    data = json.loads(found.group(1))
    assert [e["name"] for e in data["environments"]] == ["staging"]
    assert [r["target"]["namespace"] for r in data["history"]] == ["team-a"]


def test_a_user_who_may_view_nowhere_sees_no_release_records(two_teams, django_user_model):
    nobody = django_user_model.objects.create_user(username="nobody", password=TEST_PASSWORD)
    client = Client()
    client.force_login(nobody)
    assert client.get("/api/deployment-revisions/").status_code == 403
    assert client.get("/api/model-versions/").status_code == 403
    assert client.get("/releases/").status_code == 403


def test_a_namespace_operator_plans_and_deploys_releases_of_their_namespace_only(world, django_user_model):
    bob = django_user_model.objects.create_user(username="bob", password=TEST_PASSWORD)
    NamespaceGrant.objects.create(user=bob, namespace="default", role="operator")
    client = Client()
    client.force_login(bob)

    def post(path, body):
        return client.post(path, json.dumps(body), content_type="application/json")

    planned = post(
        "/api/deployment-revisions/", {"environment": "staging", "modelVersion": "chat-llm:v2", "reason": "v2"}
    )
    assert planned.status_code == 201, planned.content
    deployed = post("/api/deployment-revisions/default/chat/1/deploy", {"reason": "v2 to staging"})
    assert deployed.status_code == 200, deployed.content
    # production's target is in prod, where bob may not even look: as if it did not exist.
    elsewhere = post(
        "/api/deployment-revisions/", {"environment": "production", "modelVersion": "chat-llm:v1", "reason": "x"}
    )
    assert elsewhere.status_code == 400, elsewhere.content
    assert elsewhere.json()["environment"] == ["environment 'production' does not exist (environments: staging)"]


def test_the_releases_page_lets_a_namespace_operator_deploy_in_their_namespace_only(
    world, operator, django_user_model, page
):
    from playwright.sync_api import expect

    from tests.dashboard.offline import OfflineSite

    bob = django_user_model.objects.create_user(username="bob", password=TEST_PASSWORD)
    NamespaceGrant.objects.create(user=bob, namespace="default", role="operator")
    NamespaceGrant.objects.create(user=bob, namespace="prod", role="viewer")
    for env in ("staging", "production"):
        records.create_release(
            operator, {"environment": env, "modelVersion": "chat-llm:v1", "reason": env}, source="api"
        )
    client = Client()
    client.force_login(bob)
    site = OfflineSite(page, client)
    page.goto(site.url("/releases/"))
    mine = page.locator("tr[data-release='default/chat/1'] button[data-action=deploy]")
    theirs = page.locator("tr[data-release='prod/chat/1'] button[data-action=deploy]")
    expect(mine).to_be_enabled()
    expect(theirs).to_be_disabled()
    expect(theirs).to_have_attribute("title", "Needs the permission rolloutui.operate_modelserving in prod")
