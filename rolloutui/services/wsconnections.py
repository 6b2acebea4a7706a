"""Open dashboard websockets per user: at most ``ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER`` each.

Place in the flow: ``rolloutui.consumers.ModelServingConsumer`` asks ``acquire`` once the user may
view, refreshes its slot at every periodic re-check (``refresh``), and gives it back on disconnect
(``release``). Every web process shares the count: it lives in the controller's state Redis
(``controller.runtime.redisconn``), one sorted set per user whose members are connection ids and
whose scores are the moments the slots expire. A slot lives ``slot_seconds()`` (three re-check
intervals) unless refreshed, so the slots of a process that died without closing its sockets free
themselves; every operation first drops the expired ones. Time is Redis' own clock (``TIME`` in the
scripts), so processes whose clocks disagree still agree on what expired.

Without Redis (``REDIS_URL`` unset: unit tests, one-off commands) the count is kept in this process.
When Redis does not answer, a socket is allowed (and a warning logged): the limit bounds a client's
share of the web process, and a Redis outage must not also take the dashboard's pages away.
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from django.conf import settings

from controller.runtime import redisconn

log = logging.getLogger(__name__)

# KEYS[1]: the user's set; ARGV: limit, slot seconds, connection id. 1 when the slot is held.
_ACQUIRE = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], t + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return 1
"""
# A slot that expired meanwhile (the process stalled) is taken again: the socket is still open.
_REFRESH = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
redis.call('ZADD', KEYS[1], t + tonumber(ARGV[1]), ARGV[2])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1])) + 1)
return 1
"""
_HOLDERS = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', t)
return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
"""


def limit() -> int:
    return int(settings.ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER)


def slot_seconds() -> float:
    """How long a slot lives unless refreshed: three re-check intervals, so a socket whose re-check
    runs late (the first one comes after half to one interval) never loses its slot."""
    return 3.0 * float(settings.ROLLOUTUI_WS_RECHECK_SECONDS)


def _key(user_pk) -> str:
    return redisconn.key("ws", "user", str(user_pk))


# --- without Redis: this process's own count -----------------------------------------------------
_local: dict[str, dict[str, float]] = {}
_local_lock = threading.Lock()


def _local_slots(user_pk) -> dict[str, float]:
    slots = _local.setdefault(str(user_pk), {})
    now = time.monotonic()
    for connection, expires in list(slots.items()):
        if expires <= now:
            del slots[connection]
    return slots


def acquire(user_pk, connection_id: str) -> bool:
    """Take a slot for ``connection_id`` (True), or False when the user holds the limit already."""
    client = redisconn.state_redis()
    if client is None:
        with _local_lock:
            slots = _local_slots(user_pk)
            if connection_id not in slots and len(slots) >= limit():
                return False
            slots[connection_id] = time.monotonic() + slot_seconds()
            return True
    try:
        return bool(client.eval(_ACQUIRE, 1, _key(user_pk), limit(), slot_seconds(), connection_id))
    except redis.RedisError:
        log.warning("websocket slot of user %s not counted: Redis did not answer", user_pk, exc_info=True)
        return True


def refresh(user_pk, connection_id: str) -> None:
    client = redisconn.state_redis()
    if client is None:
        with _local_lock:
            _local_slots(user_pk)[connection_id] = time.monotonic() + slot_seconds()
        return
    try:
        client.eval(_REFRESH, 1, _key(user_pk), slot_seconds(), connection_id)
    except redis.RedisError:
        log.warning("websocket slot of user %s not refreshed: Redis did not answer", user_pk, exc_info=True)


def release(user_pk, connection_id: str) -> None:
    client = redisconn.state_redis()
    if client is None:
        with _local_lock:
            _local_slots(user_pk).pop(connection_id, None)
        return
    try:
        client.zrem(_key(user_pk), connection_id)
    except redis.RedisError:  # the slot expires on its own
        log.warning("websocket slot of user %s not released: Redis did not answer", user_pk, exc_info=True)


def holders(user_pk) -> list[tuple[str, float]]:
    """The user's live slots: (connection id, when it expires), soonest first. Without Redis the
    expiry is on this process' monotonic clock."""
    client = redisconn.state_redis()
    if client is None:
        with _local_lock:
            return sorted(_local_slots(user_pk).items(), key=lambda item: item[1])
    flat = client.eval(_HOLDERS, 1, _key(user_pk))
    return [(flat[i].decode(), float(flat[i + 1])) for i in range(0, len(flat), 2)]


def count(user_pk) -> int:
    return len(holders(user_pk))


def refusal_reason() -> str:
    """The close reason of a refused socket (at most 123 bytes, RFC 6455 5.5)."""
    return f"too many open dashboard connections for this user (at most {limit()})"


__all__ = ["acquire", "count", "holders", "limit", "refresh", "refusal_reason", "release", "slot_seconds"]
