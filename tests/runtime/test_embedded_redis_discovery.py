"""Commands run beside `make run` find the embedded Redis that runall published."""

from __future__ import annotations

import socket

from rolloutui.embedded_redis import discover_url, publish_url, withdraw_url


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_published_url_of_a_redis_that_answers_is_discovered(tmp_path, redis_url):
    publish_url(tmp_path, redis_url)
    assert discover_url(tmp_path) == redis_url


def test_a_published_url_of_a_redis_that_is_gone_is_ignored(tmp_path):
    publish_url(tmp_path, f"redis://127.0.0.1:{_closed_port()}")
    assert discover_url(tmp_path) is None


def test_nothing_is_discovered_once_runall_withdrew_the_url(tmp_path, redis_url):
    publish_url(tmp_path, redis_url)
    withdraw_url(tmp_path)
    assert discover_url(tmp_path) is None
