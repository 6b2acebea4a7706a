"""The Channels group of one ModelServing and the state broadcast to it.

``publish_state`` never raises: the dashboard is a view of the cluster, and a Redis outage must not
fail a reconcile pass (the next pass publishes again; the page shows itself stale meanwhile).

The state travels as its JSON text (``{"type": "state.update", "json": b"..."}``), encoded once here
with orjson: channels-redis then packs one byte string instead of walking a 1,000-group state
with msgpack (~20 ms), and the dashboard sends that same text to a newly connected page without
encoding it again. A message may also carry the state as a dict in ``state`` (tests, older
publishers); the consumer accepts both.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

import orjson

log = logging.getLogger(__name__)

_ALLOWED = re.compile(r"[^a-zA-Z0-9._-]")


def group_name(namespace: str, name: str) -> str:
    """``ms.<namespace>.<name>``. Channels group names must be ASCII letters, digits, ``-_.`` and
    shorter than 100 characters; a longer name (Kubernetes allows 253) becomes a hash of it.
    Example: ``default/demo`` -> ``ms.default.demo``."""
    text = f"ms.{namespace}.{name}"
    if len(text) < 90 and not _ALLOWED.search(text):
        return text
    return "ms.h." + hashlib.sha256(f"{namespace}/{name}".encode()).hexdigest()[:40]


def encode_state(state: Any) -> bytes:
    """The JSON text of a state view, compact (what the websocket sends). Non-string keys become
    strings, as ``json.dumps`` makes them."""
    return orjson.dumps(state, option=orjson.OPT_NON_STR_KEYS)


def publish_state(namespace: str, name: str, state: dict[str, Any] | None = None) -> None:
    try:
        if state is None:
            from .state import current_state

            state = current_state(namespace, name)
        from asgiref.sync import async_to_sync
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is None:
            return
        message = {"type": "state.update", "json": encode_state(state)}
        async_to_sync(layer.group_send)(group_name(namespace, name), message)
    except Exception as exc:  # Redis down, layer misconfigured, ...: log, never raise
        log.warning("could not publish the state of %s/%s: %s", namespace, name, exc)
