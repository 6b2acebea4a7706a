"""An idle websocket hub logs nothing (issue 31: 122 tracebacks in 30 minutes of an idle demo).

The hub (rolloutui/consumers.py ``_Hub``) waits for publishes with the channel layer's blocking
receive: channels-redis sends BZPOPMIN with a 5-second block, and Redis answers nil when the block
ends with nothing to pop (Redis' BZPOPMIN: "a nil multi-bulk when no element could be popped and
the timeout expired"). redis-py's connections read with a 5-second socket timeout by default, so
every idle receive ended as a TimeoutError at the very moment Redis' nil answer was due: logged as
"channel layer receive failed; retrying" with a traceback, then a rejoin. A block that ends empty
is the normal idle case, not an error.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
import redis
from channels.layers import channel_layers, get_channel_layer

from rolloutui import runtime_config
from rolloutui.embedded_redis import EmbeddedRedis
from tests.waiting import async_wait_until

from .test_ws import communicator

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def private_redis(tmp_path, settings):
    """A Redis of this test only, as the channel layer, configured as the app configures it."""
    server = EmbeddedRedis(tmp_path / "redis")
    url = server.start()
    settings.CHANNEL_LAYERS = runtime_config.channel_layers(url, encryption_keys=[])
    channel_layers.backends.clear()  # the layer is built once per alias: build it from this setting
    yield url
    channel_layers.backends.clear()
    server.stop()


def blocking_receives_answered(url: str) -> int:
    """How many BZPOPMIN calls Redis has answered (each idle one after its whole block)."""
    stats = redis.Redis.from_url(url).info("commandstats")
    return int((stats.get("cmdstat_bzpopmin") or {}).get("calls", 0))


async def test_an_idle_hub_waits_through_several_blocking_receives_without_logging_an_error(
    ms, viewer, private_redis, caplog
):
    layer = get_channel_layer()
    # The socket must outlast the block, or the reply to every idle receive arrives too late.
    assert layer.brpop_timeout == runtime_config.CHANNEL_LAYER_BLOCK_SECONDS
    pool = layer.connection(0).connection_pool
    assert pool.connection_class(**pool.connection_kwargs).socket_timeout > layer.brpop_timeout

    comm = communicator(ms, viewer)
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_from(timeout=10)  # the first state: the hub is receiving now
    caplog.set_level(logging.WARNING, logger="rolloutui.consumers")
    before = await asyncio.to_thread(blocking_receives_answered, private_redis)

    async def two_more_blocks_ended():
        return await asyncio.to_thread(blocking_receives_answered, private_redis) >= before + 2

    # Two whole blocks of 5 s with nothing published: longer than the old 5-second socket timeout.
    await async_wait_until(two_more_blocks_ended, what="two idle blocking receives", timeout=30, interval=0.5)
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "rolloutui.consumers"]
    assert logged == []
    assert not [r for r in caplog.records if r.exc_info]
    assert await comm.receive_nothing(timeout=0.2)
    await comm.disconnect()
