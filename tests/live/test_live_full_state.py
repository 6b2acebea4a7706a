"""The whole state travels with a publish only when a hub needs it (``controller.runtime.publish``):
the first publish of a process to a group, a publish after a hub asked its publisher for it
(``request_full_state``, a Redis key), and every publish when Redis cannot say. Against a real
Redis."""

from __future__ import annotations

import pytest

from controller.runtime import publish

pytestmark = pytest.mark.integration

STATE_REDIS_DB = 12  # away from the broker (0), the channel layer (1), the live state (2) and the lock tests (13)


@pytest.fixture
def sent(monkeypatch):
    """The messages publish_state sends, instead of a channel layer."""
    out: list[dict] = []
    monkeypatch.setattr("channels.layers.get_channel_layer", lambda: object())
    monkeypatch.setattr(publish, "_group_send", lambda layer, group, message: out.append(message))
    publish._last.clear()
    yield out
    publish._last.clear()


def states(n: int) -> list[dict]:
    return [
        {"phase": "Progressing", "groups": [{"ordinal": 0, "ready": i % 2 == 0}], "time": float(i)} for i in range(n)
    ]


def test_a_publish_carries_the_whole_state_first_then_only_when_a_hub_asks_for_it(state_redis, sent):
    first, second, third, fourth = states(4)
    publish.publish_state("default", "big", first)
    publish.publish_state("default", "big", second)
    group = publish.group_name("default", "big")
    assert publish.request_full_state(group, publish.publisher_of(sent[-1]["id"]))
    publish.publish_state("default", "big", third)
    publish.publish_state("default", "big", fourth)
    assert ["json" in m for m in sent] == [True, False, True, False]
    assert ["delta" in m for m in sent] == [False, True, True, True]
    assert sent[2]["json"] == publish.encode_state(third)


def test_a_request_names_its_publisher_and_another_publishers_publish_leaves_it_standing(state_redis, sent):
    first, second = states(2)
    publish.publish_state("default", "big", first)
    group = publish.group_name("default", "big")
    assert publish.request_full_state(group, "812.another-process")
    publish.publish_state("default", "big", second)
    assert "json" not in sent[-1]
    assert state_redis.exists(publish.full_state_request_key(group, "812.another-process"))


def test_without_redis_every_publish_carries_the_whole_state(sent, settings):
    settings.REDIS_URL = None
    for state in states(3):
        publish.publish_state("default", "big", state)
    assert all("json" in m for m in sent)
    assert not publish.request_full_state(publish.group_name("default", "big"), "812.abc")
