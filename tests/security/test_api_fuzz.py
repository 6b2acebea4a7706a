"""API fuzzing: schemathesis generates requests from the OpenAPI schema for every
operation and sends each as an operator (token), a viewer (token) and anonymously, through Django's
WSGI handler. Every answer must be below 500, and every 4xx a JSON object saying what is wrong:
a 400 names the field (or the part of the request: ``non_field_errors``, ``manifest``, ``body``),
401, 403, 404, 405, 409, 413 and 429 carry a ``detail`` (``names_the_field``).

Bounded: ROLLOUTUI_FUZZ_EXAMPLES generated requests per operation on average (default 12; one
Hypothesis test draws the operation, then a valid or an invalid request for it), each sent three
times. Half of the requests to a ModelServing's paths name an existing one, so the validation behind
the 404 is reached too. The users and the ModelServing are made once for the whole run.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.dashboard.helpers import NAMESPACE, create_modelserving

EXAMPLES = int(os.environ.get("ROLLOUTUI_FUZZ_EXAMPLES", "12"))
NAME = "fuzz-target"


def _schema():
    raw = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(raw)
    loaded.app = WSGIHandler()
    return loaded


schema = _schema()


@pytest.fixture
def requests_keep_the_test_connection():
    """Django's test Client unhooks close_old_connections while it handles a request; the WSGI
    handler schemathesis calls does not, so on PostgreSQL the first request would close the test
    transaction's connection and every later one would answer 500 ("the connection is closed")."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def identities(db, django_user_model, requests_keep_the_test_connection):
    from django.contrib.auth.models import Group
    from knox.models import AuthToken

    headers = {"anonymous": {}}
    for username, group in (("fuzz-operator", "operators"), ("fuzz-viewer", "viewers")):
        user = django_user_model.objects.create_user(username, password="fuzz-password-123")
        user.groups.add(Group.objects.get(name=group))
        _, token = AuthToken.objects.create(user)
        headers[group] = {"Authorization": f"Token {token}"}
    create_modelserving(NAME)
    return headers


# Statuses whose answer says what happened in ``detail`` (DRF's shape for them, rolloutui/api/errors.py).
DETAIL_STATUSES = {401, 403, 404, 405, 406, 409, 413, 415, 429}
# Keys of a 400 that name no field of the request: what went wrong is in the other keys.
NOT_A_FIELD = {"detail", "cluster"}


def names_the_field(status: int, body) -> str | None:
    """What is wrong with a 4xx body, or None.

    - 400 names what is wrong: at least one key besides ``detail`` (a field of the body or the
      query, ``non_field_errors`` for the body as a whole, ``manifest``, ``body`` for a body that is
      not JSON at all), each with a message;
    - 401, 403, 404, 405, 406, 409, 413, 415, 429 say what happened in ``detail``.
    """
    if not isinstance(body, dict) or not body:
        return f"{status}: the body is not a JSON object naming a field: {body!r}"
    for key, value in body.items():
        if not isinstance(key, str) or not key:
            return f"{status}: a key that names nothing: {key!r}"
        if not isinstance(value, str | list | dict | int | bool) and value is not None:
            return f"{status}: {key} holds {value!r}"
    if status == 400:
        fields = {key: value for key, value in body.items() if key not in NOT_A_FIELD}
        if not fields:
            return f"400 names no field (only {sorted(body)}): {body!r}"
        for key, value in fields.items():
            if value in (None, "", [], {}):
                return f"400: {key} says nothing: {body!r}"
    elif status in DETAIL_STATUSES:
        detail = body.get("detail")
        if not isinstance(detail, str) or not detail.strip():
            return f"{status} without a detail: {body!r}"
    return None


def _operations():
    return [result.ok() for result in schema.get_all_operations()]


OPERATIONS = _operations()


def _cases(operation):
    """Valid requests and invalid ones (wrong types, missing fields, unexpected values)."""
    positive = operation.as_strategy(GenerationMode.POSITIVE)
    try:
        return positive | operation.as_strategy(GenerationMode.NEGATIVE)
    except Exception:  # an operation with nothing to negate (no parameters, no body)
        return positive


@pytest.mark.slow
@settings(
    # EXAMPLES per operation on average; the operation of each example is drawn first.
    max_examples=EXAMPLES * len(OPERATIONS),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_no_operation_answers_5xx_and_every_4xx_names_the_field(identities, data):
    operation = data.draw(st.sampled_from(OPERATIONS), label="operation")
    case = data.draw(_cases(operation), label="request")
    # Every other example targets the real ModelServing (the rest get past the 404 only by luck).
    if {"namespace", "name"} <= set(case.path_parameters or {}) and data.draw(st.booleans(), label="real target"):
        case.path_parameters = {**case.path_parameters, "namespace": NAMESPACE, "name": NAME}
    for who, headers in identities.items():
        response = case.call(headers=headers)
        assert response.status_code < 500, f"{who}: {case.method} {case.formatted_path} -> {response.status_code}"
        if 400 <= response.status_code < 500:
            try:
                body = response.json()
            except ValueError:
                pytest.fail(f"{who}: {case.method} {case.formatted_path} -> {response.status_code} without JSON")
            problem = names_the_field(response.status_code, body)
            assert problem is None, f"{who}: {case.method} {case.formatted_path}: {problem}"


def test_the_fuzzer_covers_every_api_operation():
    paths = {op.path for op in OPERATIONS}
    for expected in ("/api/modelservings/", "/api/audit/", "/api/auth/token/", "/api/previews/{job_id}/"):
        assert expected in paths, sorted(paths)
    assert any(path.endswith("/pause") or path.endswith("/pause/") for path in paths)
