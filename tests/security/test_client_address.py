"""The client's address is decided by one function (``rolloutui.services.origin.client_ip``) from the
peer address and exactly the configured number of trusted proxies, and every consumer of an address
uses it: the API's rate limits, the sign-in lockout (django-axes), the sign-in rate per address, the
audit and the access log.

The finding: the DRF throttles keyed on the raw ``X-Forwarded-For`` (DRF's ``get_ident`` without
``NUM_PROXIES`` takes the whole header as sent), so a client that changed the header on every try was
never throttled. The rule followed is the one of DRF's ``NUM_PROXIES`` and of every reverse proxy:
each proxy appends the address it saw to ``X-Forwarded-For``, so only the last N entries (N trusted
proxies) were written by someone we trust; everything to their left is what the client claimed.
"""

from __future__ import annotations

import ipaddress
import json
import logging

import pytest
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import given
from hypothesis import strategies as st

from rolloutui.models import AuditRecord
from rolloutui.services import origin

pytestmark = pytest.mark.django_db

TOKEN_PATH = "/api/auth/token/"
SIGN_IN_PATH = "/accounts/login/"


def _token_try(client: Client, username: str, **extra):
    body = json.dumps({"username": username, "password": "wrong-guess"})
    return client.post(TOKEN_PATH, body, content_type="application/json", **extra)


def _token_rate(settings) -> int:
    return int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["token"].split("/")[0])


# --- the one function ---------------------------------------------------------------------------------
ADDRESS_CASES = {
    "no proxy trusted: the peer, whatever the header says": (0, "192.0.2.1", "6.6.6.6", "192.0.2.1"),
    "no proxy trusted and no header: the peer": (0, "192.0.2.1", None, "192.0.2.1"),
    "one proxy: the address it appended": (1, "10.0.0.9", "6.6.6.6, 203.0.113.7", "203.0.113.7"),
    "one proxy that replaced the header": (1, "10.0.0.9", "203.0.113.7", "203.0.113.7"),
    "two proxies: the address the outer one appended": (2, "10.0.0.9", "6.6.6.6, 203.0.113.7, 10.1.0.4", "203.0.113.7"),
    "fewer entries than proxies: the peer (the request bypassed them)": (2, "10.0.0.9", "203.0.113.7", "10.0.0.9"),
    "an entry that is not an address: none": (1, "10.0.0.9", "6.6.6.6, not-an-ip", None),
    "ipv6 is normalised": (1, "10.0.0.9", "2001:DB8::1", "2001:db8::1"),
}


@pytest.mark.parametrize("case", list(ADDRESS_CASES), ids=str)
def test_the_client_address_is_the_peer_or_the_entry_the_outermost_trusted_proxy_appended(case, settings):
    hops, peer, forwarded, expected = ADDRESS_CASES[case]
    settings.ROLLOUTUI_TRUSTED_PROXIES = hops
    extra = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    assert origin.client_ip(RequestFactory().get("/", **extra)) == expected


addresses = st.ip_addresses().map(str)


@given(
    hops=st.integers(min_value=0, max_value=3),
    trusted=st.lists(addresses, min_size=3, max_size=3),
    claimed=st.lists(addresses, max_size=5),
)
def test_whatever_a_client_prepends_to_x_forwarded_for_the_decided_address_stays_the_same(hops, trusted, claimed):
    from django.test import override_settings

    # The entries the trusted proxies appended (the last `hops`), behind whatever the client sent.
    appended = trusted[:hops]
    with override_settings(ROLLOUTUI_TRUSTED_PROXIES=hops):
        honest = RequestFactory().get("/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=", ".join(appended))
        forged = RequestFactory().get(
            "/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=", ".join([*claimed, *appended])
        )
        decided = origin.client_ip(honest)
        assert origin.client_ip(forged) == decided
        assert decided == (str(ipaddress.ip_address(appended[0])) if hops else "10.0.0.9")


# --- the API's rate limits --------------------------------------------------------------------------
def _views_with_throttles():
    def walk(patterns):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns)
            elif isinstance(entry, URLPattern):
                view = getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)
                if view is not None and getattr(view, "throttle_classes", None):
                    yield view

    return sorted(set(walk(get_resolver().url_patterns)), key=lambda v: v.__qualname__)


def test_every_throttle_of_every_view_keys_anonymous_clients_on_the_one_client_address_function():
    from rolloutui.throttling import ClientAddressIdent

    views = _views_with_throttles()
    assert views, "no throttled view found: the walk over the URL map is broken"
    for view in views:
        for throttle in view.throttle_classes:
            assert issubclass(throttle, ClientAddressIdent), f"{view.__qualname__}: {throttle.__qualname__}"


def test_rotating_x_forwarded_for_does_not_escape_the_token_rate_when_no_proxy_is_trusted(settings):
    settings.ROLLOUTUI_TRUSTED_PROXIES = 0
    client = Client(REMOTE_ADDR="198.51.100.20")
    rate = _token_rate(settings)
    # A different claimed address and user name on every try (a new name: never the lockout's 429).
    answers = [_token_try(client, f"user{i}", HTTP_X_FORWARDED_FOR=f"6.6.{i}.6").status_code for i in range(rate + 1)]
    assert answers[:rate] == [400] * rate
    assert answers[rate] == 429


def test_behind_one_trusted_proxy_the_token_rate_counts_the_address_the_proxy_saw(settings):
    settings.ROLLOUTUI_TRUSTED_PROXIES = 1
    client = Client(REMOTE_ADDR="10.0.0.9")  # the Ingress controller's pod
    rate = _token_rate(settings)
    answers = [
        _token_try(client, f"user{i}", HTTP_X_FORWARDED_FOR=f"6.6.{i}.6, 203.0.113.7").status_code
        for i in range(rate + 1)
    ]
    assert answers[rate] == 429
    # Another client behind the same proxy has its own count.
    assert _token_try(client, "someone", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 400


# --- sign-in --------------------------------------------------------------------------------------------
def test_rotating_x_forwarded_for_does_not_escape_the_sign_in_lockout(client, operator, password, settings):
    settings.ROLLOUTUI_TRUSTED_PROXIES = 0
    for i in range(settings.AXES_FAILURE_LIMIT):
        client.post(SIGN_IN_PATH, {"username": "operator", "password": "wrong"}, HTTP_X_FORWARDED_FOR=f"6.6.{i}.6")
    locked = client.post(SIGN_IN_PATH, {"username": "operator", "password": password}, HTTP_X_FORWARDED_FOR="7.7.7.7")
    assert locked.status_code == 429


def _sign_in_rate(settings) -> int:
    return int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["login"].split("/")[0])


def test_rotating_user_names_from_one_address_is_refused_past_the_sign_in_rate(settings):
    rate = _sign_in_rate(settings)
    one_address = Client(REMOTE_ADDR="198.51.100.30")
    answers = [
        one_address.post(SIGN_IN_PATH, {"username": f"guess{i}", "password": "wrong"}).status_code
        for i in range(rate + 1)
    ]
    assert answers[:rate] == [200] * rate  # the form again, with its error
    refused = one_address.post(SIGN_IN_PATH, {"username": "another", "password": "wrong"})
    assert answers[rate] == 429 and refused.status_code == 429
    assert "Too many sign-in attempts from this address" in refused.content.decode()
    assert int(refused["Retry-After"]) > 0
    # Another address is not affected.
    assert Client(REMOTE_ADDR="198.51.100.31").post(SIGN_IN_PATH, {"username": "x", "password": "y"}).status_code == 200


def test_a_sign_in_refused_by_the_address_rate_is_audited_with_the_name_tried_and_never_the_password(settings):
    rate = _sign_in_rate(settings)
    one_address = Client(REMOTE_ADDR="198.51.100.32")
    for i in range(rate):
        one_address.post(SIGN_IN_PATH, {"username": f"guess{i}", "password": "wrong"})
    one_address.post(SIGN_IN_PATH, {"username": "last-guess", "password": "secret-guess-9"})
    record = AuditRecord.objects.filter(action="login_failed", actor_name="last-guess").get()
    assert (record.result, record.client_ip, record.details.get("throttled")) == ("error", "198.51.100.32", True)
    assert "secret-guess-9" not in json.dumps(record.details) + record.error


def test_a_sign_in_page_view_is_never_charged_to_the_sign_in_rate(settings):
    rate = _sign_in_rate(settings)
    one_address = Client(REMOTE_ADDR="198.51.100.33")
    for _ in range(rate + 2):
        assert one_address.get(SIGN_IN_PATH).status_code == 200
    assert one_address.post(SIGN_IN_PATH, {"username": "x", "password": "y"}).status_code == 200


# --- the audit and the access log ----------------------------------------------------------------------
def test_the_access_log_records_the_decided_client_address_not_the_raw_peer(settings, caplog):
    settings.ROLLOUTUI_TRUSTED_PROXIES = 1
    with caplog.at_level(logging.INFO, logger="rolloutui.access"):
        Client(REMOTE_ADDR="10.0.0.9").get(SIGN_IN_PATH, HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    (line,) = [r for r in caplog.records if r.name == "rolloutui.access"]
    assert line.remote == "203.0.113.7"


def test_a_failed_sign_in_is_audited_with_the_peer_when_no_proxy_is_trusted(settings):
    settings.ROLLOUTUI_TRUSTED_PROXIES = 0
    Client(REMOTE_ADDR="192.0.2.44").post(
        SIGN_IN_PATH, {"username": "someone", "password": "x"}, HTTP_X_FORWARDED_FOR="6.6.6.6"
    )
    assert AuditRecord.objects.get(action="login_failed").client_ip == "192.0.2.44"


def test_under_asgi_the_peer_is_the_scopes_client_whatever_x_forwarded_for_says(settings):
    # Django's ASGIRequest serves the ASGI scope's "client" as REMOTE_ADDR. Daphne puts the TCP peer
    # there unless --proxy-headers, which the shipped commands leave off (test_deploy_manifests.py).
    import io

    from django.core.handlers.asgi import ASGIRequest

    settings.ROLLOUTUI_TRUSTED_PROXIES = 0
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"x-forwarded-for", b"6.6.6.6")],
        "client": ("192.0.2.9", 50000),
        "server": ("127.0.0.1", 8000),
    }
    assert origin.client_ip(ASGIRequest(scope, io.BytesIO())) == "192.0.2.9"
