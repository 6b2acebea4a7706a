"""At most ``ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER`` dashboard websockets per user, counted in Redis so
that every web process (deploy/ runs two replicas) charges the same count.

The finding: nothing bounded the sockets one account could hold open, each costing the web process
a consumer, its pending output and its re-check queries. An extra socket is accepted and closed
with 4429 and a reason (a refusal before accept reaches the browser as an anonymous 1006); a
closed socket gives its slot back, and the slots of a process that died without closing expire.

Runs on the real Redis of the test session (``redis_url``), in a database of its own."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from rolloutui.consumers import CLOSE_TOO_MANY_CONNECTIONS
from rolloutui.services import wsconnections
from tests.waiting import async_wait_until

from .test_ws import communicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

STATE_REDIS_DB = 14  # away from the broker (0), the channel layer (1), the live state (2) and the other tests


@pytest.fixture
def limit_of_two(state_redis, settings):
    settings.ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER = 2
    return state_redis


async def _opened(ms, user):
    comm = communicator(ms, user)
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_from(timeout=3)  # the full state: the socket is in use
    return comm


async def _refusal(ms, user) -> dict:
    comm = communicator(ms, user)
    await comm.connect()
    message = await comm.receive_output(timeout=3)
    await comm.wait()
    return message


async def test_a_user_past_the_connection_limit_is_refused_with_4429_and_a_reason(ms, viewer, operator, limit_of_two):
    first, second = await _opened(ms, viewer), await _opened(ms, viewer)
    refused = await _refusal(ms, viewer)
    assert refused["type"] == "websocket.close"
    assert refused["code"] == CLOSE_TOO_MANY_CONNECTIONS == 4429
    assert "at most 2" in refused["reason"] and len(refused["reason"].encode()) <= 123  # RFC 6455 5.5
    # Another user has slots of their own.
    other = await _opened(ms, operator)
    for comm in (first, second, other):
        await comm.disconnect()


async def test_a_closed_socket_gives_its_slot_back(ms, viewer, limit_of_two):
    first, second = await _opened(ms, viewer), await _opened(ms, viewer)
    await first.disconnect()
    third = await _opened(ms, viewer)
    assert await database_sync_to_async(wsconnections.count)(viewer.pk) == 2
    for comm in (second, third):
        await comm.disconnect()
    assert await database_sync_to_async(wsconnections.count)(viewer.pk) == 0


async def test_the_slots_another_web_process_holds_count_against_the_same_limit(ms, viewer, limit_of_two):
    # Another process's socket: a slot in the shared Redis under a connection id of its own.
    assert wsconnections.acquire(viewer.pk, "web-1:elsewhere") is True
    mine = await _opened(ms, viewer)
    assert (await _refusal(ms, viewer))["code"] == 4429
    await mine.disconnect()
    wsconnections.release(viewer.pk, "web-1:elsewhere")


async def test_the_slots_of_a_process_that_died_expire(ms, viewer, limit_of_two, settings):
    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 1  # slots live three re-check intervals unless refreshed
    # A process that crashed never released its two slots.
    for leftover in ("web-1:a", "web-1:b"):
        assert wsconnections.acquire(viewer.pk, leftover) is True
    assert (await _refusal(ms, viewer))["code"] == 4429
    await async_wait_until(
        lambda: wsconnections.count(viewer.pk) == 0, what="the dead process's slots to expire", timeout=10
    )
    comm = await _opened(ms, viewer)
    await comm.disconnect()


async def test_an_open_socket_keeps_its_slot_alive_past_the_expiry(ms, viewer, limit_of_two, settings):
    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 1
    comm = await _opened(ms, viewer)
    (held,) = wsconnections.holders(viewer.pk)
    first_expiry = held[1]
    # Refreshed by the socket's periodic re-check: its expiry moves on while it stays open.
    await async_wait_until(
        lambda: wsconnections.holders(viewer.pk)[0][1] > first_expiry + 1,
        what="the open socket to refresh its slot",
        timeout=10,
    )
    assert wsconnections.count(viewer.pk) == 1
    await comm.disconnect()


async def test_without_redis_the_limit_holds_within_the_process(ms, viewer, settings):
    settings.REDIS_URL = None
    settings.ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER = 1
    first = await _opened(ms, viewer)
    assert (await _refusal(ms, viewer))["code"] == 4429
    await first.disconnect()
    second = await _opened(ms, viewer)
    await second.disconnect()
