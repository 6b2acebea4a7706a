"""The per-ModelServing reconcile lock, in Redis, with a "dirty" flag so no wakeup is lost.

- ``lock:<ns>/<name>`` holds a random token (``SET NX PX``): only its owner releases or renews it
  (compare-and-delete in a Lua script), and it expires by itself after ``ttl_ms``, so a worker killed
  in the middle of a pass blocks that ModelServing for at most the TTL. A holder's lock is renewed
  every ``ttl_ms / 3`` while a long pass runs, by the process's one renewer thread (``_Renewer``).
- A reconcile that finds the lock taken sets ``dirty:<ns>/<name>`` instead of waiting: the holder,
  when it finishes, sees the flag and runs once more (it read the cluster before the change that
  queued the other reconcile). Acquire-or-mark and release-or-rerun are each one Lua script, so they
  cannot interleave: either the mark lands before the release (the holder re-runs) or after it (the
  lock is free and the marker takes it itself).

Different ModelServings have different keys, so they reconcile in parallel.
"""

from __future__ import annotations

import os
import secrets
import threading
import time

import redis

from . import redisconn

# KEYS: lock, dirty[, a key to delete first]. ARGV: token, ttl_ms, dirty_ttl_ms. 1 = acquired (and
# the dirty flag, which this pass covers, is cleared); 0 = taken by someone else, dirty flag set.
_ACQUIRE = """
if KEYS[3] then redis.call('del', KEYS[3]) end
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


DEFAULT_TTL_MS = 10_000


class ReconcileLock:
    def __init__(self, client: redis.Redis, name: str, *, ttl_ms: int = DEFAULT_TTL_MS) -> None:
        self.client = client
        self.lock_key = redisconn.key("lock", name)
        self.dirty_key = redisconn.key("dirty", name)
        self.ttl_ms = ttl_ms
        self.token = secrets.token_hex(16)
        self.lost = False

    def acquire_or_mark(self, *, deleting_first: str | None = None) -> bool:
        """``deleting_first``: a key deleted just before, in the same round trip (the reconcile's
        "queued" flag, ``enqueue``): on a loaded host each round trip is a wake-up that comes late."""
        keys = [self.lock_key, self.dirty_key, *([deleting_first] if deleting_first else [])]
        ok = bool(self.client.eval(_ACQUIRE, len(keys), *keys, self.token, self.ttl_ms, self.ttl_ms * 6))
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
        _RENEWER.hold(self)

    def _stop_renewer(self) -> None:
        _RENEWER.forget(self)

    def renew(self) -> bool:
        """Extend the lock to ``ttl_ms`` from now; False when it is not ours any more."""
        return bool(self.client.eval(_RENEW, 1, self.lock_key, self.token, self.ttl_ms))


class _Renewer:
    """The locks this process holds, renewed every ``ttl_ms / 3`` by one daemon thread that lives as
    long as the process (started on the first lock, and again in a forked child: Celery's prefork
    children fork after import).

    Why not a thread per lock, as before: ``Thread.start()`` waits until the new thread runs, and
    stopping it joined it, each a wake-up of another thread that a loaded host schedules late. On
    this 2-core host at load average 14 a start took p50 0.14 ms but p95 32 ms and a join p95 44
    ms, and the start stood between a pod's Ready and the pass's first write (issue 27). Holding
    and forgetting a lock here is a dict update under a mutex, with no wake-up of the thread: it
    sleeps until the earliest renewal due (``ttl_ms / 3`` after a lock was taken or last renewed:
    a lock taken at t=0 with the default 10 s TTL is renewed at 3.3 s, 6.7 s, ... while held), and
    a pass that ends before then never wakes it. Only a lock due sooner than the thread's planned
    wake-up (a short TTL: the tests' 300 ms) wakes it, to plan again."""

    # The thread's sleep when it holds nothing: the first renewal of a lock with the default TTL,
    # so taking one never needs to wake the thread (its due time is never before the wake-up).
    IDLE_SECONDS = DEFAULT_TTL_MS / 3000

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._due: dict[ReconcileLock, float] = {}  # lock -> monotonic time of its next renewal
        self._wake_at = float("inf")
        self._pid: int | None = None

    def hold(self, lock: ReconcileLock) -> None:
        due = time.monotonic() + lock.ttl_ms / 3000
        with self._condition:
            self._ensure_thread()
            self._due[lock] = due
            if due < self._wake_at:
                self._condition.notify()

    def forget(self, lock: ReconcileLock) -> None:
        with self._condition:
            self._due.pop(lock, None)

    def _ensure_thread(self) -> None:
        if self._pid == os.getpid():
            return
        self._pid, self._due, self._wake_at = os.getpid(), {}, float("inf")
        threading.Thread(target=self._run, name="reconcile lock renewer", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._condition:
                now = time.monotonic()
                self._wake_at = min(self._due.values(), default=now + self.IDLE_SECONDS)
                if self._wake_at > now:
                    self._condition.wait(self._wake_at - now)
                    continue
                due = [lock for lock, at in self._due.items() if at <= now]
            for lock in due:
                self._renew(lock)

    def _renew(self, lock: ReconcileLock) -> None:
        """Outside the mutex (a Redis round trip); a lock forgotten meanwhile stays forgotten."""
        try:
            ours = lock.renew()
        except redis.RedisError:
            ours = True  # unknown: tried again at the next renewal
        with self._condition:
            if lock not in self._due:
                return
            if ours:
                self._due[lock] = time.monotonic() + lock.ttl_ms / 3000
            else:
                lock.lost = True
                del self._due[lock]


_RENEWER = _Renewer()
# A child forked while another thread held the mutex would inherit it locked: it starts afresh.
os.register_at_fork(after_in_child=lambda: _RENEWER.__init__())


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
