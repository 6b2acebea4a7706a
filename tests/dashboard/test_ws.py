"""Websocket consumer: refusals, the snapshot on connect, and coalescing of bursts."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from rolloutui.routing import websocket_urlpatterns

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def communicator(ms, user) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/modelservings/{ms['namespace']}/{ms['name']}/")
    # What AuthMiddlewareStack puts there from the session cookie.
    comm.scope["user"] = user
    return comm


async def receive_all(comm, *, quiet: float = 0.6, limit: float = 5.0) -> list[dict]:
    """Every message until the socket stays quiet for ``quiet`` seconds."""
    out = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        # receive_nothing, not a receive_from timeout: a timed-out receive cancels the consumer.
        if await comm.receive_nothing(timeout=quiet, interval=0.01):
            break
        out.append(json.loads(await comm.receive_from(timeout=1)))
    return out


async def closed_with(comm) -> int:
    connected, _ = await comm.connect()
    message = await comm.receive_output(timeout=2)
    assert message["type"] == "websocket.close"
    await comm.wait()
    return message["code"]


async def test_unauthenticated_is_refused_with_4401(ms):
    assert await closed_with(communicator(ms, AnonymousUser())) == 4401


async def test_user_without_view_permission_is_refused_with_4403(ms, django_user_model):
    nobody = await database_sync_to_async(django_user_model.objects.create_user)("nobody", password="x-long-password")
    assert await closed_with(communicator(ms, nobody)) == 4403


async def test_unknown_modelserving_is_closed_with_4404(viewer):
    comm = communicator({"namespace": "default", "name": "does-not-exist"}, viewer)
    connected, _ = await comm.connect()
    assert connected
    message = await comm.receive_output(timeout=2)
    assert message == {"type": "websocket.close", "code": 4404}


async def test_snapshot_on_connect_is_the_rest_state(ms, viewer):
    from rolloutui.services import state

    comm = communicator(ms, viewer)
    connected, _ = await comm.connect()
    assert connected
    snapshot = json.loads(await comm.receive_from(timeout=3))
    expected = await database_sync_to_async(state.get_state)(ms["namespace"], ms["name"])
    assert set(snapshot) == set(expected)
    assert snapshot["name"] == ms["name"] and snapshot["revisions"] == expected["revisions"]
    await comm.disconnect()


async def test_burst_is_coalesced_and_the_latest_state_is_delivered(ms, viewer):
    from rolloutui.consumers import MIN_INTERVAL
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    layer = get_channel_layer()
    group = streaming.group_name(ms["namespace"], ms["name"])
    started = time.monotonic()
    for i in range(50):
        # Distinct states: the burst a reconcile storm would publish.
        await layer.group_send(group, {"type": "state.update", "state": {**snapshot, "time": 1000.0 + i, "seq": i}})
        await asyncio.sleep(0.004)
    burst = time.monotonic() - started
    messages = await receive_all(comm)
    await comm.disconnect()
    # At most one send per window, plus the trailing one.
    assert 1 <= len(messages) <= int(burst / MIN_INTERVAL) + 2, [m.get("seq") for m in messages]
    assert len(messages) < 10
    assert messages[-1]["seq"] == 49  # the latest state always arrives
    seqs = [m["seq"] for m in messages]
    assert seqs == sorted(seqs)


async def test_two_clients_share_one_subscription_and_both_receive(ms, viewer, operator):
    from rolloutui.consumers import _Hub
    from rolloutui.services import streaming

    a, b = communicator(ms, viewer), communicator(ms, operator)
    for comm in (a, b):
        await comm.connect()
        await comm.receive_from(timeout=3)
    group = streaming.group_name(ms["namespace"], ms["name"])
    hubs = [h for (loop_id, g), h in _Hub._hubs.items() if g == group]
    assert len(hubs) == 1 and len(hubs[0].subscribers) == 2
    await get_channel_layer().group_send(group, {"type": "state.update", "state": {"name": ms["name"], "seq": "x"}})
    for comm in (a, b):
        assert json.loads(await comm.receive_from(timeout=3))["seq"] == "x"
    await a.disconnect()
    assert len(hubs[0].subscribers) == 1
    await b.disconnect()
    assert not [h for (loop_id, g), h in _Hub._hubs.items() if g == group]


async def test_publish_state_from_the_services_reaches_the_client(ms, viewer):
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    # The path the controller's reconcile takes: publish_state reads and sends the fresh state.
    await database_sync_to_async(streaming.publish_state)(ms["namespace"], ms["name"])
    update = json.loads(await comm.receive_from(timeout=3))
    assert update["name"] == ms["name"] and "instances" in update
    await comm.disconnect()
