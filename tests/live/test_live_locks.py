"""The per-ModelServing reconcile lock and the enqueue deduplication, against a real Redis."""

from __future__ import annotations

import pytest
import redis

from controller.runtime.locks import ReconcileLock
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

STATE_REDIS_DB = 13  # away from the broker (0), the channel layer (1) and the live state (2)


def test_a_second_reconcile_marks_the_holder_dirty_and_the_holder_runs_again(state_redis):
    holder = ReconcileLock(state_redis, "default/demo")
    assert holder.acquire_or_mark()
    assert not ReconcileLock(state_redis, "default/demo").acquire_or_mark()  # taken: leaves a "dirty" mark
    assert holder.release_or_rerun() is True  # so the holder runs once more, still holding the lock
    assert not ReconcileLock(state_redis, "default/demo").acquire_or_mark()
    assert holder.release_or_rerun() is True  # marked again during the re-run: once more
    assert holder.release_or_rerun() is False  # nothing new: released
    assert ReconcileLock(state_redis, "default/demo").acquire_or_mark()


def test_different_modelservings_lock_independently(state_redis):
    a, b = ReconcileLock(state_redis, "default/a"), ReconcileLock(state_redis, "default/b")
    assert a.acquire_or_mark() and b.acquire_or_mark()
    a.release()
    b.release()


def test_only_the_owner_releases_and_a_dead_holders_lock_expires(state_redis):
    dead = ReconcileLock(state_redis, "default/demo", ttl_ms=300)
    assert dead.acquire_or_mark()
    dead._stop_renewer()  # the worker was SIGKILLed: nobody renews it any more
    intruder = ReconcileLock(state_redis, "default/demo")
    intruder.release()  # not the owner: no effect
    assert state_redis.get(dead.lock_key).decode() == dead.token
    wait_until(lambda: not state_redis.exists(dead.lock_key), what="the dead holder's lock to expire", timeout=5)
    assert ReconcileLock(state_redis, "default/demo").acquire_or_mark()


def test_a_long_pass_keeps_its_lock_alive(state_redis):
    import time

    # A 1 s TTL renewed every 333 ms: the lock is lost only if the renewer thread wakes more than
    # 667 ms late (with 300 ms it took a 200 ms late wake-up, which a 2-core host at load average
    # 14 gave once in four runs).
    lock = ReconcileLock(state_redis, "default/slow", ttl_ms=1000)
    assert lock.acquire_or_mark()
    time.sleep(2.5)  # elapsed time on purpose, longer than the TTL: the renewer extends it 7 times
    assert state_redis.get(lock.lock_key).decode() == lock.token
    lock.release()
    assert state_redis.get(lock.lock_key) is None


def test_enqueue_sends_one_reconcile_while_one_is_waiting(state_redis, monkeypatch):
    from controller.runtime import enqueue

    sent = []
    monkeypatch.setattr(enqueue, "publish", lambda namespace, name, countdown=None: sent.append((namespace, name)))
    for _ in range(5):
        enqueue.send("default", "demo")
    assert sent == [("default", "demo")]
    state_redis.delete(enqueue.queued_key("default", "demo"))  # the task started: the next change queues again
    enqueue.send("default", "demo")
    assert len(sent) == 2


def test_the_in_flight_counts_are_read_through_the_kubernetes_adapters_router(state_redis, settings):
    from controller.runtime.backend import get_router, inflight_key
    from controller.simcluster.database.traffic import field

    state_redis.hset(inflight_key(), field("default", "demo-0-serve-0-0"), 3)
    router = get_router()
    assert type(router).__name__ == "RedisInFlightRouter"
    assert router.in_flight("default", "demo-0-serve-0-0") == 3
    assert router.in_flight("default", "other") == 0


def test_redis_errors_do_not_escape_the_lock_helpers(state_redis):
    lock = ReconcileLock(redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2), "default/x")
    lock.release()  # unreachable Redis: nothing raised
