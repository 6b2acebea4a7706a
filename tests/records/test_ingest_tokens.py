"""Long-lived ingest tokens for log shippers: issued by an operator (API or ``manage.py
ingest_token``) for an account that may send request records, shown once, stored as a digest,
with an optional expiry; they authenticate ``POST /api/request-records/`` and nothing else, can be
listed (never their value) and revoked, record when they were last used, and every issuance and
revocation (refused ones too) is audited."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from controller.models import RequestRecord
from rolloutui.models import AuditRecord, IngestToken
from tests.records.test_api import ingester, post, record  # noqa: F401

pytestmark = pytest.mark.django_db

TOKENS = "/api/ingest-tokens/"


def issue(client, **body):
    body = {"account": "shipper", "name": "fluent-bit in production", **body}
    return client.post(TOKENS, json.dumps(body), content_type="application/json")


def shipper_client(token: str, keyword: str = "Token") -> Client:
    return Client(HTTP_AUTHORIZATION=f"{keyword} {token}")


def test_an_operator_issues_a_token_shown_once_and_stored_as_a_digest(ingester, operator_client):  # noqa: F811
    resp = issue(operator_client, expiresInDays=90, reason="new log shipper")
    assert resp.status_code == 201, resp.content
    body = resp.json()
    token = body["token"]
    assert token.startswith("rui_ingest_") and len(token) > 40
    row = IngestToken.objects.get()
    assert row.digest == hashlib.sha256(token.encode()).hexdigest() and token not in json.dumps(
        list(IngestToken.objects.values()), default=str
    )
    assert body["ingestToken"]["expiresAt"] and "token" not in body["ingestToken"]
    listed = operator_client.get(TOKENS).json()
    assert [t["id"] for t in listed] == [row.pk] and token not in json.dumps(listed)
    assert listed[0]["account"] == "shipper" and listed[0]["lastUsedAt"] is None
    issued = AuditRecord.objects.get(action="ingest_token_issued")
    assert (issued.actor_name, issued.source, issued.reason, issued.result) == (
        "operator",
        "api",
        "new log shipper",
        "ok",
    )
    assert issued.details["tokenKey"] == row.token_key and token not in json.dumps(issued.details)


@pytest.mark.parametrize("keyword", ["Token", "Bearer"])
def test_the_token_sends_request_records_and_its_use_is_recorded(ingester, operator_client, keyword):  # noqa: F811
    token = issue(operator_client).json()["token"]
    resp = post(shipper_client(token, keyword), [record(0)])
    assert resp.status_code == 201, resp.content
    assert RequestRecord.objects.count() == 1
    assert IngestToken.objects.get().last_used_at is not None


def test_the_token_authenticates_nothing_but_request_records(ingester, operator_client):  # noqa: F811
    token = issue(operator_client).json()["token"]
    shipper = shipper_client(token)
    assert shipper.get("/api/modelservings/").status_code == 401
    assert shipper.get("/api/audit/").status_code == 401
    assert shipper.get(TOKENS).status_code == 401
    assert shipper.post("/api/auth/token/", {}).status_code in (400, 401)


def test_a_revoked_or_expired_token_is_refused_and_the_revocation_is_audited(ingester, operator_client):  # noqa: F811
    first, second = (issue(operator_client).json() for _ in range(2))
    resp = operator_client.delete(f"{TOKENS}{first['ingestToken']['id']}/")
    assert resp.status_code == 200 and resp.json()["ingestToken"]["revokedAt"]
    assert post(shipper_client(first["token"]), [record(0)]).status_code == 401
    revoked = AuditRecord.objects.get(action="ingest_token_revoked")
    assert (revoked.actor_name, revoked.result, revoked.details["tokenKey"]) == (
        "operator",
        "ok",
        first["ingestToken"]["tokenKey"],
    )
    IngestToken.objects.filter(pk=second["ingestToken"]["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert post(shipper_client(second["token"]), [record(1)]).status_code == 401
    assert not RequestRecord.objects.exists()


def test_a_token_of_a_disabled_account_is_refused(ingester, operator_client):  # noqa: F811
    token = issue(operator_client).json()["token"]
    ingester.is_active = False
    ingester.save()
    assert post(shipper_client(token), [record(0)]).status_code == 401


@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"account": "nobody"}, "account", "no account"),
        ({"account": "viewer"}, "account", "may not send request records"),
        ({"name": ""}, "name", "required"),
        ({"expiresInDays": 0}, "expiresInDays", "1 to 3650"),
        ({"expiresInDays": "soon"}, "expiresInDays", "whole number of days"),
    ],
)
def test_bad_input_is_refused_naming_the_field(ingester, viewer, operator_client, body, field, words):  # noqa: F811
    resp = issue(operator_client, **body)
    assert resp.status_code == 400, resp.content
    assert words in resp.json()[field][0]
    assert not IngestToken.objects.exists()
    assert AuditRecord.objects.get(action="ingest_token_issued").result == "error"


def test_a_viewer_may_neither_issue_nor_list_nor_revoke_and_the_attempt_is_audited(
    ingester,  # noqa: F811
    operator_client,
    viewer_client,
):
    token_id = issue(operator_client).json()["ingestToken"]["id"]
    assert issue(viewer_client).status_code == 403
    assert viewer_client.get(TOKENS).status_code == 403
    assert viewer_client.delete(f"{TOKENS}{token_id}/").status_code == 403
    refused = AuditRecord.objects.filter(action__startswith="ingest_token_", result="error", actor_name="viewer")
    assert {r.action for r in refused} == {"ingest_token_issued", "ingest_token_revoked"}
    assert IngestToken.objects.get().revoked_at is None


def test_the_command_issues_lists_and_revokes_tokens_as_an_audited_user(ingester, operator):  # noqa: F811
    out = io.StringIO()
    call_command("ingest_token", "issue", "--account", "shipper", "--name", "vector", "--user", "operator", stdout=out)
    token = next(line for line in out.getvalue().splitlines() if line.startswith("rui_ingest_"))
    assert post(shipper_client(token), [record(0)]).status_code == 201
    out = io.StringIO()
    call_command("ingest_token", "list", "--user", "operator", stdout=out)
    row = IngestToken.objects.get()
    assert row.token_key in out.getvalue() and "vector" in out.getvalue() and token not in out.getvalue()
    call_command("ingest_token", "revoke", str(row.pk), "--user", "operator", stdout=io.StringIO())
    assert post(shipper_client(token), [record(1)]).status_code == 401
    sources = set(AuditRecord.objects.filter(action__startswith="ingest_token_").values_list("source", "auth_method"))
    assert sources == {("cli", "cli")}
    with pytest.raises(CommandError, match="account: no account 'ghost'"):
        call_command("ingest_token", "issue", "--account", "ghost", "--name", "x", "--user", "operator")
