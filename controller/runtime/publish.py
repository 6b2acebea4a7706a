"""The Channels group of one ModelServing and the state broadcast to it.

``publish_state`` never raises: the dashboard is a view of the cluster, and a Redis outage must not
fail a reconcile pass (the next pass publishes again; the page shows itself stale meanwhile).

The state travels as its JSON text (``{"type": "state.update", "json": b"..."}``), encoded once here
with orjson: channels-redis then packs one byte string instead of walking a 1,000-group state
with msgpack (~20 ms), and the dashboard sends that same text to a newly connected page without
encoding it again. A message may also carry the state as a dict in ``state`` (tests, older
publishers); the consumer accepts both.

Each publish also carries the delta from the state this process published last for the same
ModelServing (``delta``, the JSON text of ``make_delta(previous, state)``; ``base_id``, the
``id`` of that previous publish). The dashboard's hub holding that previous state applies the delta
instead of decoding the whole state (36-40 ms for 1,000 groups, on the web process's event loop
budget) and sends that same text to its pages as their next delta. The publisher has both states in
memory already, so the delta costs it ``make_delta`` and no decode. The previous state is kept by
reference: ``build_view`` makes a fresh view every pass, and nothing changes a view after it is
published (unchanged groups' entries are the same objects, which ``make_delta`` skips).

A publish with a delta carries the whole state (``json``) only when a hub asked this publisher for
it: a hub that does not hold the delta's base (it subscribed after that publish, or missed it)
drops the delta and calls ``request_full_state`` (a Redis key per group and publisher), and the
publisher's next publish carries ``json``. The first publish of a process to a group, and every
publish when Redis cannot say, carry it too.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import os
import re
import secrets
import threading
from collections import OrderedDict
from typing import Any

import orjson
import redis

from . import redisconn

log = logging.getLogger(__name__)

_ALLOWED = re.compile(r"[^a-zA-Z0-9._-]")

# The last state published per group by this process, with its id: the base of the next delta.
# Bounded (least recently published dropped first): a dropped group's next publish is sent
# without a delta, which costs the hub one decode.
LAST_KEPT = 64
_last: OrderedDict[str, tuple[str, dict]] = OrderedDict()
_last_lock = threading.Lock()
_ids = itertools.count(1)
# The pid alone does not name a process: the worker pods of a Deployment each have their own pid
# namespace, so their Celery children have the same small pids (7, 8, ...), and a hub would apply
# one pod's delta to the state of the same pid in another pod. A random token, drawn again after a
# fork (Celery's prefork children inherit this module), makes the id unique.
_process: dict[str, Any] = {"pid": None, "name": ""}


def _process_name() -> str:
    """``<pid>.<8 random hex digits>``, the same for the life of this process."""
    pid = os.getpid()
    if _process["pid"] != pid:
        _process.update(pid=pid, name=f"{pid}.{secrets.token_hex(4)}")
    return _process["name"]


# Seconds a publish may take to reach Redis before publish_state gives up on it (and logs).
SEND_TIMEOUT = 5.0
_loop_lock = threading.Lock()
_loop: dict[str, Any] = {"pid": None, "loop": None}


def _sending_loop() -> asyncio.AbstractEventLoop:
    """This process's event loop for group sends, run by a daemon thread, started on first use
    and again in a forked child (Celery's prefork workers fork after import).

    ``async_to_sync`` from a thread without a loop runs each call in a new event loop, and
    channels-redis keeps its connection pools per loop: every publish opened a Redis connection
    and closed it again. bench fanout traced that send at 10-56 ms per publish (median ~20 ms),
    all of it on the way to every page (publish -> client) and after the pass (observed ->
    client); on one long-lived loop the connection stays open."""
    pid = os.getpid()
    with _loop_lock:
        loop = _loop["loop"]
        if _loop["pid"] != pid or loop is None or loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="publish-loop", daemon=True).start()
            _loop.update(pid=pid, loop=loop)
        return loop


def _group_send(layer: Any, group: str, message: dict[str, Any]) -> None:
    # Only channels-redis is safe to drive from another thread's loop; the in-memory layer (unit
    # tests) wakes receivers of the loop it was used from, so it keeps async_to_sync.
    if type(layer).__module__.startswith("channels_redis"):
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), _sending_loop())
        try:
            future.result(timeout=SEND_TIMEOUT)
        except BaseException:
            future.cancel()
            raise
        return
    from asgiref.sync import async_to_sync

    async_to_sync(layer.group_send)(group, message)


def group_name(namespace: str, name: str, *, prefix: str = "ms") -> str:
    """``ms.<namespace>.<name>`` (``isvc.`` for an InferenceService: ``isvc_group_name``). Channels
    group names must be ASCII letters, digits, ``-_.`` and shorter than 100 characters; a longer
    name (Kubernetes allows 253) becomes a hash of it.
    Example: ``default/demo`` -> ``ms.default.demo``."""
    text = f"{prefix}.{namespace}.{name}"
    if len(text) < 90 and not _ALLOWED.search(text):
        return text
    return f"{prefix}.h." + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:40]


def isvc_group_name(namespace: str, name: str) -> str:
    """The group of an InferenceService's page: ``default/llm`` -> ``isvc.default.llm``."""
    return group_name(namespace, name, prefix="isvc")


def publish_inferenceservice(namespace: str, name: str) -> None:
    """Tell the pages of an InferenceService that its state changed. The message carries no state:
    the page's state (with the controls and the manifest, masked for viewers) is the dashboard's
    (``services.kserve.controls.get_state``), which the controller may not import, so each web
    process's hub reads it once for all of its pages (``consumers._Hub``). Never raises."""
    try:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            return
        _group_send(layer, isvc_group_name(namespace, name), {"type": "state.update"})
    except Exception as exc:  # Redis down, layer misconfigured, ...: log, never raise
        log.warning("could not publish the state of inferenceservice %s/%s: %s", namespace, name, exc)


def encode_state(state: Any) -> bytes:
    """The JSON text of a state view, compact (what the websocket sends). Non-string keys become
    strings, as ``json.dumps`` makes them. Views have string keys only, and orjson's option for
    the others costs ~60% more on every dict (a 1,000-group view: 3.7 -> 5.8 ms), so it is asked
    for only when the plain encoding refuses a key."""
    try:
        return orjson.dumps(state)
    except orjson.JSONEncodeError:
        return orjson.dumps(state, option=orjson.OPT_NON_STR_KEYS)


def publish_state(namespace: str, name: str, state: dict[str, Any] | None = None) -> None:
    try:
        if state is None:
            from .state import current_state

            state = current_state(namespace, name)
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            return
        group = group_name(namespace, name)
        message = {"type": "state.update", **_delta_fields(group, state)}
        if "delta" not in message or _full_state_requested(group, message["id"]):
            message["json"] = encode_state(state)
        _group_send(layer, group, message)
    except Exception as exc:  # Redis down, layer misconfigured, ...: log, never raise
        log.warning("could not publish the state of %s/%s: %s", namespace, name, exc)


# How long a hub's request for a publisher's next full state stands (a publisher that stopped
# publishing never reads it).
FULL_STATE_REQUEST_MS = 60_000


def full_state_request_key(group: str, publisher: str) -> str:
    return redisconn.key("full-state", group, publisher)


def request_full_state(group: str, publisher: str) -> bool:
    """Ask ``publisher`` (``publisher_of`` an id) to send the whole state with its next publish to
    ``group``: a hub that received its delta without holding the delta's base (it subscribed
    after that publish, or missed it) cannot build the state from it. False without Redis."""
    client = redisconn.state_redis()
    if client is None:
        return False
    try:
        client.set(full_state_request_key(group, publisher), "1", px=FULL_STATE_REQUEST_MS)
    except redis.RedisError as exc:
        log.warning("could not ask %s for the full state of %s: %s", publisher, group, exc)
        return False
    return True


def _full_state_requested(group: str, published_id: str) -> bool:
    """Whether a publish that carries a delta must carry the whole state too: a hub asked for it
    (``request_full_state``; the request is taken, so the publish after it carries the delta
    alone again), or that cannot be known (no Redis, Redis unreachable).

    Only a hub that subscribed after this process's previous publish (or missed it) lacks the
    base of the delta; every other hub applies it. The whole state was sent with every publish
    before: for 1,000 groups 1.2 MB encoded (4-9 ms), sent through Redis and received by every
    hub (7-9 ms more), on the way from the observation to the pages (``python -m bench fanout``)."""
    client = redisconn.state_redis()
    if client is None:
        return True
    try:
        return bool(client.delete(full_state_request_key(group, publisher_of(published_id))))
    except redis.RedisError:
        return True


def publisher_of(published_id: str) -> str:
    """The publisher of a publish id: the id without its counter (``_delta_fields`` makes
    ``<pid>.<random token>-<n>``). Example: ``"812.9f3ac01e-41"`` -> ``"812.9f3ac01e"``."""
    return published_id.rsplit("-", 1)[0]


def _delta_fields(group: str, state: Any) -> dict[str, Any]:
    """``id`` of this publish, and the delta from this process's previous publish to the group
    (``delta``, ``base_id``) when there is one. Ids are unique across processes and hosts (pid,
    a random token of the process, a counter: ``812.9f3ac01e-41``), so a hub never applies a delta
    to a state another process published."""
    from .delta import make_delta

    published_id = f"{_process_name()}-{next(_ids)}"
    with _last_lock:
        previous = _last.pop(group, None)
        if isinstance(state, dict):
            _last[group] = (published_id, state)
            while len(_last) > LAST_KEPT:
                _last.popitem(last=False)
    fields: dict[str, Any] = {"id": published_id}
    if previous is not None and isinstance(state, dict):
        base_id, base = previous
        fields["delta"] = encode_state(make_delta(base, state))
        fields["base_id"] = base_id
    return fields
