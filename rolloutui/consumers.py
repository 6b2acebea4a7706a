"""Websocket of one ModelServing: ``/ws/modelservings/<namespace>/<name>/``.

On connect: refuse users who are not signed in (close 4401) or lack the view permission (4403),
close 4404 for an unknown ModelServing; otherwise send the full state, exactly the REST GET
payload (``services.state.get_state``), then the updates published to the ModelServing's Channels
group.

Updates are deltas of that same payload. A 1,000-group state is about 800 kB of JSON; 100
browsers at 4 updates a second would be 320 MB/s of websocket traffic, which no server on this
class of machine sends (the first measurement of ``bench fanout`` with full states: 15 s behind).
During a rollout a pass changes a few dozen role instances, so an update carries only what
changed (``make_delta``): the page applies it to the state it holds and ends with exactly the
state the REST GET returns. A delta names the ``time`` of the state it applies to; a page that
holds another state asks for a full one (``{"type": "resync"}``) instead of guessing.

Fan-out: the consumers of one process share a single ``_Hub`` per ModelServing. The hub is the
only member of the Channels group in this process, so a state is received and decoded once per
process, and each (from, to) delta or full text is encoded once, not once per browser (the lesson
of Argo's per-connection informers). Each consumer sends at most ``RATE`` messages a
second on average (bursts of ``BURST``): an update beyond that schedules one trailing send, which
carries whatever is newest when it fires, so the latest state always arrives and a burst of 50
publishes costs a client a few messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

# Per client: on average at most RATE messages a second, with bursts of at most BURST (a token
# bucket). A lone update goes out at once; only a client that already got BURST messages in
# quick succession waits, and its trailing send then carries the newest state. (At 4/s with
# bursts of 2, `bench fanout` measured p95 376 ms from publish to client, most of it waiting for a
# token; at 5/s with bursts of 3, 84-257 ms, still a few messages a second.)
RATE = 5.0
BURST = 3.0
MIN_INTERVAL = 1.0 / RATE
# States kept per hub (the newest is what a new client gets; each client also keeps a reference
# to the state it was last sent, the base of its next delta).
HISTORY = 4

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404

# Lists sent as per-item changes: the identity of an item, and whether both ends keep the list
# sorted by that identity (instances and groups are, in build_view; the others keep the order the
# planner gave, which a delta carries in ``order`` when merging would not reproduce it).
KEYED_LISTS = {
    "instances": (lambda i: (i.get("group"), i.get("role"), i.get("ordinal")), True),
    "groups": (lambda g: g.get("ordinal"), True),
    "blocked": (lambda b: (b.get("group"), b.get("role"), b.get("kind")), False),
    "drain": (lambda d: d.get("pod"), False),
}


def _encode(payload) -> str:
    return json.dumps(payload, separators=(",", ":"))


def _wire(k):
    return list(k) if isinstance(k, tuple) else k


def _keyed_delta(old: list[dict], new: list[dict], key, is_sorted: bool) -> dict[str, list] | None:
    """Per-item changes of a list of dicts with an identity: new items whole (``upsert``),
    changed items as their changed fields only (``patch``: [key, {field: value}, [removed
    fields]]), the keys of removed items (``remove``), and the full key ``order`` only when the
    receiver's merge (sorted, or kept order with new items appended) would not reproduce the
    list's order. When a rollout starts, 1,000 groups change one flag each: that is 1,000 small
    patches, not 1,000 groups. None when identities are not unique (the list is then sent whole)."""
    old_keys = [key(item) for item in old]
    new_keys = [key(item) for item in new]
    if len(set(old_keys)) != len(old_keys) or len(set(new_keys)) != len(new_keys):
        return None
    before = dict(zip(old_keys, old))
    upsert, patch = [], []
    for k, item in zip(new_keys, new):
        prev = before.get(k)
        if prev is None:
            upsert.append(item)
        elif prev != item:
            fields = {f: v for f, v in item.items() if f not in prev or prev[f] != v}
            gone = [f for f in prev if f not in item]
            patch.append([_wire(k), fields, gone])
    present = set(new_keys)
    out = {"upsert": upsert, "patch": patch, "remove": [_wire(k) for k in old_keys if k not in present]}
    if is_sorted:
        merged = sorted(new_keys, key=lambda k: k if isinstance(k, tuple) else (k,))
    else:
        merged = [k for k in old_keys if k in present] + [key(item) for item in upsert]
    if merged != new_keys:
        out["order"] = [_wire(k) for k in new_keys]
    return out


def make_delta(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What turns ``old`` into ``new``: changed top-level values in ``set``, removed keys in
    ``unset``, and per-item changes of the large keyed lists. ``time`` comes last so a reader can
    find it without parsing (the fan-out bench does)."""
    delta: dict[str, Any] = {"type": "state.delta", "base": old.get("time")}
    lists: dict[str, Any] = {}
    for name, (key, is_sorted) in KEYED_LISTS.items():
        a, b = old.get(name), new.get(name)
        if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, dict) for x in a + b):
            change = _keyed_delta(a, b, key, is_sorted)
            if change is not None:
                lists[name] = change
    delta["set"] = {k: v for k, v in new.items() if k not in lists and k != "time" and (k not in old or old[k] != v)}
    delta["unset"] = [k for k in old if k not in new]
    delta["lists"] = lists
    delta["time"] = new.get("time")
    return delta


class _Hub:
    """One process-local subscription to a ModelServing's group, shared by its consumers."""

    # Keyed by event loop too: tests run each case in its own loop, and a channel layer's
    # receive belongs to the loop that made it.
    _hubs: dict[tuple[int, str], _Hub] = {}

    def __init__(self, group: str, namespace: str, name: str) -> None:
        self.group, self.namespace, self.name = group, namespace, name
        self.layer = get_channel_layer()
        self.subscribers: set[ModelServingConsumer] = set()
        self.version = 0
        self.states: OrderedDict[int, dict] = OrderedDict()
        # (from_version, to_version) -> task producing the encoded message; from 0 = full state.
        self._messages: dict[tuple[int, int], asyncio.Task] = {}
        self.channel: str | None = None
        self.task: asyncio.Task | None = None
        self._snapshot: asyncio.Task | None = None

    @property
    def state(self) -> dict | None:
        return self.states[self.version] if self.version in self.states else None

    def _add(self, state: dict) -> None:
        self.version += 1
        self.states[self.version] = state
        while len(self.states) > HISTORY:
            self.states.popitem(last=False)
        # Messages towards older versions are never sent again.
        for k in [k for k in self._messages if k[1] != self.version]:
            del self._messages[k]

    @classmethod
    async def join(cls, group: str, consumer: ModelServingConsumer) -> _Hub:
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

    async def leave(self, consumer: ModelServingConsumer) -> None:
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
            self._add(state)
            for consumer in list(self.subscribers):
                consumer.hub_updated()

    async def snapshot(self) -> tuple[int, str, dict] | None:
        """The full state for a newly connected client: the newest state this hub has (published
        after it subscribed, so nothing newer exists), else one ``get_state`` shared by every
        client connecting meanwhile. A burst of 100 connections then costs one read of a
        1,000-group state, not 100. None when the ModelServing does not exist."""
        if self.state is None:
            if self._snapshot is None or (self._snapshot.done() and self._snapshot.result() is None):
                self._snapshot = asyncio.ensure_future(_get_state(self.namespace, self.name))
            state = await asyncio.shield(self._snapshot)
            if state is None:
                return None
            if self.state is None:  # no publish arrived while reading
                self._add(state)
        return await self.message()

    async def message(self, from_version: int = 0, from_state: dict | None = None) -> tuple[int, str, dict]:
        """The newest version, as a delta from ``from_state`` (version ``from_version``, which the
        client holds), else as the full state. Each distinct (from, to) message is encoded once,
        off the event loop, and shared by every client that needs it."""
        to = self.version
        new = self.states[to]
        base = from_version if from_state is not None and from_version != to else 0
        key = (base, to)
        task = self._messages.get(key)
        if task is None:
            if base:
                old = from_state
                task = asyncio.ensure_future(asyncio.to_thread(lambda: _encode(make_delta(old, new))))
            else:
                task = asyncio.ensure_future(asyncio.to_thread(_encode, new))
            self._messages[key] = task
        return to, await asyncio.shield(task), new


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
        self.tokens, self.last_refill = BURST, time.monotonic()
        self.sent_version = 0
        self.sent_state: dict | None = None
        self.trailing: asyncio.Task | None = None
        # Updates wait until the snapshot is out, so a client never gets a delta before it.
        self.ready = False
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
        # Join before reading the snapshot: an update published in between is then queued, not lost.
        self.hub = await _Hub.join(streaming.group_name(self.namespace, self.name), self)
        await self._send_full()

    async def _send_full(self) -> None:
        snapshot = await self.hub.snapshot()
        if snapshot is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        version, text, state = snapshot
        await self.send(text_data=text)
        self._refill()
        self.tokens = max(0.0, self.tokens - 1.0)
        self.sent_version, self.sent_state = version, state
        self.ready = True
        if self.hub.version > self.sent_version:
            self.hub_updated()

    async def disconnect(self, code):
        if self.trailing is not None:
            self.trailing.cancel()
        if self.hub is not None:
            await self.hub.leave(self)
            self.hub = None

    async def receive_json(self, content, **kwargs):
        # Server -> browser otherwise; a page whose state does not match a delta's base asks for
        # the full state again.
        if isinstance(content, dict) and content.get("type") == "resync" and self.hub is not None:
            if self.trailing is not None:
                self.trailing.cancel()
            self.ready = False
            await self._send_full()

    def hub_updated(self) -> None:
        """Called by the hub for every new version: send now, or once when the window ends."""
        if not self.ready:
            return
        if self.trailing is not None and not self.trailing.done():
            return
        self.trailing = asyncio.create_task(self._send_latest(self._wait()))

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(BURST, self.tokens + (now - self.last_refill) * RATE)
        self.last_refill = now

    def _wait(self) -> float:
        """Seconds until this client may be sent one more message."""
        self._refill()
        return 0.0 if self.tokens >= 1.0 else (1.0 - self.tokens) / RATE

    async def _send_latest(self, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        self._refill()
        hub = self.hub
        if hub is None or hub.version <= self.sent_version:
            return
        version, text, state = await hub.message(self.sent_version, self.sent_state)
        if version <= self.sent_version:
            return
        self.sent_version, self.sent_state = version, state
        self.tokens -= 1.0
        await self.send(text_data=text)
        # An update that arrived while this send was being prepared would otherwise wait for the
        # next one: follow it with one more trailing send.
        if hub.version > self.sent_version:
            self.trailing = asyncio.create_task(self._send_latest(self._wait()))
