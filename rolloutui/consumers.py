"""Websocket of one ModelServing: ``/ws/modelservings/<namespace>/<name>/``.

On connect: refuse users who are not signed in (close 4401) or lack the view permission (4403);
send the full state (``services.state.get_state``, the same payload as the REST GET), then
forward every update published to the ModelServing's Channels group.

Fan-out: the consumers of one process share a single ``_Hub`` per ModelServing. The hub is the
only member of the Channels group in this process, so a 1 MB state of a 1,000-group
ModelServing is received and decoded once per process and JSON-encoded once per update, not once
per browser (the lesson of Argo's per-connection informers). Each consumer then sends the hub's
latest encoded text at most ``MIN_INTERVAL`` apart: an update inside the window schedules one
trailing send, which carries whatever is newest when it fires, so the latest state is always
delivered and a burst costs a client a few messages, not fifty.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

# At most ~4 messages per second per client.
MIN_INTERVAL = 0.25

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


def _encode(state) -> str:
    return json.dumps(state, separators=(",", ":"))


class _Hub:
    """One process-local subscription to a ModelServing's group, shared by its consumers."""

    # Keyed by event loop too: tests run each case in its own loop, and a channel layer's
    # receive belongs to the loop that made it.
    _hubs: dict[tuple[int, str], "_Hub"] = {}

    def __init__(self, group: str, namespace: str, name: str) -> None:
        self.group, self.namespace, self.name = group, namespace, name
        self.layer = get_channel_layer()
        self.subscribers: set[ModelServingConsumer] = set()
        self.version = 0
        self.state = None
        self._text: str | None = None
        self._text_version = -1
        self.channel: str | None = None
        self.task: asyncio.Task | None = None

    @classmethod
    async def join(cls, group: str, consumer: "ModelServingConsumer") -> "_Hub":
        """Subscribe ``consumer``; the first subscriber of this process joins the group."""
        key = (id(asyncio.get_running_loop()), group)
        hub = cls._hubs.get(key)
        if hub is None:
            hub = cls._hubs[key] = cls(group, consumer.namespace, consumer.name)
            hub.channel = await hub.layer.new_channel()
            await hub.layer.group_add(group, hub.channel)
            hub.task = asyncio.create_task(hub._run())
        hub.subscribers.add(consumer)
        return hub

    async def leave(self, consumer: "ModelServingConsumer") -> None:
        self.subscribers.discard(consumer)
        if self.subscribers:
            return
        key = (id(asyncio.get_running_loop()), self.group)
        if self._hubs.get(key) is self:
            del self._hubs[key]
        if self.task:
            self.task.cancel()
        try:
            await self.layer.group_discard(self.group, self.channel)
        except Exception:  # the layer may be gone at shutdown; membership expires anyway
            log.debug("group_discard failed", exc_info=True)

    async def _run(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("websocket hub: channel layer receive failed; retrying")
                await asyncio.sleep(1.0)
                continue
            if message.get("type") != "state.update":
                continue
            state = message.get("state")
            if state is None:
                # publish_state(state=None) callers: read it once for every subscriber.
                state = await _get_state(self.namespace, self.name)
                if state is None:
                    continue
            self.state = state
            self.version += 1
            for consumer in list(self.subscribers):
                consumer.hub_updated()

    async def text(self) -> tuple[int, str]:
        """The newest state as JSON text, encoded once per version (off the event loop: a large
        state takes a few milliseconds to encode)."""
        version, state = self.version, self.state
        if self._text_version != version:
            text = await asyncio.to_thread(_encode, state)
            if version >= self._text_version:
                self._text, self._text_version = text, version
            return version, text
        return version, self._text


async def _get_state(namespace: str, name: str):
    from controller.core.ports import NotFound
    from rolloutui.services import state

    try:
        return await database_sync_to_async(state.get_state)(namespace, name)
    except NotFound:
        return None


@database_sync_to_async
def _can_view(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm("rolloutui.view_modelserving"))


class ModelServingConsumer(AsyncJsonWebsocketConsumer):
    hub: _Hub | None = None

    async def connect(self):
        from rolloutui.services import streaming

        kwargs = self.scope["url_route"]["kwargs"]
        self.namespace, self.name = kwargs["namespace"], kwargs["name"]
        user = self.scope.get("user")
        # Accept first, then close with an application code: a refusal before accept reaches the
        # browser as an anonymous 1006, and the page could not tell "sign in again" from "retry".
        await self.accept()
        if not (user and user.is_authenticated):
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if not await _can_view(user):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.last_sent = 0.0
        self.sent_version = 0
        self.trailing: asyncio.Task | None = None
        # Join before reading the snapshot: an update published in between is then queued, not lost.
        self.hub = await _Hub.join(streaming.group_name(self.namespace, self.name), self)
        snapshot = await _get_state(self.namespace, self.name)
        if snapshot is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send(text_data=await asyncio.to_thread(_encode, snapshot))
        self.last_sent = time.monotonic()
        self.sent_version = self.hub.version

    async def disconnect(self, code):
        if getattr(self, "trailing", None):
            self.trailing.cancel()
        if self.hub is not None:
            await self.hub.leave(self)
            self.hub = None

    async def receive_json(self, content, **kwargs):
        # The socket is server -> browser only; a ping gets the latest state (cheap resync).
        if isinstance(content, dict) and content.get("type") == "resync":
            snapshot = await _get_state(self.namespace, self.name)
            if snapshot is not None:
                await self.send(text_data=await asyncio.to_thread(_encode, snapshot))

    def hub_updated(self) -> None:
        """Called by the hub for every new version: send now, or once when the window ends."""
        if self.trailing is not None and not self.trailing.done():
            return
        wait = self.last_sent + MIN_INTERVAL - time.monotonic()
        self.trailing = asyncio.create_task(self._send_latest(max(wait, 0.0)))

    async def _send_latest(self, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        hub = self.hub
        if hub is None or hub.version <= self.sent_version:
            return
        version, text = await hub.text()
        if version <= self.sent_version:
            return
        self.sent_version = version
        self.last_sent = time.monotonic()
        await self.send(text_data=text)
        # An update that arrived while this send was being prepared would otherwise wait for the
        # next one: follow it with one more trailing send.
        if hub.version > self.sent_version:
            self.trailing = asyncio.create_task(self._send_latest(MIN_INTERVAL))
