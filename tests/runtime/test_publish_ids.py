"""Publish ids (controller/runtime/publish.py): the hub applies a delta only to the state whose id
the delta names, so ids must not repeat across processes, including processes of different pods
that have the same pid."""

from __future__ import annotations

import pytest

from controller.runtime import publish


def _ids(monkeypatch, pid: int, n: int = 2) -> list[str]:
    monkeypatch.setattr(publish.os, "getpid", lambda: pid)
    return [publish._delta_fields(f"ms.test.{pid}", {"time": float(i)})["id"] for i in range(n)]


def _same_pid_in_two_pods(monkeypatch) -> tuple[list[str], list[str]]:
    first = _ids(monkeypatch, 7)
    # Another pod: the same pid, this module freshly imported there.
    monkeypatch.setitem(publish._process, "pid", None)
    return first, _ids(monkeypatch, 7)


def _fork(monkeypatch) -> tuple[list[str], list[str]]:
    return _ids(monkeypatch, 100), _ids(monkeypatch, 101)


@pytest.mark.parametrize(
    "sentence, pair, same_publisher",
    [
        ("two publishes of one process name the same publisher", lambda m: (_ids(m, 5, 1), _ids(m, 5, 1)), True),
        ("a forked child (another pid) is another publisher", _fork, False),
        ("the same pid in two pods gives two publishers", _same_pid_in_two_pods, False),
    ],
)
def test_publish_ids(monkeypatch, sentence, pair, same_publisher):
    monkeypatch.setattr(publish, "_last", type(publish._last)())
    monkeypatch.setitem(publish._process, "pid", None)
    a, b = pair(monkeypatch)
    assert len(set(a + b)) == len(a + b), sentence
    assert (publish.publisher_of(a[0]) == publish.publisher_of(b[0])) is same_publisher, (sentence, a, b)


def _loops_of_one_process(monkeypatch):
    monkeypatch.setattr(publish.os, "getpid", lambda: 11)
    return publish._sending_loop(), publish._sending_loop()


def _loops_across_a_fork(monkeypatch):
    monkeypatch.setattr(publish.os, "getpid", lambda: 12)
    parent = publish._sending_loop()
    monkeypatch.setattr(publish.os, "getpid", lambda: 13)
    return parent, publish._sending_loop()


@pytest.mark.parametrize(
    "sentence, loops, same",
    [
        ("the publishes of one process share one sending loop (one Redis connection)", _loops_of_one_process, True),
        ("a forked child starts a sending loop of its own", _loops_across_a_fork, False),
    ],
)
def test_sending_loop(monkeypatch, sentence, loops, same):
    monkeypatch.setattr(publish, "_loop", {"pid": None, "loop": None})
    a, b = loops(monkeypatch)
    try:
        assert (a is b) is same, sentence
        assert a.is_running() and b.is_running()
    finally:
        for loop in {a, b}:
            loop.call_soon_threadsafe(loop.stop)


def test_a_publish_through_redis_reaches_a_receiver_on_another_loop(redis_url):
    """publish_state on the sending loop, read back by a channels-redis layer in this thread's loop."""
    import asyncio

    from channels_redis.core import RedisChannelLayer

    from rolloutui.runtime_config import channel_layers

    layer = RedisChannelLayer(**channel_layers(redis_url)["default"]["CONFIG"])

    async def subscribe() -> str:
        channel = await layer.new_channel()
        await layer.group_add("ms.test.redis", channel)
        return channel

    channel = asyncio.run(subscribe())
    publish._group_send(layer, "ms.test.redis", {"type": "state.update", "json": b"{}", "id": "x.1-1"})

    async def receive() -> dict:
        return await asyncio.wait_for(layer.receive(channel), 5)

    assert asyncio.run(receive())["id"] == "x.1-1"


@pytest.mark.parametrize(
    "sentence, state, text",
    [
        ("a view is compact JSON", {"a": [1, 2.5, None], "b": {"c": "d"}}, b'{"a":[1,2.5,null],"b":{"c":"d"}}'),
        (
            "non-string keys become strings as json.dumps makes them",
            {1: "one", "x": {2: 3}},
            b'{"1":"one","x":{"2":3}}',
        ),
    ],
)
def test_encode_state(sentence, state, text):
    assert publish.encode_state(state) == text


def test_a_state_that_is_not_json_is_refused_by_encode_state():
    with pytest.raises(TypeError):
        publish.encode_state({"a": object()})
