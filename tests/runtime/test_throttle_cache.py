"""The API's throttles count in Redis when there is one, so that every web process (deploy/ runs
two Daphne replicas) charges the same count: a rate of 6 a minute is 6, not 6 per replica."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import pytest
from rest_framework.throttling import ScopedRateThrottle

from rolloutui import runtime_config


class _Request:
    """What ScopedRateThrottle reads of a request: an authenticated user's pk."""

    def __init__(self, pk):
        self.user = type("User", (), {"is_authenticated": True, "pk": pk})()
        self.META = {"REMOTE_ADDR": "10.0.0.1"}


class _View:
    throttle_scope = "preview"


def _cache_of_one_process(config: dict):
    """A cache as one web process builds it from the settings: its own client and pool."""
    from django.core.cache.backends.redis import RedisCache

    return RedisCache(config["LOCATION"], config)


def _throttle(cache) -> ScopedRateThrottle:
    throttle = ScopedRateThrottle()
    throttle.cache = cache
    # The rate on the instance: DRF reads the class's THROTTLE_RATES, bound when it was imported,
    # which another test in the same process may have pointed elsewhere.
    throttle.THROTTLE_RATES = {"preview": "6/min"}
    return throttle


def test_two_web_processes_share_one_throttle_count_in_redis(redis_url):
    config = runtime_config.caches(redis_url)["default"]
    assert config["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    first, second = _cache_of_one_process(config), _cache_of_one_process(config)
    assert first._cache is not second._cache  # two clients, as two processes have
    request, view = _Request(f"throttle-test-{uuid.uuid4()}"), _View()
    try:
        allowed = []
        for i in range(12):  # alternating between the two processes, as a load balancer would
            allowed.append(_throttle(first if i % 2 else second).allow_request(request, view))
        assert allowed == [True] * 6 + [False] * 6
    finally:
        first.delete(_throttle(first).get_cache_key(request, view))


def test_without_redis_the_cache_is_per_process_memory():
    assert runtime_config.caches(None)["default"]["BACKEND"].endswith("LocMemCache")


@pytest.mark.parametrize("url", ["redis://:secret@redis:6379", "redis://redis:6379/0"])
def test_the_cache_uses_its_own_database_of_the_apps_redis(url):
    location = urlsplit(runtime_config.caches(url)["default"]["LOCATION"])
    assert (location.hostname, location.port, location.path) == ("redis", 6379, f"/{runtime_config.CACHE_DB}")
    assert location.password == urlsplit(url).password
    assert runtime_config.CACHE_DB not in (runtime_config.BROKER_DB, runtime_config.CHANNEL_LAYER_DB, 2, 3)
