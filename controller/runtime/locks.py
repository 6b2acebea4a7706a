"""The per-ModelServing reconcile lock, in Redis, with a "dirty" flag so no wakeup is lost.

- ``lock:<ns>/<name>`` holds a random token (``SET NX PX``): only its owner releases or renews it
  (compare-and-delete in a Lua script), and it expires by itself after ``ttl_ms``, so a worker killed
  in the middle of a pass blocks that ModelServing for at most the TTL. A holder renews it every
  ``ttl_ms / 3`` from a background thread while a long pass runs.
- A reconcile that finds the lock taken sets ``dirty:<ns>/<name>`` instead of waiting: the holder,
  when it finishes, sees the flag and runs once more (it read the cluster before the change that
  queued the other reconcile). Acquire-or-mark and release-or-rerun are each one Lua script, so they
  cannot interleave: either the mark lands before the release (the holder re-runs) or after it (the
  lock is free and the marker takes it itself).

Different ModelServings have different keys, so they reconcile in parallel.
"""

from __future__ import annotations

import secrets
import threading

import redis

from . import redisconn

# KEYS: lock, dirty. ARGV: token, ttl_ms, dirty_ttl_ms. 1 = acquired (and the dirty flag, which this
# pass covers, is cleared); 0 = taken by someone else, dirty flag set.
_ACQUIRE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('del', KEYS[2])
  return 1
end
redis.call('set', KEYS[2], '1', 'PX', ARGV[3])
return 0
"""
# KEYS: lock, dirty. ARGV: token, ttl_ms. 1 = dirty: keep the lock and run again; 0 = released;
# -1 = not ours any more (it expired; someone else may hold it).
_RELEASE_OR_RERUN = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('del', KEYS[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
redis.call('del', KEYS[1])
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class ReconcileLock:
    def __init__(self, client: redis.Redis, name: str, *, ttl_ms: int = 10_000) -> None:
        self.client = client
        self.lock_key = redisconn.key("lock", name)
        self.dirty_key = redisconn.key("dirty", name)
        self.ttl_ms = ttl_ms
        self.token = secrets.token_hex(16)
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.lost = False

    def acquire_or_mark(self) -> bool:
        ok = bool(
            self.client.eval(_ACQUIRE, 2, self.lock_key, self.dirty_key, self.token, self.ttl_ms, self.ttl_ms * 6)
        )
        if ok:
            self._start_renewer()
        return ok

    def release_or_rerun(self) -> bool:
        """True: a reconcile was requested meanwhile; run again (the lock is still ours)."""
        result = int(self.client.eval(_RELEASE_OR_RERUN, 2, self.lock_key, self.dirty_key, self.token, self.ttl_ms))
        if result != 1:
            self._stop_renewer()
            self.lost = result == -1
        return result == 1

    def release(self) -> None:
        self._stop_renewer()
        try:
            self.client.eval(_RELEASE, 1, self.lock_key, self.token)
        except redis.RedisError:
            pass  # it expires by itself

    def remaining_ms(self) -> int:
        return max(int(self.client.pttl(self.lock_key)), 0)

    def holder(self) -> str | None:
        value = self.client.get(self.lock_key)
        return value.decode() if isinstance(value, bytes) else value

    def _start_renewer(self) -> None:
        self._stop.clear()

        def renew() -> None:
            while not self._stop.wait(self.ttl_ms / 3000):
                try:
                    if not self.client.eval(_RENEW, 1, self.lock_key, self.token, self.ttl_ms):
                        self.lost = True
                        return
                except redis.RedisError:
                    continue

        self._renewer = threading.Thread(target=renew, name=f"renew {self.lock_key}", daemon=True)
        self._renewer.start()

    def _stop_renewer(self) -> None:
        self._stop.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join(timeout=1)
        self._renewer = None


class SimpleLock:
    """A plain expiring lock (the physics tick: skip the tick if another one still runs)."""

    def __init__(self, client: redis.Redis, name: str, *, ttl_ms: int) -> None:
        self.client = client
        self.key = redisconn.key("lock", name)
        self.ttl_ms = ttl_ms
        self.token = secrets.token_hex(16)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> None:
        try:
            self.client.eval(_RELEASE, 1, self.key, self.token)
        except redis.RedisError:
            pass
