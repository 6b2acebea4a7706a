"""Websocket bounds: resync is rate-limited, a client that does not read is dropped (and cannot
pass for one that reads by acknowledging what it was not sent or did not read), permission and
session are checked again while the socket is open, incoming messages are bounded, namespace
grants decide who may watch, and only the dashboard's own pages may open one (Origin)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from .test_ws import communicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def _closed_code(comm, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = await comm.receive_output(timeout=timeout)
        if message["type"] == "websocket.close":
            return message["code"]
    raise AssertionError("the socket was not closed")


async def test_resync_requests_are_charged_to_the_rate_limit(ms, viewer):
    from rolloutui.consumers import BURST, RATE

    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    started = time.monotonic()
    for _ in range(30):
        await comm.send_json_to({"type": "resync"})
    fulls = 0
    while not await comm.receive_nothing(timeout=0.6, interval=0.01):
        json.loads(await comm.receive_from(timeout=1))
        fulls += 1
    elapsed = time.monotonic() - started
    await comm.disconnect()
    # 30 requests for the 800 kB-at-scale full state cost at most what the token bucket allows.
    assert 1 <= fulls <= int(elapsed * RATE) + int(BURST) + 1 and fulls < 10, (fulls, elapsed)


async def test_a_client_that_does_not_acknowledge_is_dropped_past_the_pending_bound(ms, viewer, settings):
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    # Room for the snapshot and a little more: the next big updates overflow it.
    # Room for the snapshot and two deltas (~1.6 kB each): an ack may reach the consumer after the
    # next update went out. Eight unacknowledged deltas would not fit.
    settings.ROLLOUTUI_WS_MAX_PENDING_BYTES = len(json.dumps(snapshot)) + 4000
    group = streaming.group_name(ms["namespace"], ms["name"])
    for i in range(8):
        big = {**snapshot, "time": 100.0 + i, "padding": "x" * 1500 * (i + 1)}
        await get_channel_layer().group_send(group, {"type": "state.update", "state": big})
        await asyncio.sleep(0.3)  # pacing: updates arrive one pass apart, as a controller publishes them
    assert await _closed_code(comm) == 4408


async def test_a_client_that_acknowledges_is_not_dropped(ms, viewer, settings):
    from rolloutui.services import streaming

    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    await comm.ack()
    # Room for the snapshot and two deltas (~1.6 kB each): an ack may reach the consumer after the
    # next update went out. Eight unacknowledged deltas would not fit.
    settings.ROLLOUTUI_WS_MAX_PENDING_BYTES = len(json.dumps(snapshot)) + 4000
    group = streaming.group_name(ms["namespace"], ms["name"])
    for i in range(8):
        big = {**snapshot, "time": 100.0 + i, "padding": str(i) * 1500}
        await get_channel_layer().group_send(group, {"type": "state.update", "state": big})
        message = json.loads(await comm.receive_from(timeout=3))
        assert message["type"] == "state.delta"
        assert comm.last_ack["n"] == i + 2
        await comm.ack()
    assert await comm.receive_nothing(timeout=0.5)
    await comm.disconnect()


async def _publish_unread(ms, snapshot, count: int, then=None) -> None:
    """``count`` updates of ~1.5 kB more each, one pass apart, which the client never reads;
    ``then()`` after each."""
    from rolloutui.services import streaming

    group = streaming.group_name(ms["namespace"], ms["name"])
    for i in range(count):
        big = {**snapshot, "time": 100.0 + i, "padding": "x" * 1500 * (i + 1)}
        await get_channel_layer().group_send(group, {"type": "state.update", "state": big})
        await asyncio.sleep(0.3)
        if then is not None:
            await then(i)


async def test_a_client_that_acknowledges_messages_it_was_not_sent_is_closed_with_4400(ms, viewer, settings):
    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    settings.ROLLOUTUI_WS_MAX_PENDING_BYTES = len(json.dumps(snapshot)) + 4000

    async def claim_everything(i):
        # It never reads, and claims to have read more than was ever sent: once the pending count
        # trusted this, and the server buffered for it without bound.
        await comm.send_json_to({"type": "ack", "n": 10**9})

    await _publish_unread(ms, snapshot, 8, then=claim_everything)
    assert await _closed_code(comm) == 4400


async def test_a_client_that_acknowledges_without_the_messages_token_is_closed_with_4400(ms, viewer, settings):
    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    await comm.ack()
    settings.ROLLOUTUI_WS_MAX_PENDING_BYTES = len(json.dumps(snapshot)) + 4000

    async def count_and_guess(i):
        # It knows how many messages were sent (one per publish here) but never read them: the
        # right number with a guessed token proves nothing.
        await comm.send_json_to({"type": "ack", "n": i + 2, "token": comm.last_ack["token"]})

    await _publish_unread(ms, snapshot, 8, then=count_and_guess)
    assert await _closed_code(comm) == 4400


async def test_repeating_the_acknowledgement_of_a_read_message_does_not_forget_later_ones(ms, viewer, settings):
    comm = communicator(ms, viewer)
    await comm.connect()
    snapshot = json.loads(await comm.receive_from(timeout=3))
    settings.ROLLOUTUI_WS_MAX_PENDING_BYTES = len(json.dumps(snapshot)) + 4000

    async def repeat(i):
        await comm.ack()  # the snapshot's, a valid token, again and again

    await _publish_unread(ms, snapshot, 8, then=repeat)
    assert await _closed_code(comm) == 4408


async def test_the_ack_field_is_the_last_of_every_message_and_leaves_the_rest_as_encoded():
    from rolloutui.consumers import with_ack

    from .test_ws import split_ack

    for text in ('{"type":"state.delta","base":1.0,"time":2.0}', "{}", '{"ack":"a field of the state"}'):
        sent = with_ack(text, 7, "tok")
        assert json.loads(sent)["ack"] == {"n": 7, "token": "tok"}
        assert split_ack(sent) == (text, {"n": 7, "token": "tok"})


async def test_a_message_over_the_size_limit_closes_the_socket(ms, viewer, settings):
    settings.ROLLOUTUI_WS_MAX_MESSAGE_BYTES = 1024
    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    await comm.send_to(text_data=json.dumps({"type": "resync", "junk": "y" * 5000}))
    assert await _closed_code(comm) == 1009


async def test_a_message_that_is_not_json_is_ignored(ms, viewer):
    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    await comm.send_to(text_data="{not json")
    await comm.send_json_to({"type": "resync"})
    assert "type" not in json.loads(await comm.receive_from(timeout=3))
    await comm.disconnect()


async def test_a_revoked_view_permission_closes_the_open_socket_with_4403(ms, viewer, settings):
    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 0.2
    comm = communicator(ms, viewer)
    await comm.connect()
    await comm.receive_from(timeout=3)
    await database_sync_to_async(viewer.groups.clear)()
    assert await _closed_code(comm) == 4403


async def test_a_session_that_ends_closes_the_open_socket_with_4401(ms, viewer, settings):
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    def signed_in_session():
        store = SessionStore()
        store[SESSION_KEY] = str(viewer.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = viewer.get_session_auth_hash()
        store.save()
        return store

    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 0.2
    session = await database_sync_to_async(signed_in_session)()
    comm = communicator(ms, viewer)
    comm.scope["session"] = session
    await comm.connect()
    await comm.receive_from(timeout=3)
    # Still signed in after a few re-checks: nothing happens.
    assert await comm.receive_nothing(timeout=0.6)
    await database_sync_to_async(session.delete)()  # signed out elsewhere, or expired
    assert await _closed_code(comm) == 4401


async def test_a_password_change_closes_the_open_socket_with_4401(ms, viewer, settings):
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    def signed_in_session():
        store = SessionStore()
        store.update(
            {
                SESSION_KEY: str(viewer.pk),
                BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                HASH_SESSION_KEY: viewer.get_session_auth_hash(),
            }
        )
        store.save()
        return store

    def change_password():
        viewer.set_password("a-new-password-9Zx!")
        viewer.save()

    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 0.2
    comm = communicator(ms, viewer)
    comm.scope["session"] = await database_sync_to_async(signed_in_session)()
    await comm.connect()
    await comm.receive_from(timeout=3)
    await database_sync_to_async(change_password)()
    assert await _closed_code(comm) == 4401


async def test_a_namespace_grant_decides_who_may_watch(ms, django_user_model):
    from rolloutui.models import NamespaceGrant

    def user_with_grant(username, namespace):
        user = django_user_model.objects.create_user(username, password="x-long-password-1")
        NamespaceGrant.objects.create(user=user, namespace=namespace, role="viewer")
        return user

    here = await database_sync_to_async(user_with_grant)("here", ms["namespace"])
    elsewhere = await database_sync_to_async(user_with_grant)("elsewhere", "team-b")
    comm = communicator(ms, here)
    await comm.connect()
    assert json.loads(await comm.receive_from(timeout=3))["name"] == ms["name"]
    await comm.disconnect()
    other = communicator(ms, elsewhere)
    await other.connect()
    assert await _closed_code(other) == 4403


# --- Origin: the ASGI application's own stack (rolloutui.asgi), session cookie and all ---------------------
def _through_the_asgi_application(ms, user, origin: bytes | None):
    from channels.testing import WebsocketCommunicator
    from django.test import Client

    from rolloutui.asgi import application

    client = Client()
    client.force_login(user)
    headers = [(b"host", b"localhost:8000"), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]
    if origin is not None:
        headers.append((b"origin", origin))
    return WebsocketCommunicator(application, f"/ws/modelservings/{ms['namespace']}/{ms['name']}/", headers=headers)


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param(b"http://evil.example", id="a page of another site"),
        pytest.param(b"http://localhost.evil.example:8000", id="a host that only starts like ours"),
        pytest.param(b"null", id="a sandboxed page"),
        pytest.param(None, id="no origin at all"),
    ],
)
async def test_a_websocket_from_a_foreign_origin_is_refused_before_the_consumer_runs(ms, viewer, origin):
    comm = await database_sync_to_async(_through_the_asgi_application)(ms, viewer, origin)
    connected, code = await comm.connect(timeout=3)
    assert connected is False, "a cross-site page could read the state with the viewer's session"
    await comm.disconnect()


@pytest.mark.parametrize("origin", [b"http://localhost:8000", b"http://127.0.0.1:8000"])
async def test_a_websocket_from_the_dashboards_own_origin_is_accepted(ms, viewer, origin):
    comm = await database_sync_to_async(_through_the_asgi_application)(ms, viewer, origin)
    connected, _ = await comm.connect(timeout=3)
    assert connected is True
    first = json.loads(await comm.receive_from(timeout=3))
    assert first["name"] == ms["name"]
    await comm.disconnect()


async def test_pages_connected_together_spread_their_permission_rechecks_over_the_interval(
    ms, viewer, settings, monkeypatch
):
    """The first re-check of each socket waits a random half to whole interval: never later than
    the interval (a revoked permission still ends the socket in time), and not all at once."""
    from rolloutui import consumers

    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 30
    first_waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay, *args, **kwargs):
        if delay >= 1:  # the watchdog's wait: noted, then it waits until the socket closes
            first_waits.append(delay)
            delay = 3600
        return await real_sleep(delay, *args, **kwargs)

    monkeypatch.setattr(consumers.asyncio, "sleep", recording_sleep)
    comms = [communicator(ms, viewer) for _ in range(5)]
    for comm in comms:
        await comm.connect()
        await comm.receive_from(timeout=3)
    for comm in comms:
        await comm.disconnect()
    assert len(first_waits) == 5
    assert all(15 <= wait <= 30 for wait in first_waits)
    assert len(set(first_waits)) > 1
