"""The logs never keep a secret from a URL's query string: the single sign-on callback's ``code``
and ``state``, a token, a key, a signature. The access log (``rolloutui.access``) and any log
record that carries the request (Django's ``django.request`` warnings for 4xx and 5xx answers) log
the path with those values masked; the parameter names stay, so a reader still sees what was asked.

Daphne's own access log (plain text, whole URLs) is off in every shipped command (checked with the
manifests: tests/kubernetes/test_deploy_manifests.py)."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from rolloutui.jsonlog import JSONFormatter

pytestmark = pytest.mark.django_db

MASKED_QUERIES = {
    "the sign-on callback's code and state": (
        "/oidc/callback/?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj",
        "/oidc/callback/?code=<masked>&state=<masked>",
    ),
    "a token, a key and a password by name": (
        "/x?token=t1&api_key=k1&PASSWORD=p1&id_token_hint=h1&session_state=s1",
        "/x?token=<masked>&api_key=<masked>&PASSWORD=<masked>&id_token_hint=<masked>&session_state=<masked>",
    ),
    "signatures and credentials": (
        "/x?sig=a&signature=b&X-Amz-Credential=c&auth=d",
        "/x?sig=<masked>&signature=<masked>&X-Amz-Credential=<masked>&auth=<masked>",
    ),
    "ordinary parameters stay as sent": (
        "/api/audit/?page=2&namespace=team-a&q=a%20b",
        "/api/audit/?page=2&namespace=team-a&q=a%20b",
    ),
    "a percent-encoded secret name is still recognised": (
        "/x?%63ode=abc",
        "/x?%63ode=<masked>",
    ),
    "the password of a URL in any value": (
        "/accounts/login/?next=https://user:hunter2@example.com/",
        "/accounts/login/?next=https://user:<masked>@example.com/",
    ),
    "an empty value has nothing to hide": ("/x?code=&page=1", "/x?code=&page=1"),
    "no query string": ("/api/modelservings/", "/api/modelservings/"),
}


@pytest.mark.parametrize("case", list(MASKED_QUERIES), ids=str)
def test_secret_looking_query_values_are_masked_in_the_logged_path(case):
    from django.test import RequestFactory

    from rolloutui.middleware import masked_path

    full, expected = MASKED_QUERIES[case]
    assert masked_path(RequestFactory().get(full)) == expected


def test_the_access_log_line_of_a_sign_on_callback_never_holds_its_code_or_state(caplog):
    with caplog.at_level(logging.INFO, logger="rolloutui.access"):
        Client().get("/oidc/callback/?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj")
    (record,) = [r for r in caplog.records if r.name == "rolloutui.access"]
    line = JSONFormatter().format(record)
    assert "SplxlOBeZQQYbYS6WxSbIA" not in line and "af0ifjsldkj" not in line
    assert "/oidc/callback/?code=<masked>&state=<masked>" in line


def test_a_django_warning_that_carries_the_request_logs_it_without_the_secret_query_values(caplog):
    # Single sign-on is off: the callback answers 404, which django.request logs with the request.
    with caplog.at_level(logging.WARNING, logger="django.request"):
        Client().get("/oidc/callback/?code=SplxlOBeZQQYbYS6WxSbIA&state=af0ifjsldkj")
    records = [r for r in caplog.records if r.name == "django.request"]
    assert records and all(hasattr(r, "request") for r in records)
    for record in records:
        line = JSONFormatter().format(record)
        assert "SplxlOBeZQQYbYS6WxSbIA" not in line and "af0ifjsldkj" not in line, line
        assert "code=<masked>" in line
