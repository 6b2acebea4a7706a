"""OpenID Connect single sign-on against a fake provider served over real HTTP in this test:
the authorization-code flow of mozilla-django-oidc end to end (redirect with state and
nonce, code exchange, RS256 ID token checked against the provider's JWKS, user info), group claims
mapped to the product's groups and namespace grants, local accounts untouched."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import Client

from rolloutui.models import AuditRecord, NamespaceGrant, OIDCIdentity

CLIENT_ID = "rolloutui-test"
CLIENT_SECRET = "client-secret-for-tests"


class FakeProvider:
    """A minimal OpenID provider: authorize (redirects back with a code), token, userinfo, jwks."""

    def __init__(self, claims: dict) -> None:
        self.claims = claims
        self.audience = CLIENT_ID
        self.id_token_sub: str | None = None  # the ID token's sub, when it should differ from the claims'
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.codes: dict[str, dict] = {}
        self.token_requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _json(self, body: dict, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                parsed = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parsed.query))
                if parsed.path == "/authorize":
                    code = uuid.uuid4().hex
                    provider.codes[code] = {"nonce": query.get("nonce"), "redirect_uri": query["redirect_uri"]}
                    target = (
                        query["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": query["state"]})
                    )
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.end_headers()
                elif parsed.path == "/jwks":
                    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(provider.key.public_key()))
                    self._json({"keys": [{**jwk, "kid": "test-key", "alg": "RS256", "use": "sig"}]})
                elif parsed.path == "/userinfo":
                    if self.headers.get("Authorization") != "Bearer access-for-tests":
                        return self._json({"error": "invalid_token"}, 401)
                    self._json(provider.claims)
                else:
                    self._json({"error": "not found"}, 404)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                provider.token_requests.append(form)
                grant = provider.codes.pop(form.get("code"), None)
                if (
                    self.path != "/token"
                    or grant is None
                    or form.get("client_secret") != CLIENT_SECRET
                    or form.get("redirect_uri") != grant["redirect_uri"]
                ):
                    return self._json({"error": "invalid_grant"}, 400)
                now = int(time.time())
                id_token = jwt.encode(
                    {
                        "iss": provider.url,
                        "sub": provider.id_token_sub or provider.claims.get("sub", "x"),
                        "aud": provider.audience,
                        "iat": now,
                        "exp": now + 300,
                        "nonce": grant["nonce"],
                    },
                    provider.key,
                    algorithm="RS256",
                    headers={"kid": "test-key"},
                )
                self._json({"access_token": "access-for-tests", "token_type": "Bearer", "id_token": id_token})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider(settings, db):
    claims = {
        "sub": "0001",
        "preferred_username": "alice",
        "email": "alice@example.com",
        "groups": ["sre", "rolloutui:team-a:operator", "rolloutui:team-b:nonsense", "unrelated"],
    }
    with FakeProvider(claims) as fake:
        settings.ROLLOUTUI_OIDC_ENABLED = True
        settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "rolloutui.oidc.RolloutOIDCBackend"]
        settings.OIDC_RP_CLIENT_ID = CLIENT_ID
        settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
        settings.OIDC_OP_AUTHORIZATION_ENDPOINT = fake.url + "/authorize"
        settings.OIDC_OP_TOKEN_ENDPOINT = fake.url + "/token"
        settings.OIDC_OP_USER_ENDPOINT = fake.url + "/userinfo"
        settings.OIDC_OP_JWKS_ENDPOINT = fake.url + "/jwks"
        settings.OIDC_RP_SIGN_ALGO = "RS256"
        settings.ROLLOUTUI_OIDC_ROLE_GROUPS = {"viewers": ["sre"], "operators": [], "approvers": []}
        yield fake


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def sign_in(client: Client, provider: FakeProvider):
    """The browser's part: start at RolloutUI, follow to the provider (real HTTP), come back."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302 and start["Location"].startswith(provider.url + "/authorize?")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(start["Location"]).query))
    assert query["client_id"] == CLIENT_ID and query["state"] and query["nonce"]
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(start["Location"], timeout=5)
        raise AssertionError("the provider did not redirect back")
    except urllib.error.HTTPError as back:
        callback = urllib.parse.urlsplit(back.headers["Location"])
    assert callback.path == "/oidc/callback/"
    return client.get(callback.path + "?" + callback.query)


def test_single_sign_on_creates_the_user_with_roles_from_the_group_claims(provider):
    client = Client()
    assert b"Sign in with single sign-on" in client.get("/accounts/login/").content
    done = sign_in(client, provider)
    assert done.status_code == 302 and done["Location"] == "/"
    from django.contrib.auth.models import User

    alice = User.objects.get(username="alice")
    assert not alice.has_usable_password()
    assert [g.name for g in alice.groups.all()] == ["viewers"]
    assert {(g.namespace, g.role) for g in NamespaceGrant.objects.filter(user=alice)} == {("team-a", "operator")}
    assert client.get("/api/modelservings/").status_code == 200
    login = AuditRecord.objects.get(action="login")
    assert (login.actor_name, login.auth_method) == ("alice", "oidc")
    # The provider got the code with this client's credentials, over HTTP.
    assert provider.token_requests[0]["client_id"] == CLIENT_ID


def test_roles_follow_the_claims_at_the_next_sign_in(provider):
    sign_in(Client(), provider)
    provider.claims = {**provider.claims, "groups": ["rolloutui:team-c:viewer"]}
    sign_in(Client(), provider)
    from django.contrib.auth.models import User

    alice = User.objects.get(username="alice")
    assert not alice.groups.exists()
    assert {(g.namespace, g.role) for g in NamespaceGrant.objects.filter(user=alice)} == {("team-c", "viewer")}


def test_a_local_account_is_never_taken_over_and_the_provider_user_gets_a_distinct_name(provider, django_user_model):
    local = django_user_model.objects.create_user("alice", password="local-password-77")
    client = Client()
    sign_in(client, provider)
    # The provider's alice is a new account of her own, with another name and no password.
    signed_in = django_user_model.objects.get(pk=client.session["_auth_user_id"])
    assert signed_in.pk != local.pk and signed_in.username == "alice-2"
    assert not signed_in.has_usable_password()
    assert OIDCIdentity.objects.get(user=signed_in).subject == "0001"
    # The local account is left as it was: its password, no roles from the claims.
    local.refresh_from_db()
    assert local.check_password("local-password-77") and not local.groups.exists()
    assert not NamespaceGrant.objects.filter(user=local).exists()
    again = Client().post("/accounts/login/", {"username": "alice", "password": "local-password-77"})
    assert again.status_code == 302


def test_users_are_matched_on_issuer_and_subject_so_a_renamed_user_stays_the_same_account(provider, django_user_model):
    first = Client()
    sign_in(first, provider)
    alice = django_user_model.objects.get(username="alice")
    provider.claims = {**provider.claims, "preferred_username": "alice.smith", "email": "alice.smith@example.com"}
    renamed = Client()
    sign_in(renamed, provider)
    assert int(renamed.session["_auth_user_id"]) == alice.pk
    assert django_user_model.objects.count() == 1
    identity = OIDCIdentity.objects.get(user=alice)
    assert (identity.issuer, identity.subject, identity.preferred_username) == (provider.url, "0001", "alice.smith")


def test_another_provider_user_who_takes_a_used_name_is_another_account(provider, django_user_model):
    sign_in(Client(), provider)
    alice = django_user_model.objects.get(username="alice")
    # The provider let a new user (another subject) take the name alice.
    provider.claims = {**provider.claims, "sub": "0002", "groups": []}
    client = Client()
    sign_in(client, provider)
    newcomer = django_user_model.objects.get(pk=client.session["_auth_user_id"])
    assert newcomer.pk != alice.pk and newcomer.username == "alice-2"
    assert not newcomer.groups.exists() and not NamespaceGrant.objects.filter(user=newcomer).exists()


def test_the_approver_group_mapping_and_a_namespace_approver_grant_are_applied(provider, settings):
    from django.contrib.auth.models import User

    from rolloutui.services import access

    settings.ROLLOUTUI_OIDC_ROLE_GROUPS = {"viewers": [], "operators": [], "approvers": ["release-board"]}
    provider.claims = {**provider.claims, "groups": ["release-board", "rolloutui:team-a:approver"]}
    sign_in(Client(), provider)
    alice = User.objects.get(username="alice")
    assert [g.name for g in alice.groups.all()] == ["approvers"]
    assert {(g.namespace, g.role) for g in NamespaceGrant.objects.filter(user=alice)} == {("team-a", "approver")}
    assert access.allowed(alice, "releases.approve_modelversion", None)
    provider.claims = {**provider.claims, "groups": ["rolloutui:team-a:approver"]}
    sign_in(Client(), provider)
    alice = User.objects.get(username="alice")
    assert not alice.groups.exists()
    assert access.allowed(alice, "releases.approve_modelversion", "team-a")
    assert access.allowed(alice, "rolloutui.view_modelserving", "team-a")
    assert not access.allowed(alice, "releases.approve_modelversion", "team-b")


def test_a_userinfo_answer_for_another_subject_is_refused(provider, django_user_model):
    # OpenID Connect Core 5.3.2: the UserInfo sub must equal the ID token's, else its claims
    # must not be used. The fake provider signs the ID token for claims["sub"]; userinfo differs.
    provider.id_token_sub = "someone-else"
    client = Client()
    sign_in(client, provider)
    assert "_auth_user_id" not in client.session
    assert not django_user_model.objects.exists()


def test_an_id_token_for_another_client_is_refused(provider):
    provider.audience = "some-other-app"
    client = Client()
    sign_in(client, provider)
    assert "_auth_user_id" not in client.session


def test_single_sign_on_is_absent_unless_configured(client, db):
    assert client.get("/oidc/authenticate/").status_code == 404
    assert b"single sign-on" not in client.get("/accounts/login/").content


def test_an_account_from_before_identities_is_linked_by_hand_and_then_signs_in(provider, django_user_model):
    import io

    from django.core.management import call_command

    legacy = django_user_model.objects.create_user("alice")  # made by an earlier sign-on: no identity
    legacy.set_unusable_password()
    legacy.save()
    out = io.StringIO()
    call_command("oidc_identity", "link", "--user", "alice", "--issuer", provider.url, "--subject", "0001", stdout=out)
    assert "linked 0001" in out.getvalue()
    client = Client()
    sign_in(client, provider)
    assert int(client.session["_auth_user_id"]) == legacy.pk
    linked = AuditRecord.objects.get(action="oidc_identity_linked")
    assert (linked.source, linked.auth_method, linked.name) == ("cli", "cli", "alice") and linked.os_user
