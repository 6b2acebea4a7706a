"""A websocket client keeps getting updates after the channel layer's Redis restarts.

Found by the fault soak (tests/live/test_soak.py): Channels keeps group membership in Redis, so a
Redis restart forgot that the process' hub (rolloutui/consumers.py ``_Hub``) belongs to the
ModelServing's group; every later publish went nowhere and clients stayed on an old state (even new
ones: they got the hub's newest, stale state) until Daphne restarted. The hub now joins the group
again after a failed receive and sends a fresh read of the state.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
from channels.db import database_sync_to_async
from channels.layers import channel_layers, get_channel_layer

from rolloutui import runtime_config
from rolloutui.embedded_redis import EmbeddedRedis
from tests.waiting import WaitTimeout, async_wait_until

from .test_ws import communicator

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def private_redis(tmp_path, settings):
    """A Redis of this test only (it is restarted), as the channel layer."""
    redis = EmbeddedRedis(tmp_path / "redis")
    url = redis.start()
    settings.CHANNEL_LAYERS = runtime_config.channel_layers(url, encryption_keys=[])
    channel_layers.backends.clear()  # the layer is built once per alias: build it from this setting
    yield redis
    channel_layers.backends.clear()
    redis.stop()


async def test_a_client_gets_updates_after_the_channel_layers_redis_restarts(ms, viewer, private_redis):
    from rolloutui.services import state as state_service
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    connected, _ = await comm.connect()
    assert connected
    held = json.loads(await comm.receive_from(timeout=10))
    fresh = await database_sync_to_async(state_service.get_state)(ms["namespace"], ms["name"])

    await asyncio.to_thread(private_redis.stop)
    await asyncio.to_thread(private_redis.start)  # same port, empty: the group membership is gone

    # Publishes after the restart must reach the client (the hub notices when its receive fails,
    # up to a few seconds after the restart). Each carries a marker; wait for any of them.
    layer = get_channel_layer()
    group = streaming.group_name(ms["namespace"], ms["name"])
    received = []
    sent = 0

    async def publish_and_receive():
        nonlocal sent
        sent += 1
        # While the layer reconnects this raises a connection error: publish again on the next round.
        await layer.group_send(group, {"type": "state.update", "state": {**fresh, "time": 5000.0 + sent}})
        if await comm.receive_nothing(timeout=0.3, interval=0.01):
            return None
        message = json.loads(await comm.receive_from(timeout=5))
        received.append(message)
        return message if message.get("time", 0) >= 5000.0 else None

    try:
        await async_wait_until(
            publish_and_receive,
            what="a publish to reach the client after the Redis restart",
            timeout=30,
            interval=0.01,
            retry_on=(redis.RedisError, ConnectionError),
        )
    except WaitTimeout as exc:
        pytest.fail(f"no publish reached the client after the Redis restart (received {received}): {exc}")
    assert received[-1]["type"] == "state.delta" and received[-1]["base"] is not None
    assert held["name"] == ms["name"]
    await comm.disconnect()
