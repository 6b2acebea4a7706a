"""A detail page's socket starts from the state the page was rendered with (``rolloutui.pagestates``):
the page names it (``boot.pageState``, sent as ``?page=<token>``) and, while this process still
holds it, the first message is the delta from it to the newest state instead of the whole state.
The page ends with the same state as before; a token is good once, for its own ModelServing, for a
few seconds, and only after the socket's permission check."""

from __future__ import annotations

import json
import re

import orjson
import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from django.apps import apps
from django.contrib.auth.models import AnonymousUser

from controller.runtime import publish
from rolloutui.compactstate import expand_state
from rolloutui.pagestates import PageStates
from rolloutui.routing import websocket_urlpatterns
from rolloutui.services import state as state_service

from .helpers import NAMESPACE, create_modelserving, unique_name
from .test_ws import PageCommunicator, closed_with, communicator, published, receive_all, replay

pytestmark = [pytest.mark.django_db(transaction=True)]
async_test = pytest.mark.asyncio


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def page_states(monkeypatch):
    """This process's page states, on a clock the test moves."""
    clock = FakeClock()
    states = PageStates(clock=clock)
    states.clock_for_test = clock
    monkeypatch.setitem(apps.get_app_config("rolloutui").__dict__, "page_states", states)
    return states


def _script_json(html: str, element: str):
    found = re.search(rf'<script id="{element}" type="application/json">(.*?)</script>', html, re.S)
    assert found, f"the page carries {element}"
    return orjson.loads(found.group(1))


@database_sync_to_async
def open_page(user, ms) -> tuple[dict, str]:
    """(the state the detail page was rendered with, its ``boot.pageState`` token)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    response = client.get(f"/modelservings/{ms['namespace']}/{ms['name']}/")
    assert response.status_code == 200
    html = response.content.decode()
    return expand_state(_script_json(html, "initial-state")), _script_json(html, "boot")["pageState"]


def page_socket(ms, user, token: str) -> PageCommunicator:
    path = f"/ws/modelservings/{ms['namespace']}/{ms['name']}/?page={token}"
    comm = PageCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


def test_a_page_state_is_taken_once_for_its_own_modelserving_while_young():
    clock = FakeClock()
    states = PageStates(clock=clock, max_age=3.0)
    shown = {"time": 1.0}
    token = states.remember("ns", "a", shown)
    assert states.take("ns", "b", token) is None  # another ModelServing's page cannot name it
    assert states.take("ns", "a", "guessed") is None
    assert states.take("ns", "a", None) is None
    assert states.take("ns", "a", token) is shown
    assert states.take("ns", "a", token) is None  # once
    late = states.remember("ns", "a", shown)
    clock.now += 3.0
    assert states.take("ns", "a", late) is None  # older than max_age


def test_page_states_keep_at_most_limit_states():
    states = PageStates(limit=2)
    tokens = [states.remember("ns", "a", {"time": float(i)}) for i in range(3)]
    assert states.take("ns", "a", tokens[0]) is None  # the oldest was dropped
    assert [states.take("ns", "a", t)["time"] for t in tokens[1:]] == [1.0, 2.0]


@async_test
async def test_a_page_that_names_its_state_is_sent_an_empty_delta_and_holds_the_same_state(ms, viewer, page_states):
    shown, token = await open_page(viewer, ms)
    comm = page_socket(ms, viewer, token)
    connected, _ = await comm.connect()
    assert connected
    first = json.loads(await comm.receive_from(timeout=3))
    assert first == {
        "type": "state.delta",
        "base": shown["time"],
        "set": {},
        "unset": [],
        "lists": {},
        "time": shown["time"],
    }
    assert replay([shown, first]) == shown
    # The updates that follow apply to it as to the whole state.
    newer = {**shown, "phase": "Progressing", "time": shown["time"] + 5}
    await get_channel_layer().group_send(
        publish.group_name(ms["namespace"], ms["name"]), published(newer, "900.page-1")
    )
    assert replay([shown, first, *await receive_all(comm)]) == newer
    await comm.disconnect()


@async_test
async def test_a_hub_with_a_newer_state_sends_the_page_the_delta_to_it(ms, viewer, page_states):
    shown, token = await open_page(viewer, ms)
    other = communicator(ms, viewer)  # an open page whose hub then gets a newer publish
    await other.connect()
    await other.receive_from(timeout=3)
    newer = {**shown, "phase": "Newer", "time": shown["time"] + 5}
    await get_channel_layer().group_send(
        publish.group_name(ms["namespace"], ms["name"]), published(newer, "901.page-1")
    )
    await receive_all(other)
    comm = page_socket(ms, viewer, token)
    await comm.connect()
    first = json.loads(await comm.receive_from(timeout=3))
    assert first["type"] == "state.delta" and first["base"] == shown["time"]
    assert replay([shown, first]) == newer
    await comm.disconnect()
    await other.disconnect()


@async_test
async def test_a_hub_with_an_older_state_adopts_the_page_state_for_every_page(ms, viewer, page_states):
    other = communicator(ms, viewer)
    await other.connect()
    before = json.loads(await other.receive_from(timeout=3))
    shown, token = await open_page(viewer, ms)
    assert shown["time"] >= before["time"]
    shown_later = {**shown, "time": shown["time"] + 1}  # as if read a second later
    page_states.take(ms["namespace"], ms["name"], token)
    token = page_states.remember(ms["namespace"], ms["name"], shown_later)
    comm = page_socket(ms, viewer, token)
    await comm.connect()
    first = json.loads(await comm.receive_from(timeout=3))
    assert replay([shown_later, first]) == shown_later
    # The open page is brought to the same state.
    assert replay([before, *await receive_all(other)]) == shown_later
    await comm.disconnect()
    await other.disconnect()


@async_test
async def test_a_token_used_or_too_old_or_of_another_modelserving_gets_the_whole_state(ms, viewer, page_states):
    shown, token = await open_page(viewer, ms)
    first_page = page_socket(ms, viewer, token)
    await first_page.connect()
    assert json.loads(await first_page.receive_from(timeout=3))["type"] == "state.delta"
    await first_page.disconnect()

    again = page_socket(ms, viewer, token)
    await again.connect()
    whole = json.loads(await again.receive_from(timeout=3))
    assert "type" not in whole and whole["name"] == ms["name"]
    await again.disconnect()

    _, old_token = await open_page(viewer, ms)
    page_states.clock_for_test.now += 60
    late = page_socket(ms, viewer, old_token)
    await late.connect()
    assert "type" not in json.loads(await late.receive_from(timeout=3))
    await late.disconnect()

    name = unique_name()
    await database_sync_to_async(create_modelserving)(name, partition=0)
    another = {"namespace": NAMESPACE, "name": name}
    _, another_token = await open_page(viewer, another)
    wrong = page_socket(ms, viewer, another_token)
    await wrong.connect()
    whole = json.loads(await wrong.receive_from(timeout=3))
    assert "type" not in whole and whole["name"] == ms["name"]
    await wrong.disconnect()


@async_test
async def test_a_token_does_not_let_a_user_without_the_view_permission_in(ms, viewer, django_user_model, page_states):
    _, token = await open_page(viewer, ms)
    nobody = await database_sync_to_async(django_user_model.objects.create_user)("nobody", password="x-long-password")
    assert await closed_with(page_socket(ms, nobody, token)) == 4403
    assert await closed_with(page_socket(ms, AnonymousUser(), token)) == 4401
    # The refused sockets did not use the token up: the page's own socket still starts from it.
    comm = page_socket(ms, viewer, token)
    await comm.connect()
    assert json.loads(await comm.receive_from(timeout=3))["type"] == "state.delta"
    await comm.disconnect()


@async_test
async def test_the_page_state_is_the_state_the_rest_api_reads(ms, viewer, page_states):
    shown, _ = await open_page(viewer, ms)
    current = await database_sync_to_async(state_service.get_state)(ms["namespace"], ms["name"])
    assert set(shown) == set(current) and shown["revisions"] == current["revisions"]
