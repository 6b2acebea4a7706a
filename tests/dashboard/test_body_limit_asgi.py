"""A request body over the limit is refused by the ASGI handler before the application reads it.

The finding: a 150 MB anonymous upload was read whole (into Django's SpooledTemporaryFile) before
the 413, because the size check was a middleware, which runs once the body is in. Now the handler
(rolloutui/httphandler.py) answers 413 from ``Content-Length`` without taking one body message, and
stops taking a body without ``Content-Length`` (chunked, HTTP/1.1 ``Transfer-Encoding: chunked``, which
Daphne passes on as several ``http.request`` messages) as soon as what it took passes the limit.

Each test drives the handler as Daphne does (ASGI messages) and counts the body messages the
application took with ``receive()`` before the answer."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings

from rolloutui.httphandler import ReleasingASGIHandler

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("connections_kept_open")]

CHUNK = 64 * 1024  # Daphne's request_buffer_size: the size of the body messages it sends


class Upload:
    """The client side of one request: ``total`` bytes of body offered in CHUNK-sized messages,
    counting how many the application took."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.taken = 0
        self.sent: list[dict] = []
        self.answered = asyncio.Event()

    async def receive(self) -> dict:
        if self.left > 0:
            size = min(CHUNK, self.left)
            self.left -= size
            self.taken += 1
            return {"type": "http.request", "body": b"x" * size, "more_body": self.left > 0}
        if self.taken == 0:
            self.taken += 1
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.answered.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            self.answered.set()

    @property
    def status(self) -> int:
        return next(m["status"] for m in self.sent if m["type"] == "http.response.start")

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent if m["type"] == "http.response.body")


def _request(path: str, total: int, *, declared: int | None, method: str = "POST") -> Upload:
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 50000),
    }
    upload = Upload(total)
    async_to_sync(ReleasingASGIHandler())(scope, upload.receive, upload.send)
    return upload


def test_a_declared_150_mb_upload_is_refused_before_one_body_message_is_taken():
    size = 150 * 1024 * 1024
    upload = _request("/api/auth/token/", size, declared=size)
    assert upload.status == 413
    assert upload.taken == 0
    detail = json.loads(upload.body)["detail"]
    assert str(size) in detail and str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) in detail


def test_a_body_without_content_length_is_cut_off_as_soon_as_it_passes_the_limit():
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    upload = _request("/api/auth/token/", 40 * limit, declared=None)
    assert upload.status == 413
    # The messages up to the limit, and the one that went past it: no more.
    assert upload.taken == limit // CHUNK + 1
    assert "larger than" in json.loads(upload.body)["detail"]


def test_a_body_that_lies_about_its_length_is_cut_off_at_the_limit_too():
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    upload = _request("/api/auth/token/", 40 * limit, declared=100)
    assert upload.status == 413
    assert upload.taken == limit // CHUNK + 1


def test_a_content_length_that_is_not_a_number_is_refused_with_400_naming_the_header():
    headers = [(b"host", b"127.0.0.1"), (b"content-length", b"12abc")]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/auth/token/",
        "raw_path": b"/api/auth/token/",
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 50000),
    }
    bad = Upload(10)
    async_to_sync(ReleasingASGIHandler())(scope, bad.receive, bad.send)
    assert bad.status == 400 and bad.taken == 0
    assert "Content-Length" in json.loads(bad.body)["detail"]


def test_a_body_within_the_limit_reaches_the_view_whole():
    body = json.dumps({"username": "nobody", "password": "wrong"}).encode()

    class Small(Upload):
        async def receive(self) -> dict:
            if not self.taken:
                self.taken = 1
                return {"type": "http.request", "body": body, "more_body": False}
            await self.answered.wait()
            return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/auth/token/",
        "raw_path": b"/api/auth/token/",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 50000),
    }
    small = Small(0)
    async_to_sync(ReleasingASGIHandler())(scope, small.receive, small.send)
    # The view read the credentials (and refused them): the body arrived.
    assert small.status == 400 and json.loads(small.body) == {"password": ["unable to sign in with these credentials"]}


def test_request_records_have_their_own_larger_limit():
    records_limit = settings.ROLLOUTUI_RECORDS_MAX_BODY_BYTES
    within = 2 * settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert within < records_limit
    # Over the general limit, within the records' one: past the handler (anonymous: 401, not 413).
    accepted = _request("/api/request-records/", within, declared=within)
    assert accepted.status != 413
    refused = _request("/api/request-records/", records_limit + 1, declared=records_limit + 1)
    assert refused.status == 413 and refused.taken == 0
