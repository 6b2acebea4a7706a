"""A hub that receives a publisher's delta without holding its base, and without the whole state
(publishers send it only when asked: ``controller.runtime.publish``), asks that publisher for the
whole state and serves the publish that carries it; without Redis to ask through, it reads the
state itself."""

from __future__ import annotations

import json

import pytest
from channels.layers import get_channel_layer

from controller.runtime import publish
from tests.waiting import async_wait_until

from .test_ws import communicator, published, replay

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

STATE_REDIS_DB = 12


def delta_only(message: dict) -> dict:
    return {k: v for k, v in message.items() if k != "json"}


async def test_a_delta_alone_from_an_unknown_base_asks_its_publisher_and_the_next_full_publish_arrives(
    ms, viewer, state_redis
):
    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    group = publish.group_name(ms["namespace"], ms["name"])
    layer = get_channel_layer()
    missed = {**snapshot, "phase": "Missed", "time": 930.0}
    await layer.group_send(
        group, delta_only(published(missed, "812.aaaa-2", base_id="812.aaaa-1", delta=(snapshot, missed)))
    )
    key = publish.full_state_request_key(group, "812.aaaa")
    await async_wait_until(lambda: state_redis.exists(key), what="the hub's request for the whole state", timeout=5)
    assert await comm.receive_nothing(timeout=0.3)  # nothing it could build was sent
    whole = {**snapshot, "phase": "Whole", "time": 931.0}
    await layer.group_send(group, published(whole, "812.aaaa-3", base_id="812.aaaa-2", delta=(missed, whole)))
    assert replay([snapshot, json.loads(await comm.receive_from(timeout=3))]) == whole
    await comm.disconnect()


async def test_without_redis_to_ask_through_the_hub_reads_the_state_itself(ms, viewer, settings):
    from channels.db import database_sync_to_async

    from rolloutui.services import state as state_service

    settings.REDIS_URL = None
    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    group = publish.group_name(ms["namespace"], ms["name"])
    unknown = {**snapshot, "phase": "Unknown base", "time": 940.0}
    message = delta_only(published(unknown, "812.bbbb-2", base_id="812.bbbb-1", delta=(snapshot, unknown)))
    await get_channel_layer().group_send(group, message)
    received = replay([snapshot, json.loads(await comm.receive_from(timeout=3))])
    current = await database_sync_to_async(state_service.get_state)(ms["namespace"], ms["name"])
    assert received["phase"] == current["phase"] != "Unknown base"
    await comm.disconnect()
