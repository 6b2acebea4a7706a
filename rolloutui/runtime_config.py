"""How one REDIS_URL becomes the Celery broker and the Channels layer.

Shared by `settings.py` (at start-up, from the environment) and `runall` (which starts an
embedded Redis after settings were loaded and must re-point its own process at it), so both
derive the same URLs the same way.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

# Broker and channel layer live in separate Redis databases so a `FLUSHDB` or a key scan on one
# never touches the other, and queue-depth metrics can count broker keys without noise.
BROKER_DB = 0
CHANNEL_LAYER_DB = 1
# Django's cache (the API's throttle counts): apart from the broker, the channel layer, the
# controller's state (2, controller/runtime/redisconn.py) and the router's in-flight counts (3 in
# deploy/), so the `cache.clear()` of the tests flushes nothing else.
CACHE_DB = 4


# Comma-separated keys for channels-redis' symmetric encryption of channel messages (the first one
# encrypts, every one decrypts, so a key can be rotated by prepending the new one). Unset: off.
CHANNELS_ENCRYPTION_ENV = "ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS"


def check_redis_url(redis_url: str, variable: str = "REDIS_URL") -> str:
    """``redis_url`` if it is a usable Redis URL, else ``ValueError`` naming ``variable``.

    The password travels in the URL's user-info (``redis://:PASSWORD@host:6379``), percent-encoded
    where it has reserved characters (``@`` -> ``%40``, ``/`` -> ``%2F``, ``:`` -> ``%3A``): redis-py,
    kombu and channels-redis all unquote it. The URL is never echoed back in the error, so a
    password cannot leak into a log through it.
    """
    parts = urlsplit(redis_url)
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ValueError(f"{variable} must start with redis://, rediss:// or unix://")
    if "$(" in redis_url:
        # Kubernetes leaves "$(NAME)" as written when NAME is not defined before it in the
        # container's env: the Secret key the URL refers to is missing.
        raise ValueError(
            f"{variable} holds an unexpanded $(...) reference: the Secret key it names is missing from the pod's env"
        )
    try:
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise ValueError(
            f"{variable} has an invalid port; percent-encode reserved characters in the password "
            "(@ -> %40, / -> %2F, : -> %3A)"
        ) from None
    return redis_url


def redact_url(url: str) -> str:
    """``url`` fit to print or log: a password in it is replaced by ``***``.

    redact_url("redis://:s3cret@redis:6379/0") == "redis://:***@redis:6379/0"; a URL without a
    password is returned as it is.
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


def redis_db_url(redis_url: str, db: int) -> str:
    """Return `redis_url` pointing at database `db` (any database in the URL is replaced).

    User and password are kept exactly as written (still percent-encoded):
    redis_db_url("redis://:p%40ss@redis:6379/3", 1) == "redis://:p%40ss@redis:6379/1".
    """
    check_redis_url(redis_url)
    parts = urlsplit(redis_url)
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


def channels_encryption_keys(value: str | None = None) -> list[str]:
    """The channel layer's encryption keys from ``value`` (default: the environment variable)."""
    raw = os.environ.get(CHANNELS_ENCRYPTION_ENV, "") if value is None else value
    return [key.strip() for key in raw.split(",") if key.strip()]


# How long a channel layer receive blocks in Redis (channels-redis' RedisChannelLayer.brpop_timeout;
# tests/dashboard/test_ws_idle_receive.py holds the two equal), and how much longer its socket waits.
CHANNEL_LAYER_BLOCK_SECONDS = 5
CHANNEL_LAYER_SOCKET_MARGIN_SECONDS = 10


def channel_layers(redis_url: str | None, encryption_keys: list[str] | None = None) -> dict:
    """The Channels layer; ``encryption_keys`` default to ``$ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS``."""
    if not redis_url:
        # In-process layer: consumers and group_send work inside one process (tests,
        # WebsocketCommunicator); it cannot carry messages between the worker and Daphne.
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    config = {
        "hosts": [
            {
                "address": redis_db_url(redis_url, CHANNEL_LAYER_DB),
                # A receive waits in a BZPOPMIN that blocks RedisChannelLayer.brpop_timeout (5 s),
                # and Redis answers nil when the block ends empty: the normal idle case. redis-py's
                # socket timeout is 5 s by default, so every idle receive timed out just as that
                # answer was due, and the websocket hub logged it as a failure with a traceback
                # (issue 31). The socket outlasts the block; a Redis that stops answering is still
                # noticed, one block later.
                "socket_timeout": CHANNEL_LAYER_BLOCK_SECONDS + CHANNEL_LAYER_SOCKET_MARGIN_SECONDS,
                "socket_connect_timeout": 5,
            }
        ],
        # Dashboard updates are coalesced "latest state" messages: dropping an old one
        # quickly is better than queueing many behind a slow client.
        "expiry": 10,
        "capacity": 200,
    }
    keys = channels_encryption_keys() if encryption_keys is None else encryption_keys
    if keys:
        # Messages in Redis are then Fernet tokens: whoever reaches Redis can neither read the
        # states the worker publishes nor forge one the consumers would forward to browsers.
        config["symmetric_encryption_keys"] = keys
    return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": config}}


def caches(redis_url: str | None) -> dict:
    """Django's cache: Redis when there is one, so that every Daphne process (two web replicas in
    deploy/, each its own process) counts the DRF throttles together; without Redis (unit tests,
    one-off commands) a per-process memory cache."""
    if not redis_url:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_db_url(redis_url, CACHE_DB),
            "KEY_PREFIX": "rolloutui",
            # Passed to redis-py's connection pool: a Redis that stopped answering fails a request
            # within seconds instead of hanging it.
            "OPTIONS": {"socket_connect_timeout": 5, "socket_timeout": 5},
        }
    }


# Cluster-wide rollout settings of the embedded cluster (and the fallback on Kubernetes when the
# ConfigMap is absent): environment variable -> field of the scenario shape
# (controller.core.strategy.parse_cluster_settings).
CLUSTER_SETTINGS_ENV = {
    "ROLLOUTUI_DEPLOYMENT_MODE": ("deploymentMode",),
    "ROLLOUTUI_DEFAULT_MAX_UNAVAILABLE": ("defaultRollout", "maxUnavailable"),
    "ROLLOUTUI_DEFAULT_MAX_SURGE": ("defaultRollout", "maxSurge"),
    "ROLLOUTUI_MULTI_NODE_OVERRIDE": ("multiNodeOverride",),
}


def cluster_settings_from_env(environ=None):
    """``ClusterSettings`` from the four variables above (unset or empty: the default), or
    ``ValueError`` naming the variable, e.g. ``ROLLOUTUI_DEFAULT_MAX_SURGE: expected an integer or
    a percentage like '25%', got 'lots'``."""
    from controller.core.spec import ValidationError
    from controller.core.strategy import parse_cluster_settings

    environ = os.environ if environ is None else environ
    raw: dict = {}
    for variable, path in CLUSTER_SETTINGS_ENV.items():
        value = (environ.get(variable) or "").strip()
        if not value:
            continue
        target = raw
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value
    try:
        return parse_cluster_settings(raw, path="env", text=True)
    except ValidationError as err:
        field = err.field.removeprefix("env.")
        variable = next((v for v, p in CLUSTER_SETTINGS_ENV.items() if ".".join(p) == field), field)
        raise ValueError(f"{variable}: {err.rule}") from None
