"""The InferenceService page's websocket (``/ws/inferenceservices/<ns>/<name>/``): the REST state on
connect, masked for a viewer as the REST view masks it, a delta when a control changes the
InferenceService, the ModelServing socket's refusals, and the API token of the remote CLI (an
``Authorization`` header, no origin) through the ASGI application."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.kserve import controller as kserve_controller
from rolloutui.routing import websocket_urlpatterns

from .helpers import apply_delta
from .test_ws import PageCommunicator, closed_with

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]
PATH = "/ws/inferenceservices/default/llm/"
SECRET = "hf_not_for_viewers"


class Clock:
    def __init__(self):
        self.t = 1_000_000.0

    def now(self):
        return self.t


def _make_isvc():
    from tests.live.helpers import config
    from tests.live.test_live_kserve import STANDARD, manifest

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    body = manifest(replicas=2)
    body["spec"]["predictor"]["model"]["env"] = [{"name": "HF_TOKEN", "value": SECRET}]
    cluster.create_object(body)
    for _ in range(40):
        cluster.clock.t += 1
        tick(cluster)
    return cluster


@pytest.fixture
def isvc(transactional_db):
    return _make_isvc()


def communicator(user, path: str = PATH) -> PageCommunicator:
    comm = PageCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


def rest_state(user):
    from rolloutui.services.kserve import controls as kserve_controls

    return kserve_controls.get_state("default", "llm", user=user)


def without_time(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != "time"}


async def test_the_snapshot_is_the_rest_state_masked_for_a_viewer_and_whole_for_an_operator(isvc, viewer, operator):
    for user in (viewer, operator):
        comm = communicator(user)
        connected, _ = await comm.connect()
        assert connected
        snapshot = json.loads(await comm.receive_from(timeout=5))
        await comm.ack()
        expected = await database_sync_to_async(rest_state)(user)
        assert without_time(snapshot) == without_time(json.loads(json.dumps(expected)))
        await comm.disconnect()
        text = json.dumps(snapshot)
        assert (SECRET in text) is (user is operator), user.username


async def test_a_canary_started_by_a_control_reaches_the_open_socket_as_a_delta(isvc, operator):
    from rolloutui.services.kserve import controls as kserve_controls

    comm = communicator(operator)
    await comm.connect()
    state = json.loads(await comm.receive_from(timeout=5))
    await comm.ack()
    assert state["canary"] is None or not state["canary"].get("canaries")

    await database_sync_to_async(kserve_controls.start_canary)(
        operator, "default", "llm", percent=30, image="engine:v2", canary="v2", reason="try v2", source="page"
    )
    message = json.loads(await comm.receive_from(timeout=5))
    await comm.ack()
    assert message["type"] == "state.delta" and message["base"] == state["time"]
    state = apply_delta(state, message)
    expected = await database_sync_to_async(rest_state)(operator)
    assert without_time(state) == without_time(json.loads(json.dumps(expected)))
    assert [c["trafficPercent"] for c in state["canary"]["canaries"]] == [30]
    await comm.disconnect()


async def test_the_refusals_are_those_of_the_modelserving_socket(isvc, django_user_model, viewer):
    assert await closed_with(communicator(AnonymousUser())) == 4401
    nobody = await database_sync_to_async(django_user_model.objects.create_user)("nobody", password="x-long-password")
    assert await closed_with(communicator(nobody)) == 4403
    assert await closed_with(communicator(viewer, "/ws/inferenceservices/default/none/")) == 4404


def _application_communicator(headers: list[tuple[bytes, bytes]]) -> WebsocketCommunicator:
    from rolloutui.asgi import application

    return PageCommunicator(application, PATH, headers=headers)


def _token_of(user) -> str:
    from knox.models import AuthToken

    return AuthToken.objects.create(user)[1]


async def test_an_api_token_in_the_authorization_header_opens_the_socket_without_an_origin(isvc, viewer):
    token = await database_sync_to_async(_token_of)(viewer)
    for keyword in ("Token", "Bearer"):
        comm = _application_communicator([(b"authorization", f"{keyword} {token}".encode()), (b"host", b"localhost")])
        connected, _ = await comm.connect()
        assert connected
        snapshot = json.loads(await comm.receive_from(timeout=5))
        assert snapshot["name"] == "llm" and SECRET not in json.dumps(snapshot)
        await comm.disconnect()


async def test_a_wrong_token_is_closed_with_4401_and_a_session_socket_still_needs_its_origin(isvc, viewer):
    comm = _application_communicator([(b"authorization", b"Token not-a-token"), (b"host", b"localhost")])
    assert await closed_with(comm) == 4401
    # No token and no origin: the browser path, refused by the origin check before any consumer.
    refused = _application_communicator([(b"host", b"localhost")])
    connected, _ = await refused.connect()
    assert not connected


async def test_a_token_revoked_while_its_socket_is_open_closes_it_with_4401(isvc, viewer, settings):
    from knox.models import AuthToken

    from .test_ws_security import _closed_code

    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 0.2
    token = await database_sync_to_async(_token_of)(viewer)
    comm = _application_communicator([(b"authorization", f"Token {token}".encode()), (b"host", b"localhost")])
    await comm.connect()
    await comm.receive_from(timeout=5)
    await database_sync_to_async(lambda: AuthToken.objects.filter(user=viewer).delete())()
    assert await _closed_code(comm) == 4401


async def test_an_operator_who_loses_the_operate_permission_is_sent_to_reconnect_with_4412(isvc, operator, settings):
    from django.contrib.auth.models import Group

    from .test_ws_security import _closed_code

    settings.ROLLOUTUI_WS_RECHECK_SECONDS = 0.2
    comm = communicator(operator)
    await comm.connect()
    assert SECRET in await comm.receive_from(timeout=5)

    def demote():
        operator.groups.set([Group.objects.get(name="viewers")])

    await database_sync_to_async(demote)()
    assert await _closed_code(comm) == 4412
    # A new connection loads its user afresh, as the session middleware does.
    reloaded = await database_sync_to_async(lambda: type(operator).objects.get(pk=operator.pk))()
    again = communicator(reloaded)
    await again.connect()
    assert SECRET not in await again.receive_from(timeout=5)
    await again.disconnect()
