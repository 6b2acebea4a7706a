"""The Channels group of one ModelServing and the state broadcast to it.

``publish_state`` never raises: the dashboard is a view of the cluster, and a Redis outage must not
fail a reconcile pass (the next pass publishes again; the page shows itself stale meanwhile).
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

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
        async_to_sync(layer.group_send)(group_name(namespace, name), {"type": "state.update", "state": state})
    except Exception as exc:  # Redis down, layer misconfigured, ...: log, never raise
        log.warning("could not publish the state of %s/%s: %s", namespace, name, exc)
