"""Hardening of the web entry points, one test per finding: security headers, sign-in
throttling and auditing, hashed expiring revocable tokens, the audit's origin fields, per-namespace
grants in the API, pages and CLI, masked secrets, bounded preview and request bodies."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from rolloutui.models import AuditRecord, NamespaceGrant, PreviewJob

from .helpers import NAMESPACE, create_modelserving, manifest, reconcile, unique_name

pytestmark = pytest.mark.django_db

OTHER = "team-b"


def url(ms, suffix=""):
    return f"/api/modelservings/{ms['namespace']}/{ms['name']}/{suffix}"


def post(client, path, body, **extra):
    return client.post(path, json.dumps(body), content_type="application/json", **extra)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ms_elsewhere(db):
    """A ModelServing in namespace team-b."""
    from rolloutui.services import cluster

    name = unique_name("other")
    body = manifest(name)
    body["metadata"]["namespace"] = OTHER
    cluster.get_cluster().create_modelserving(body)
    reconcile(name, OTHER)
    return {"namespace": OTHER, "name": name}


@pytest.fixture
def ms_with_secrets(db):
    from rolloutui.services import cluster

    name = unique_name("sec")
    create_modelserving(name)
    env = [
        {"name": "HF_TOKEN", "value": "hf_live_secret"},
        {"name": "LOG_LEVEL", "value": "info"},
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
    ]
    c = cluster.get_cluster()
    ms = c.get_modelserving(NAMESPACE, name)
    roles = ms["spec"]["template"]["roles"]
    for role in roles:
        role["entryTemplate"]["spec"]["containers"][0]["env"] = env
    c.patch_modelserving(NAMESPACE, name, {"spec": {"template": {"roles": roles}}})
    reconcile(name)
    return {"namespace": NAMESPACE, "name": name}


# --- 1. Headers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/accounts/login/", "/api/modelservings/", "/healthz"])
def test_every_answer_carries_a_content_security_policy_without_inline_script(viewer_client, path):
    resp = viewer_client.get(path)
    policy = resp["Content-Security-Policy"]
    directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
    assert directives["script-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]
    assert "'unsafe-inline'" in directives["style-src"]  # Plotly's styles, see settings
    assert resp["X-Frame-Options"] == "DENY"
    assert resp["X-Content-Type-Options"] == "nosniff"
    assert resp["Referrer-Policy"] == "same-origin"


def test_the_pages_and_the_api_docs_have_no_inline_script(viewer_client, ms):
    import re

    for path in ("/", f"/modelservings/{ms['namespace']}/{ms['name']}/", "/api/docs/", "/accounts/login/"):
        html = viewer_client.get(path).content.decode()
        for tag in re.findall(r"<script\b[^>]*>", html):
            # Every script is a file (src) or data (application/json), which script-src 'self' allows.
            assert "src=" in tag or "application/json" in tag, (path, tag)


# --- 2. Sign-in: throttling, audit, tokens -------------------------------------------------------------------
def test_sign_in_is_locked_out_after_repeated_failures_even_with_the_right_password(
    client, operator, password, settings
):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        resp = client.post("/accounts/login/", {"username": "operator", "password": "wrong"})
        assert resp.status_code == 200
    last = client.post("/accounts/login/", {"username": "operator", "password": "wrong"})
    assert last.status_code == 429 and "Too many failed sign-ins" in last.content.decode()
    locked = client.post("/accounts/login/", {"username": "operator", "password": password})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address is not locked out: an attacker cannot lock a colleague out from elsewhere.
    elsewhere = Client(REMOTE_ADDR="10.9.9.9")
    assert elsewhere.post("/accounts/login/", {"username": "operator", "password": password}).status_code == 302


def test_the_token_endpoint_counts_failures_towards_the_same_lockout(client, operator, password, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        bad = post(client, "/api/auth/token/", {"username": "operator", "password": "wrong"})
        assert bad.status_code == 400 and "password" in bad.json()
    post(client, "/api/auth/token/", {"username": "operator", "password": "wrong"})
    locked = post(client, "/api/auth/token/", {"username": "operator", "password": password})
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.json()["detail"]
    assert "token" not in locked.json()


def test_sign_ins_failures_and_sign_outs_are_audited_with_the_address(client, operator, password):
    client.post("/accounts/login/", {"username": "operator", "password": "bad-guess-42"}, REMOTE_ADDR="192.0.2.7")
    client.post("/accounts/login/", {"username": "operator", "password": password}, REMOTE_ADDR="192.0.2.7")
    client.post("/accounts/logout/", REMOTE_ADDR="192.0.2.7")
    records = list(AuditRecord.objects.filter(action__in=AuditRecord.ACCOUNT_ACTIONS).order_by("id"))
    assert [(r.action, r.result, r.actor_name, r.client_ip, r.source) for r in records] == [
        ("login_failed", "error", "operator", "192.0.2.7", "page"),
        ("login", "ok", "operator", "192.0.2.7", "page"),
        ("logout", "ok", "operator", "192.0.2.7", "page"),
    ]
    assert records[1].auth_method == "session"
    assert "bad-guess-42" not in json.dumps([r.details for r in records]) + "".join(r.error for r in records)


def test_tokens_are_stored_hashed_expire_and_are_revocable_and_audited(operator, password):
    from knox.models import AuthToken

    issued = post(Client(), "/api/auth/token/", {"username": "operator", "password": password}).json()
    token = issued["token"]
    assert issued["expiry"]
    stored = AuthToken.objects.get(user=operator)
    assert token not in (stored.digest, stored.token_key) and stored.digest != token
    assert stored.expiry - timezone.now() <= timedelta(hours=12)
    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    assert Client().get("/api/modelservings/", **auth).status_code == 200
    # Revoked by its holder: refused afterwards.
    assert Client().delete("/api/auth/token/", **auth).status_code == 204
    assert Client().get("/api/modelservings/", **auth).status_code == 401
    # Expired: refused.
    second = post(Client(), "/api/auth/token/", {"username": "operator", "password": password}).json()["token"]
    AuthToken.objects.filter(user=operator).update(expiry=timezone.now() - timedelta(seconds=1))
    assert Client().get("/api/modelservings/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 401
    records = AuditRecord.objects.filter(action__startswith="token_").order_by("id")
    assert [(r.action, r.actor_name) for r in records] == [
        ("token_issued", "operator"),
        ("token_revoked", "operator"),
        ("token_issued", "operator"),
    ]
    assert records[1].auth_method == "token"


def test_a_password_change_revokes_every_token(operator, password):
    tokens = [
        post(Client(), "/api/auth/token/", {"username": "operator", "password": password}).json()["token"]
        for _ in range(2)
    ]
    operator.set_password("a-brand-new-password-5!")
    operator.save()
    for token in tokens:
        assert Client().get("/api/modelservings/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401
    assert AuditRecord.objects.filter(action="token_revoked", reason="password changed").exists()


def test_all_tokens_of_a_user_can_be_revoked_at_once(operator, password, operator_client):
    token = post(Client(), "/api/auth/token/", {"username": "operator", "password": password}).json()["token"]
    assert operator_client.delete("/api/auth/tokens/").json() == {"revoked": 1}
    assert Client().get("/api/modelservings/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


# --- 3. Audit origin -------------------------------------------------------------------------------------------
def test_a_control_from_the_page_is_audited_as_page_with_the_session_and_address(operator_client, ms):
    resp = post(
        operator_client,
        url(ms, "pause"),
        {"reason": "from the page"},
        HTTP_X_ROLLOUTUI_SOURCE="page",
        REMOTE_ADDR="198.51.100.4",
    )
    assert resp.status_code == 200
    audit = resp.json()["audit"]
    assert (audit["source"], audit["authMethod"], audit["clientIp"]) == ("page", "session", "198.51.100.4")


def test_a_token_cannot_pass_itself_off_as_the_page(operator, password, ms):
    token = post(Client(), "/api/auth/token/", {"username": "operator", "password": password}).json()["token"]
    resp = post(
        Client(),
        url(ms, "pause"),
        {"reason": "script"},
        HTTP_AUTHORIZATION=f"Token {token}",
        HTTP_X_ROLLOUTUI_SOURCE="page",
    )
    audit = resp.json()["audit"]
    assert (audit["source"], audit["authMethod"], audit["clientIp"]) == ("api", "token", "127.0.0.1")


def test_the_client_address_behind_a_trusted_proxy_is_the_one_it_saw(operator_client, ms, settings):
    settings.ROLLOUTUI_TRUSTED_PROXIES = 1
    resp = post(operator_client, url(ms, "pause"), {"reason": "x"}, HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    assert resp.json()["audit"]["clientIp"] == "203.0.113.7"


def test_the_cli_acting_as_someone_records_the_os_account_that_ran_it(operator, ms):
    from rolloutui.services import origin

    out = io.StringIO()
    call_command(
        "rollout", "pause", f"{ms['namespace']}/{ms['name']}", "--reason", "r", "--user", "operator", stdout=out
    )
    record = AuditRecord.objects.get(action="pause")
    assert (record.source, record.auth_method, record.actor_name) == ("cli", "cli", "operator")
    assert record.os_user == origin.os_user() and record.os_user


def test_the_os_user_comes_from_the_process_not_from_the_environment(monkeypatch):
    import os
    import pwd

    from rolloutui.services import origin

    monkeypatch.setenv("USER", "someone-else")
    monkeypatch.setenv("LOGNAME", "someone-else")
    monkeypatch.delenv("SUDO_USER", raising=False)
    assert origin.os_user() == pwd.getpwuid(os.getuid()).pw_name


# --- 5. Namespace scoping --------------------------------------------------------------------------------------
@pytest.fixture
def team_a_operator(django_user_model):
    """Operator of namespace default only, through a grant (no product group)."""
    user = django_user_model.objects.create_user("alice", password="alice-password-1")
    NamespaceGrant.objects.create(user=user, namespace=NAMESPACE, role="operator")
    return user


def test_a_namespace_grant_scopes_the_list_the_objects_and_the_audit(
    team_a_operator, ms, ms_elsewhere, operator_client
):
    post(operator_client, url(ms_elsewhere, "pause"), {"reason": "elsewhere"})
    client = signed_in(team_a_operator)
    names = {(r["namespace"], r["name"]) for r in client.get("/api/modelservings/").json()}
    assert (NAMESPACE, ms["name"]) in names and (OTHER, ms_elsewhere["name"]) not in names
    assert client.get(url(ms)).status_code == 200
    for suffix in ("", "manifest/", "revisions/", "pods/", "history/"):
        assert client.get(url(ms_elsewhere, suffix)).status_code == 404, suffix
    audit = client.get("/api/audit/").json()["results"]
    assert all(r["namespace"] == NAMESPACE for r in audit)


def test_a_namespace_operator_operates_there_only_and_the_refusal_is_audited(team_a_operator, ms, ms_elsewhere):
    client = signed_in(team_a_operator)
    assert post(client, url(ms, "pause"), {"reason": "mine"}).status_code == 200
    refused = post(client, url(ms_elsewhere, "pause"), {"reason": "not mine"})
    assert refused.status_code == 404  # the namespace is not even visible
    record = AuditRecord.objects.filter(namespace=OTHER, action="pause").get()
    assert (record.result, record.actor_name) == ("error", "alice") and "ControlDenied" in record.error


def test_a_viewer_everywhere_with_an_operator_grant_gets_403_elsewhere(viewer, ms, ms_elsewhere):
    NamespaceGrant.objects.create(user=viewer, namespace=NAMESPACE, role="operator")
    client = signed_in(viewer)
    assert post(client, url(ms, "pause"), {"reason": "granted"}).status_code == 200
    assert post(client, url(ms_elsewhere, "pause"), {"reason": "not granted"}).status_code == 403


def test_a_preview_or_advice_refused_where_the_namespace_is_not_visible_is_404_and_403_where_it_is(
    team_a_operator, viewer, ms_elsewhere
):
    change = {"setImage": {"role": "decode", "image": "engine:v2"}}
    for suffix in ("preview/", "advise/"):
        assert post(signed_in(team_a_operator), url(ms_elsewhere, suffix), change).status_code == 404, suffix
        assert post(signed_in(viewer), url(ms_elsewhere, suffix), change).status_code == 403, suffix


def test_a_group_grant_for_every_namespace_works_like_the_product_group(django_user_model, ms, ms_elsewhere):
    from django.contrib.auth.models import Group

    sre = Group.objects.create(name="sre")
    user = django_user_model.objects.create_user("bob", password="bob-password-12")
    user.groups.add(sre)
    NamespaceGrant.objects.create(group=sre, namespace="*", role="viewer")
    client = signed_in(user)
    names = {r["name"] for r in client.get("/api/modelservings/").json()}
    assert {ms["name"], ms_elsewhere["name"]} <= names
    assert post(client, url(ms, "pause"), {"reason": "x"}).status_code == 403


def test_the_pages_follow_the_grants(team_a_operator, ms, ms_elsewhere):
    client = signed_in(team_a_operator)
    listing = client.get("/").content.decode()
    assert ms["name"] in listing and ms_elsewhere["name"] not in listing
    assert client.get(f"/modelservings/{OTHER}/{ms_elsewhere['name']}/").status_code == 404
    detail = client.get(f"/modelservings/{NAMESPACE}/{ms['name']}/").content.decode()
    assert '"canOperate": true' in detail


def test_the_cli_follows_the_grants(team_a_operator, ms, ms_elsewhere):
    call_command(
        "rollout", "pause", f"{NAMESPACE}/{ms['name']}", "--reason", "r", "--user", "alice", stdout=io.StringIO()
    )
    with pytest.raises(CommandError, match="permission denied"):
        call_command(
            "rollout",
            "pause",
            f"{OTHER}/{ms_elsewhere['name']}",
            "--reason",
            "r",
            "--user",
            "alice",
            stdout=io.StringIO(),
        )


def test_secret_env_values_are_masked_for_viewers_and_shown_to_operators(
    viewer_client, operator_client, ms_with_secrets
):
    viewer_text = json.dumps(viewer_client.get(url(ms_with_secrets, "manifest/")).json())
    assert "hf_live_secret" not in viewer_text and "secretKeyRef" not in viewer_text
    assert '"LOG_LEVEL", "value": "info"' in viewer_text and "<masked>" in viewer_text
    operator_text = json.dumps(operator_client.get(url(ms_with_secrets, "manifest/")).json())
    assert "hf_live_secret" in operator_text and "secretKeyRef" in operator_text
    revisions = [r["number"] for r in viewer_client.get(url(ms_with_secrets, "revisions/")).json()]
    diff = viewer_client.get(url(ms_with_secrets, "revisions/diff"), {"from": revisions[0], "to": revisions[-1]}).json()
    assert diff["changes"], diff
    assert "hf_live_secret" not in json.dumps(diff) and "secretKeyRef" not in json.dumps(diff)
    full = operator_client.get(url(ms_with_secrets, "revisions/diff"), {"from": revisions[0], "to": revisions[-1]})
    assert "hf_live_secret" in json.dumps(full.json())


# --- 7. Bounded work -------------------------------------------------------------------------------------------
def test_a_viewer_may_not_preview_and_the_refusal_is_audited(viewer_client, ms):
    resp = post(viewer_client, url(ms, "preview/"), {"setImage": {"role": "decode", "image": "engine:v2"}})
    assert resp.status_code == 403
    assert AuditRecord.objects.filter(action="preview", result="error", actor_name="viewer").exists()
    assert not PreviewJob.objects.exists()


def test_a_preview_too_large_is_refused_before_anything_runs(operator_client, ms, settings):
    settings.ROLLOUTUI_PREVIEW_MAX_PODS = 100
    resp = post(operator_client, url(ms, "preview/"), {"patch": {"spec": {"replicas": 2000}}})
    assert resp.status_code == 400 and "at most 100 pods" in resp.json()["patch.spec.replicas"][0]
    assert not PreviewJob.objects.exists()


def test_previews_are_throttled_per_user(operator_client, ms, settings, django_capture_on_commit_callbacks):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"preview": "2/min", "token": "10/min"},
    }
    from rest_framework.throttling import ScopedRateThrottle

    rates_before = ScopedRateThrottle.THROTTLE_RATES
    ScopedRateThrottle.THROTTLE_RATES = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    try:
        codes = []
        for _ in range(3):
            with django_capture_on_commit_callbacks(execute=False):
                codes.append(
                    post(
                        operator_client, url(ms, "preview/"), {"setImage": {"role": "decode", "image": "e:2"}}
                    ).status_code
                )
        assert codes == [202, 202, 429]
    finally:
        # The dict it had (api_settings still holds this test's 2/min until the fixture ends).
        ScopedRateThrottle.THROTTLE_RATES = rates_before


def test_a_preview_past_its_wall_time_budget_stops_with_an_error(
    operator_client, ms, settings, celery_eager, django_capture_on_commit_callbacks
):
    settings.ROLLOUTUI_PREVIEW_SECONDS = 0
    with django_capture_on_commit_callbacks(execute=True):
        resp = post(operator_client, url(ms, "preview/"), {"setImage": {"role": "decode", "image": "engine:v2"}})
    job = operator_client.get(resp.json()["url"]).json()
    assert job["status"] == "error" and "stopped after 0 s" in job["error"]["detail"]


def test_a_preview_job_is_visible_to_its_owner_only(
    operator_client, ms, django_user_model, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import Group

    with django_capture_on_commit_callbacks(execute=False):
        job_url = post(operator_client, url(ms, "preview/"), {"setImage": {"role": "decode", "image": "e:2"}}).json()[
            "url"
        ]
    other = django_user_model.objects.create_user("carol", password="carol-password-1")
    other.groups.add(Group.objects.get(name="operators"))
    assert signed_in(other).get(job_url).status_code == 404
    assert operator_client.get(job_url).json()["status"] == "queued"


def test_a_request_body_over_the_limit_is_refused_with_413(operator_client, ms, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    resp = post(operator_client, url(ms, "pause"), {"reason": "x" * 10_000})
    assert resp.status_code == 413 and "too large" in resp.json()["detail"]


def test_a_merge_patch_nested_too_deep_is_refused_naming_the_field(operator_client, ms):
    # 40 levels: past the merge patch's 32, within the 64 of any JSON body (deeper bodies: section 9).
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["a"] = {}
        node = node["a"]
    resp = post(operator_client, url(ms, "preview/"), {"patch": {"spec": deep}})
    assert resp.status_code == 400 and "deeper than" in json.dumps(resp.json()) and "patch" in resp.json()


def test_grants_are_managed_with_the_grant_command(viewer, ms_elsewhere):
    out = io.StringIO()
    call_command("grant", "add", "--user", "viewer", "--namespace", OTHER, "--role", "operator", stdout=out)
    assert "added" in out.getvalue()
    assert post(signed_in(viewer), url(ms_elsewhere, "pause"), {"reason": "granted"}).status_code == 200
    call_command("grant", "list", stdout=out)
    assert f"user viewer: operator in {OTHER}" in out.getvalue()
    call_command("grant", "remove", "--user", "viewer", "--namespace", OTHER, "--role", "operator", stdout=out)
    assert post(signed_in(viewer), url(ms_elsewhere, "resume"), {"reason": "revoked"}).status_code == 403
    with pytest.raises(CommandError, match="user: no such"):
        call_command("grant", "add", "--user", "nobody", "--namespace", OTHER, "--role", "viewer")


def test_old_preview_jobs_are_cleaned_up_when_a_new_one_starts(operator_client, ms, django_capture_on_commit_callbacks):
    old = PreviewJob.objects.create(namespace=NAMESPACE, name=ms["name"], patch={})
    PreviewJob.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=2))
    with django_capture_on_commit_callbacks(execute=False):
        resp = post(operator_client, url(ms, "preview/"), {"setImage": {"role": "decode", "image": "e:3"}})
    assert resp.status_code == 202
    assert not PreviewJob.objects.filter(pk=old.pk).exists() and PreviewJob.objects.count() == 1


def test_a_refused_write_with_a_body_that_is_not_json_is_still_403_and_audited(viewer_client, ms):
    resp = viewer_client.post(url(ms, "pause"), "{not json", content_type="application/json")
    assert resp.status_code == 403
    assert AuditRecord.objects.filter(action="pause", result="error", actor_name="viewer").exists()


def test_a_refused_request_holding_nul_and_lone_surrogates_is_answered_400_and_audited_escaped(operator_client):
    # PostgreSQL refuses NUL in text and jsonb and a lone surrogate in jsonb; the refusal must still
    # be answered with the field and audited with what was sent, visibly escaped.
    sent = "bad\x00name\ud800"
    answer = post(operator_client, "/api/environments/", {"name": sent, "reason": "why\x00"})
    assert answer.status_code == 400, answer.content
    assert "name" in answer.json()
    record = AuditRecord.objects.filter(result=AuditRecord.Result.ERROR).latest("pk")
    stored = json.dumps(record.details) + record.error + record.reason + record.name
    assert "\x00" not in stored and "bad\\\\x00name" in stored


# --- 8. Secrets beyond the env names: the audit, InferenceServices, URLs and flags ----------------------------
def _containers(body):
    return [c for role in body["spec"]["template"]["roles"] for c in role["entryTemplate"]["spec"]["containers"]]


def test_an_applied_manifests_patch_in_the_audit_is_masked_for_viewers_and_whole_for_operators(
    operator, viewer_client, operator_client, ms
):
    import yaml

    from rolloutui.services import cluster, manifests

    stored = json.loads(json.dumps(cluster.get_cluster().get_modelserving(NAMESPACE, ms["name"])))  # a copy
    body = {k: v for k, v in stored.items() if k != "status"}
    for container in _containers(body):
        container["env"] = [{"name": "HF_TOKEN", "value": "hf_supersecret"}, {"name": "LOG", "value": "info"}]
        container["args"] = ["--api-key", "sk-secret-arg", "--db=postgres://app:pw-secret@db/x"]
    body["metadata"] = {"name": ms["name"], "namespace": NAMESPACE}
    manifests.apply(operator, manifest=yaml.safe_dump(body), reason="add a token", source="api")
    record = AuditRecord.objects.filter(action="apply", name=ms["name"]).latest("pk")
    assert "hf_supersecret" in json.dumps(record.details["patch"])  # what the fix masks is stored whole
    query = {"name": ms["name"], "action": "apply"}
    seen = json.dumps(viewer_client.get("/api/audit/", query).json())
    for secret in ("hf_supersecret", "sk-secret-arg", "pw-secret"):
        assert secret not in seen, secret
    assert "<masked>" in seen and '"LOG", "value": "info"' in seen and "postgres://app:<masked>@db/x" in seen
    whole = json.dumps(operator_client.get("/api/audit/", query).json())
    assert "hf_supersecret" in whole and "sk-secret-arg" in whole and "pw-secret" in whole


def test_an_operator_elsewhere_sees_the_audit_of_a_namespace_where_they_only_view_masked(
    operator, django_user_model, ms
):
    import yaml

    from rolloutui.services import cluster, manifests

    stored = json.loads(json.dumps(cluster.get_cluster().get_modelserving(NAMESPACE, ms["name"])))  # a copy
    body = {k: v for k, v in stored.items() if k != "status"}
    for container in _containers(body):
        container["env"] = [{"name": "HF_TOKEN", "value": "hf_supersecret"}]
    manifests.apply(operator, manifest=yaml.safe_dump(body), reason="add a token", source="api")
    bob = _user_in(django_user_model, "bob", "viewers")
    NamespaceGrant.objects.create(user=bob, namespace=OTHER, role="operator")
    seen = json.dumps(signed_in(bob).get("/api/audit/", {"name": ms["name"]}).json())
    assert "hf_supersecret" not in seen and "<masked>" in seen


def _user_in(django_user_model, username, group):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username, password="pw-123456789")
    user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def isvc_with_a_token(db):
    """InferenceService default/llm whose model has HF_TOKEN in its env, rolled out by the tick."""
    from controller.simcluster.database.store import DatabaseCluster
    from controller.simcluster.database.tick import tick
    from controller.simcluster.kserve import controller as kserve_controller
    from tests.live.helpers import config
    from tests.live.test_live_kserve import STANDARD
    from tests.live.test_live_kserve import manifest as isvc_manifest

    class Clock:
        t = 1_000_000.0

        def now(self):
            return self.t

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    body = isvc_manifest(replicas=2)
    body["spec"]["predictor"]["model"]["env"] = [{"name": "HF_TOKEN", "value": "hf_supersecret"}]
    body["spec"]["predictor"]["model"]["args"] = ["--hf-token=hf_argsecret"]
    cluster.create_object(body)
    for _ in range(20):
        cluster.clock.t += 1
        tick(cluster)
    return cluster


def test_an_inferenceservices_spec_and_history_are_masked_for_viewers_and_whole_for_operators(
    viewer_client, operator_client, isvc_with_a_token
):
    base = "/api/inferenceservices/default/llm/"
    # A control records the spec before and after: the history's diff and the audit carry the env.
    resp = post(operator_client, base + "isvc-set-image", {"image": "engine:v3", "reason": "upgrade"})
    assert resp.status_code == 200, resp.content
    viewer_sees = [viewer_client.get(base), viewer_client.get(base + "history/"), viewer_client.get("/api/audit/")]
    for answer in viewer_sees:
        assert answer.status_code == 200
        text = json.dumps(answer.json())
        assert "hf_supersecret" not in text and "hf_argsecret" not in text, answer.request["PATH_INFO"]
    state = viewer_client.get(base).json()
    assert state["manifest"]["spec"]["predictor"]["model"]["env"] == [{"name": "HF_TOKEN", "value": "<masked>"}]
    page = viewer_client.get("/inferenceservices/default/llm/")
    assert page.status_code == 200 and "hf_supersecret" not in page.content.decode()
    for path in (base, "/api/audit/"):
        assert "hf_supersecret" in json.dumps(operator_client.get(path).json()), path


# --- 9. Nesting depth: refused with 400 before any parser recurses -----------------------------------------
DEEP_JSON = "[" * 100_000 + "]" * 100_000  # ~200 kB: under the body limit


@pytest.mark.parametrize(
    "who, path, status",
    [
        pytest.param("anonymous", "/api/auth/token/", 400, id="anonymous signing in with a deep body gets 400"),
        pytest.param("viewer", "/api/manifests/validate", 400, id="a viewer validating a deep body gets 400"),
        pytest.param("viewer", "pause", 403, id="a viewer pausing with a deep body is refused 403 and audited"),
        pytest.param("operator", "pause", 400, id="an operator pausing with a deep body gets 400"),
        pytest.param("operator", "preview/", 400, id="an operator previewing with a deep body gets 400"),
    ],
)
def test_a_json_body_nested_too_deep_is_refused_without_a_500(viewer_client, operator_client, ms, who, path, status):
    client = {"anonymous": Client(), "viewer": viewer_client, "operator": operator_client}[who]
    client.raise_request_exception = False
    target = path if path.startswith("/") else url(ms, path)
    resp = client.post(target, DEEP_JSON, content_type="application/json")
    assert resp.status_code == status, resp.content[:300]
    if status == 400:
        assert resp.json()["body"] == ["the JSON body nests deeper than 64 levels"]


def test_a_json_body_just_within_the_depth_limit_is_parsed_and_brackets_in_strings_do_not_count(operator_client, ms):
    from rolloutui.api.parsers import MAX_DEPTH

    nested = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    body = '{"reason": "' + "[" * 500 + '", "x": ' + nested + "}"
    resp = operator_client.post(url(ms, "pause"), body, content_type="application/json")
    assert resp.status_code == 400 and "x" in resp.json(), resp.content  # parsed: the unknown key is named


def test_request_records_nested_too_deep_are_refused_with_400(django_user_model):
    from django.contrib.auth.models import Group
    from knox.models import AuthToken

    shipper = django_user_model.objects.create_user("shipper", password="pw-123456789")
    shipper.groups.add(Group.objects.get(name="ingesters"))
    _, token = AuthToken.objects.create(shipper)
    client = Client(raise_request_exception=False)
    resp = client.post(
        "/api/request-records/", DEEP_JSON, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert resp.status_code == 400 and "deeper than" in resp.json()["body"][0]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: " + "[" * 50_000 + "]" * 50_000, id="flow sequences 50000 deep"),
        pytest.param("a: " + "{b: " * 20_000 + "1" + "}" * 20_000, id="flow mappings 20000 deep"),
        pytest.param("".join(" " * i + "- \n" for i in range(700)), id="block sequences 700 deep"),
        pytest.param("[" * 70 + "]" * 70, id="flow sequences just past the limit"),
    ],
)
@pytest.mark.parametrize("who", ["viewer", "operator"])
def test_a_yaml_manifest_nested_too_deep_is_refused_naming_the_manifest(viewer_client, operator_client, who, text):
    client = viewer_client if who == "viewer" else operator_client
    client.raise_request_exception = False
    # A text the reader refuses is a 400 naming the manifest from validate too (its errors list
    # still carries the line for the editor); applying answers the same.
    resp = post(client, "/api/manifests/validate", {"manifest": text})
    assert resp.status_code == 400, resp.content[:300]
    assert "nests deeper than 64 levels" in resp.json()["errors"][0]["message"]
    if who == "operator":
        applied = post(client, "/api/modelservings/apply", {"manifest": text, "reason": "deep"})
        assert applied.status_code == 400 and "deeper" in applied.json()["manifest"][0]


def test_an_anonymous_deep_manifest_is_refused_401_not_500():
    client = Client(raise_request_exception=False)
    resp = post(client, "/api/manifests/validate", {"manifest": "[" * 50_000 + "]" * 50_000})
    assert resp.status_code == 401


@pytest.mark.parametrize("who", ["anonymous", "operator"])
def test_a_body_that_is_not_json_is_refused_naming_the_body(operator_client, ms, who):
    client = Client() if who == "anonymous" else operator_client
    path = "/api/auth/token/" if who == "anonymous" else url(ms, "pause")
    resp = client.post(path, "{not json", content_type="application/json")
    assert resp.status_code == 400 and list(resp.json()) == ["body"] and "JSON parse error" in resp.json()["body"][0]
