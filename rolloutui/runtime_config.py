"""How one REDIS_URL becomes the Celery broker and the Channels layer.

Shared by `settings.py` (at start-up, from the environment) and `runall` (which starts an
embedded Redis after settings were loaded and must re-point its own process at it), so both
derive the same URLs the same way.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

# Broker and channel layer live in separate Redis databases so a `FLUSHDB` or a key scan on one
# never touches the other, and queue-depth metrics can count broker keys without noise.
BROKER_DB = 0
CHANNEL_LAYER_DB = 1


def redis_db_url(redis_url: str, db: int) -> str:
    """Return `redis_url` pointing at database `db` (any database in the URL is replaced)."""
    parts = urlsplit(redis_url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ValueError(f"REDIS_URL must start with redis://, rediss:// or unix://, got {redis_url!r}")
    if parts.scheme == "unix":
        # unix:///path/to/socket?db=N: the database is a query parameter.
        query = "&".join(p for p in parts.query.split("&") if p and not p.startswith("db="))
        query = f"{query}&db={db}" if query else f"db={db}"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


def broker_url(redis_url: str | None) -> str:
    # Without Redis (tests, one-off commands) tasks go to kombu's in-process memory transport:
    # nothing consumes them, and the periodic resync repairs whatever they would have done.
    # The worker and beat refuse to start in that case (see rolloutui/celery.py).
    return redis_db_url(redis_url, BROKER_DB) if redis_url else "memory://"


def result_backend(redis_url: str | None) -> str | None:
    return redis_db_url(redis_url, BROKER_DB) if redis_url else None


def channel_layers(redis_url: str | None) -> dict:
    if not redis_url:
        # In-process layer: consumers and group_send work inside one process (tests,
        # WebsocketCommunicator); it cannot carry messages between the worker and Daphne.
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    return {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [redis_db_url(redis_url, CHANNEL_LAYER_DB)],
                # Dashboard updates are coalesced "latest state" messages: dropping an old one
                # quickly is better than queueing many behind a slow client.
                "expiry": 10,
                "capacity": 200,
            },
        }
    }
