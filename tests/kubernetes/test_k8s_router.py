"""RedisInFlightRouter against a real Redis (the test Redis: a random key, removed afterwards)."""

from __future__ import annotations

import logging

from controller.core.ports import RouterPort
from controller.k8s import RedisInFlightRouter
from controller.k8s.router import DEFAULT_KEY


def router_for(client) -> RedisInFlightRouter:
    return RedisInFlightRouter(client, key=f"{client.test_prefix}:on-flight-requests")


def test_the_default_hash_is_the_one_kthenas_router_keeps():
    assert DEFAULT_KEY == "kthena:on-flight-requests"
    assert RedisInFlightRouter(url="redis://127.0.0.1:6379/15").field("ns", "pod-0") == "ns/pod-0"


def test_in_flight_counts_are_read_per_namespace_and_pod(redis_client):
    router = router_for(redis_client)
    assert isinstance(router, RouterPort)
    redis_client.hset(router.key, mapping={"default/chat-0-decode-0-0": 7, "other/chat-0-decode-0-0": 2})
    assert router.in_flight("default", "chat-0-decode-0-0") == 7
    assert router.in_flight("other", "chat-0-decode-0-0") == 2


def test_a_pod_the_router_never_saw_has_nothing_in_flight(redis_client):
    router = router_for(redis_client)
    assert router.in_flight("default", "missing") == 0  # no hash at all
    redis_client.hset(router.key, "default/busy", 1)
    assert router.in_flight("default", "missing") == 0  # no field


def test_counts_follow_the_router_as_requests_finish(redis_client):
    router = router_for(redis_client)
    field = "default/chat-0-decode-0-0"
    redis_client.hincrby(router.key, field, 3)
    assert router.in_flight("default", "chat-0-decode-0-0") == 3
    redis_client.hincrby(router.key, field, -3)
    assert router.in_flight("default", "chat-0-decode-0-0") == 0


def test_several_pods_are_read_in_one_round_trip(redis_client):
    router = router_for(redis_client)
    redis_client.hset(router.key, mapping={"ns/a": 1, "ns/b": 4})
    assert router.in_flight_many("ns", ["a", "b", "c"]) == {"a": 1, "b": 4, "c": 0}


def test_a_garbage_or_negative_count_is_answered_on_the_safe_side(redis_client, caplog):
    router = router_for(redis_client)
    redis_client.hset(router.key, mapping={"ns/garbage": "lots", "ns/negative": -2})
    with caplog.at_level(logging.WARNING, logger="controller.k8s.router"):
        assert router.in_flight("ns", "garbage") == 1  # busy: the drain waits, bounded by its timeout
    assert "not an integer" in caplog.text
    assert router.in_flight("ns", "negative") == 0


def test_an_unreachable_redis_reports_the_pod_busy_instead_of_failing(caplog):
    router = RedisInFlightRouter(url="redis://127.0.0.1:9/0")  # nothing listens on port 9
    with caplog.at_level(logging.WARNING, logger="controller.k8s.router"):
        assert router.in_flight("ns", "p") == 1
        assert router.in_flight_many("ns", ["p", "q"]) == {"p": 1, "q": 1}
    assert "treating" in caplog.text


def test_a_custom_key_and_field_format_are_honoured(redis_client):
    router = RedisInFlightRouter(
        redis_client, key=f"{redis_client.test_prefix}:custom", field_format="{pod}.{namespace}"
    )
    redis_client.hset(router.key, "p.ns", 5)
    assert router.in_flight("ns", "p") == 5
