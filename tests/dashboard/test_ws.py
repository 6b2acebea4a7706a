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

from .helpers import apply_delta

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def replay(messages: list[dict]) -> dict:
    state = None
    for m in messages:
        state = apply_delta(state, m) if m.get("type") == "state.delta" else m
    return state


def split_ack(text: str) -> tuple[str, dict]:
    """A message as the server sent it -> (the message without its ``ack`` field, exactly as the
    hub encoded it; that ``ack``: {"n", "token"})."""
    at = text.rindex('"ack":{"n":')
    ack = json.loads(text[at + len('"ack":') : -1])
    body = text[:at]
    return (body[:-1] if body.endswith(",") else body) + "}", ack


class PageCommunicator(WebsocketCommunicator):
    """A communicator that reads messages as the page does: ``receive_from`` returns a message
    without the server's ``ack`` field, kept in ``last_ack`` for ``ack()`` to echo."""

    last_ack: dict | None = None

    async def receive_from(self, timeout=1):
        text, self.last_ack = split_ack(await super().receive_from(timeout=timeout))
        return text

    async def ack(self, **override) -> None:
        await self.send_json_to({"type": "ack", **self.last_ack, **override})


def communicator(ms, user) -> PageCommunicator:
    comm = PageCommunicator(URLRouter(websocket_urlpatterns), f"/ws/modelservings/{ms['namespace']}/{ms['name']}/")
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


def published(full: dict, published_id: str, *, base_id: str | None = None, delta: tuple | None = None) -> dict:
    """The message a publisher sends (``controller.runtime.publish``): the full state's text, the
    publish's id and, with ``delta=(from_state, to_state)``, the delta from its publish ``base_id``.
    Tests pass states that disagree on purpose, to see which one the hub uses."""
    from controller.runtime.publish import encode_state
    from rolloutui.consumers import make_delta

    message = {"type": "state.update", "json": encode_state(full), "id": published_id}
    if delta is not None:
        message |= {"base_id": base_id, "delta": encode_state(make_delta(*delta))}
    return message


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
    from rolloutui.consumers import BURST, RATE
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    layer = get_channel_layer()
    group = streaming.group_name(ms["namespace"], ms["name"])
    states = []
    started = time.monotonic()
    for i in range(50):
        # Distinct states, the burst a reconcile storm would publish: the clock moves, and one
        # instance changes state each time.
        instances = [dict(x) for x in snapshot["instances"]]
        instances[i % len(instances)]["state"] = "Draining" if i % 2 else "Updating"
        state = {**snapshot, "time": 1000.0 + i, "seq": i, "instances": instances}
        states.append(state)
        await layer.group_send(group, {"type": "state.update", "state": state})
        await asyncio.sleep(0.004)  # pacing of the burst (a pass every 4 ms), not synchronisation
    burst = time.monotonic() - started
    messages = await receive_all(comm)
    await comm.disconnect()
    # The token bucket: what the burst's duration allows, plus the burst allowance and the
    # trailing send.
    assert 1 <= len(messages) <= int(burst * RATE) + int(BURST) + 1, [m.get("time") for m in messages]
    assert len(messages) < 10
    times = [m["time"] for m in messages]
    assert times == sorted(times)
    # Updates are deltas; applied in order to the snapshot they give exactly the latest state.
    assert all(m["type"] == "state.delta" for m in messages)
    assert replay([snapshot, *messages]) == states[-1]
    # A delta carries only what changed: far smaller than the state.
    assert len(json.dumps(messages[-1])) < len(json.dumps(states[-1])) / 2


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
    snapshot = await database_sync_to_async(__import__("rolloutui.services.state", fromlist=["x"]).get_state)(
        ms["namespace"], ms["name"]
    )
    await get_channel_layer().group_send(
        group, {"type": "state.update", "state": {**snapshot, "seq": "x", "time": 5.0}}
    )
    for comm in (a, b):
        delta = json.loads(await comm.receive_from(timeout=3))
        assert delta["type"] == "state.delta" and delta["set"]["seq"] == "x" and delta["time"] == 5.0
    await a.disconnect()
    assert len(hubs[0].subscribers) == 1
    await b.disconnect()
    assert not [h for (loop_id, g), h in _Hub._hubs.items() if g == group]


async def test_a_client_out_of_step_gets_the_full_state_on_resync(ms, viewer):
    comm = communicator(ms, viewer)
    await comm.connect()
    first = json.loads(await comm.receive_from(timeout=3))
    await comm.send_json_to({"type": "resync"})
    again = json.loads(await comm.receive_from(timeout=3))
    assert "type" not in again and set(again) == set(first)
    await comm.disconnect()


async def test_publish_state_from_the_services_reaches_the_client(ms, viewer):
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    # The path the controller's reconcile takes: publish_state reads and sends the fresh state.
    await database_sync_to_async(streaming.publish_state)(ms["namespace"], ms["name"])
    update = json.loads(await comm.receive_from(timeout=3))
    assert update["type"] == "state.delta" and update["time"] is not None
    await comm.disconnect()


async def test_a_state_published_as_json_text_reaches_clients_as_a_delta_and_as_the_next_snapshot(ms, viewer):
    """``publish_state`` sends the state's JSON text (encoded once by the publisher): a connected
    page gets a delta that rebuilds it, and a page connecting afterwards gets that very text."""
    from controller.runtime.publish import encode_state
    from rolloutui.services import streaming

    first = communicator(ms, viewer)
    await first.connect()
    snapshot = json.loads(await first.receive_from(timeout=3))
    instances = [dict(x) for x in snapshot["instances"]]
    instances[0]["state"] = "Draining"
    state = {**snapshot, "instances": instances, "note": "ü → ✓", "time": 777.0}
    await database_sync_to_async(streaming.publish_state)(ms["namespace"], ms["name"], state)
    delta = json.loads(await first.receive_from(timeout=3))
    assert delta["type"] == "state.delta" and delta["base"] == snapshot["time"]
    assert replay([snapshot, delta]) == state

    second = communicator(ms, viewer)
    await second.connect()
    text = await second.receive_from(timeout=3)
    assert text == encode_state(state).decode() and json.loads(text) == state
    for comm in (first, second):
        await comm.disconnect()


async def test_the_publishers_delta_is_applied_by_the_hub_and_sent_to_pages_as_is(ms, viewer):
    """From its second publish on, the publisher sends the delta from its previous publish: the
    hub holding that state applies it (no decode of the whole state) and pages get the very text
    ``make_delta`` wrote, a newly connected page the new full text."""
    from controller.runtime.publish import encode_state
    from rolloutui.consumers import make_delta
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    first = {**snapshot, "time": 901.0}
    await database_sync_to_async(streaming.publish_state)(ms["namespace"], ms["name"], first)
    d1 = json.loads(await comm.receive_from(timeout=3))
    assert replay([snapshot, d1]) == first
    instances = [dict(x) for x in snapshot["instances"]]
    instances[-1]["state"] = "Draining"
    second = {**first, "instances": instances, "phase": "Progressing", "time": 902.0}
    sent = []
    layer = get_channel_layer()
    real_send = layer.group_send

    async def recording_send(group, message):
        sent.append(message)
        await real_send(group, message)

    layer.group_send = recording_send
    try:
        await database_sync_to_async(streaming.publish_state)(ms["namespace"], ms["name"], second)
    finally:
        layer.group_send = real_send
    text = await comm.receive_from(timeout=3)
    assert sent[0]["base_id"] and sent[0]["delta"].decode() == text
    assert json.loads(text) == json.loads(json.dumps(make_delta(first, second)))
    assert replay([snapshot, d1, json.loads(text)]) == second
    late = communicator(ms, viewer)
    await late.connect()
    assert await late.receive_from(timeout=3) == encode_state(second).decode()
    for c in (comm, late):
        await c.disconnect()


async def test_a_delta_from_a_state_the_hub_does_not_hold_is_ignored_and_the_full_state_used(ms, viewer):
    """Another worker process published the base (or this hub missed it): the hub decodes the
    full text the message also carries, and the page still ends at the published state."""
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    state = {**snapshot, "phase": "Paused", "time": 903.0}
    wrong = {**snapshot, "phase": "Something else", "time": 903.0}

    message = published(state, "other-2", base_id="other-1", delta=(snapshot, wrong))
    await get_channel_layer().group_send(streaming.group_name(ms["namespace"], ms["name"]), message)
    assert replay([snapshot, json.loads(await comm.receive_from(timeout=3))]) == state
    await comm.disconnect()


async def test_a_delta_from_an_older_kept_state_applies_when_two_publishers_interleave(ms, viewer):
    """Publisher A's delta names A's previous publish, with B's publish in between: the hub
    applies it to the kept state A published, and the page (which holds B's) gets a delta from
    B's state to A's new one."""
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    received = [json.loads(await comm.receive_from(timeout=3))]
    snapshot = received[0]
    a1 = {**snapshot, "phase": "A1", "time": 911.0}
    b1 = {**snapshot, "phase": "B1", "time": 912.0}
    a2 = {**a1, "spec": {**snapshot["spec"], "paused": True}, "time": 913.0}
    group = streaming.group_name(ms["namespace"], ms["name"])
    layer = get_channel_layer()
    await layer.group_send(group, published(a1, "a-1"))
    received.append(json.loads(await comm.receive_from(timeout=3)))
    await layer.group_send(group, published(b1, "b-1"))
    received.append(json.loads(await comm.receive_from(timeout=3)))
    # The full text is deliberately not a2: only the delta can make the page end at a2.
    await layer.group_send(group, published(b1, "a-2", base_id="a-1", delta=(a1, a2)))
    received.append(json.loads(await comm.receive_from(timeout=3)))
    assert received[-1]["base"] == b1["time"] and replay(received) == a2
    await comm.disconnect()


async def test_an_update_that_is_not_json_is_ignored_and_the_next_one_arrives(ms, viewer):
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    group = streaming.group_name(ms["namespace"], ms["name"])
    await get_channel_layer().group_send(group, {"type": "state.update", "json": b"{not json"})
    await get_channel_layer().group_send(group, {"type": "state.update", "json": b"[1, 2]"})
    state = {**snapshot, "time": 888.0}
    await get_channel_layer().group_send(group, {"type": "state.update", "state": state})
    delta = json.loads(await comm.receive_from(timeout=3))
    assert replay([snapshot, delta]) == state
    await comm.disconnect()


async def test_a_delta_from_a_publishers_state_pushed_out_of_the_history_still_applies(ms, viewer):
    """Publisher A publishes, then B publishes HISTORY times (two worker processes and the bench
    interleave so): A's state is no longer a kept version, but the hub keeps each publisher's
    newest state, so A's next delta applies instead of a decode of the full text."""
    from rolloutui.consumers import HISTORY, _Hub
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    group = streaming.group_name(ms["namespace"], ms["name"])
    layer = get_channel_layer()
    a1 = {**snapshot, "phase": "A1", "time": 921.0}
    await layer.group_send(group, published(a1, "a.1-1"))
    b = a1
    for i in range(HISTORY):
        b = {**snapshot, "phase": f"B{i}", "time": 922.0 + i}
        await layer.group_send(group, published(b, f"b.1-{i + 1}"))
    a2 = {**a1, "spec": {**snapshot["spec"], "paused": True}, "time": 930.0}
    # The full text is deliberately B's last state: only the delta can make the page end at a2.
    await layer.group_send(group, published(b, "a.1-2", base_id="a.1-1", delta=(a1, a2)))
    messages = await receive_all(comm)
    assert replay([snapshot, *messages]) == a2
    hub = next(h for (_, g), h in _Hub._hubs.items() if g == group)
    # The path under test: A's first state was no longer a kept version.
    assert "a.1-1" not in hub.published_ids.values()
    await comm.disconnect()


@pytest.mark.parametrize(
    "sentence, page_sends",
    [
        ("acknowledgements do not go through the database thread", [{"type": "ack"}] * 5),
        ("a message that is not JSON does not either", ["not json"]),
    ],
)
async def test_received_messages_skip_close_old_connections(ms, viewer, monkeypatch, sentence, page_sends):
    """Channels calls close_old_connections (a hop to its database thread) before every handler;
    the consumer skips it for received messages, where it touches no database connection."""
    import channels.consumer

    calls = []
    real = channels.consumer.aclose_old_connections

    async def counting():
        calls.append(1)
        await real()

    monkeypatch.setattr(channels.consumer, "aclose_old_connections", counting)
    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    before = len(calls)
    assert before >= 1  # websocket.connect still goes through Channels' dispatch
    for sent in page_sends:
        if sent == {"type": "ack"}:
            await comm.ack()
        else:
            await comm.send_to(text_data=sent)
    # The socket still answers, so every message before the resync was handled.
    await comm.send_json_to({"type": "resync"})
    assert "type" not in json.loads(await comm.receive_from(timeout=3))
    assert len(calls) == before, sentence
    await comm.disconnect()
