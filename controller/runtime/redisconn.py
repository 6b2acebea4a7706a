"""The Redis client for the controller's own state: locks, queued flags, simulated in-flight counts.

It lives in its own Redis database (``ROLLOUTUI_STATE_REDIS_DB``, default 2) next to the broker
(db 0) and the channel layer (db 1), so a ``FLUSHDB`` of one never touches the others. ``None``
when ``REDIS_URL`` is unset (unit tests, one-off commands): callers then fall back to in-process
behaviour.
"""

from __future__ import annotations

import os
import threading

import redis
from django.conf import settings

DEFAULT_STATE_DB = 2
# Every key this package writes starts with this (except the router's hash, whose name is the
# router contract: see controller.k8s.router).
KEY_PREFIX = "rolloutui:"

_clients: dict[tuple[str, int, int], redis.Redis] = {}
_lock = threading.Lock()


def state_db() -> int:
    value = (
        getattr(settings, "ROLLOUTUI_STATE_REDIS_DB", None)
        or os.environ.get("ROLLOUTUI_STATE_REDIS_DB")
        or DEFAULT_STATE_DB
    )
    return int(value)


def redis_url() -> str | None:
    return getattr(settings, "REDIS_URL", None) or None


def state_redis() -> redis.Redis | None:
    url = redis_url()
    if not url:
        return None
    db = state_db()
    key = (url, db, os.getpid())  # a forked pool process must not share its parent's sockets
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                # Short timeouts: a Redis outage must cost a reconcile or a tick about a second,
                # not redis-py's default of waiting forever.
                client = redis.Redis.from_url(
                    _db_url(url, db), socket_timeout=2.0, socket_connect_timeout=1.0, health_check_interval=30
                )
                _clients[key] = client
    return client


def key(*parts: str) -> str:
    return KEY_PREFIX + ":".join(parts)


# The same rule as rolloutui.runtime_config.redis_db_url (the controller does not import the
# dashboard package): replace the database part of the URL.
def _db_url(url: str, db: int) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("db="))
        query = f"{query}&db={db}" if query else f"db={db}"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))
