"""One reconcile of one ModelServing in the live app: what the ``controller.tasks.reconcile`` task runs.

``run_reconcile(namespace, name)``:

1. deletes the "queued" flag (see ``enqueue``) before reading anything, so a change made from now
   on queues another pass;
2. takes the ModelServing's Redis lock (``locks``; in the same round trip as 1): two workers never
   reconcile the same ModelServing at once; if it is taken, it marks the holder "dirty" (the holder
   runs once more) and returns;
3. runs one level-triggered ``controller.core.reconcile.reconcile`` pass against the active backend
   (``backend``), the canary analysis reading its figures through ``analysis.metrics_for``
   (and ``analysis.announce`` telling the audit what it did); nothing is kept in memory: a worker
   killed mid-way loses nothing, the next pass
   starts from the cluster again;
4. records Prometheus metrics, publishes the state to the ModelServing's Channels group
   (``publish``), calls the post-reconcile hooks with it (``hooks``: the releases' status),
   samples the progress history (``progress``), and schedules itself at
   ``requeue_after`` (a drain timeout); a pass that raised is retried with backoff;
5. sends the reconcile its own writes asked for (on the simulated cluster every write asks for
   one): once, when the pass is over (``enqueue.coalesced``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import redis
from django.conf import settings

from controller.core import workqueue
from controller.core.ports import ClusterError, ClusterPort
from controller.core.reconcile import reconcile

from . import enqueue, hooks, redisconn
from .analysis import announce as announce_analysis
from .analysis import metrics_for
from .backend import get_clock, get_cluster, get_router, get_verifier
from .clustersettings import cluster_settings
from .locks import ReconcileLock
from .passcaches import cache_for
from .progress import sample_progress
from .publish import publish_state

log = logging.getLogger(__name__)

# A stored wake-up time is rounded to the millisecond and compared with the wall clock: one that is
# due up to 50 ms after the wanted time still covers it (``workqueue.already_queued``).
REQUEUE_SLACK_SECONDS = 0.05


def run_reconcile(namespace: str, name: str) -> dict[str, Any]:
    client = redisconn.state_redis()
    if client is None:
        return _run_in_process(namespace, name)
    try:
        lock = ReconcileLock(client, f"{namespace}/{name}")
        acquired = lock.acquire_or_mark(deleting_first=enqueue.queued_key(namespace, name))
    except redis.RedisError as exc:
        # Without Redis there is no lock; the resync retries once Redis is back.
        log.warning("reconcile of %s/%s skipped: Redis unavailable (%s)", namespace, name, exc)
        return {"skipped": "redis unavailable"}
    if not acquired:
        _retry_when_lock_expires(client, lock, namespace, name)
        return {"skipped": "locked"}
    passes = 0
    try:
        while True:
            outcome = _one_pass(namespace, name, client, holder=lock.token)
            passes += 1
            if workqueue.turn_is_over(passes):
                lock.release()
                enqueue.send(namespace, name)
                break
            if not lock.release_or_rerun():
                break
    except BaseException:
        lock.release()
        raise
    return {**outcome, "passes": passes}


_local = threading.local()


def _run_in_process(namespace: str, name: str) -> dict[str, Any]:
    """No Redis (unit tests, eager mode): an in-thread guard instead of the Redis lock, so a pass
    whose writes enqueue a reconcile inline does not recurse, it marks itself to run again."""
    running: dict[tuple[str, str], bool] = _local.__dict__.setdefault("running", {})
    key = (namespace, name)
    if key in running:
        running[key] = True
        return {"skipped": "running"}
    running[key] = False
    outcome: dict[str, Any] = {}
    try:
        for _ in range(workqueue.PASSES_PER_TURN):
            outcome = _one_pass(namespace, name, None, holder="local")
            if not running[key]:
                break
            running[key] = False
    finally:
        del running[key]
    return outcome


def _retry_when_lock_expires(client: redis.Redis, lock: ReconcileLock, namespace: str, name: str) -> None:
    # The holder runs again because of the dirty mark; but if the holder died, nobody would until
    # the resync. One delayed retry per lock lifetime covers that case.
    try:
        remaining = lock.remaining_ms()
        if remaining and client.set(redisconn.key("retry", f"{namespace}/{name}"), "1", nx=True, px=remaining + 200):
            enqueue.send(namespace, name, countdown=remaining / 1000 + 0.05, dedupe=False)
    except redis.RedisError:
        pass


def _one_pass(namespace: str, name: str, client: redis.Redis | None, *, holder: str) -> dict[str, Any]:
    # On the simulated cluster each write of the pass asks for a reconcile of this ModelServing:
    # one is sent once the pass has published (``enqueue.coalesced``), not one per pod mid-pass.
    with enqueue.coalesced():
        return _pass(namespace, name, client, holder=holder)


def _route_weights(cluster: ClusterPort, namespace: str, name: str, status: dict[str, Any]) -> None:
    """A canary weight in the status goes to the cluster's traffic router
    (``ClusterPort.route_canary_weight``: on Kubernetes the HTTPRoute; the embedded cluster's router
    reads it from the status itself, so its method does nothing). A failed write is logged and made
    good by the next pass."""
    if ((status or {}).get("canary") or {}).get("weight") is None:
        return
    try:
        cluster.route_canary_weight(namespace, name, status)
    except ClusterError as exc:
        log.warning("canary weight of %s/%s not routed: %s", namespace, name, exc)


def _pass(namespace: str, name: str, client: redis.Redis | None, *, holder: str) -> dict[str, Any]:
    from rolloutui import metrics

    _audit_holder(client, namespace, name, holder, "start")
    cluster = get_cluster(actor="controller")
    clock = get_clock()
    started = time.perf_counter()
    try:
        result = reconcile(
            cluster,
            get_router(),
            clock,
            namespace,
            name,
            settings=cluster_settings(),
            verifier=get_verifier(),
            metrics=metrics_for(cluster),
            cache=cache_for(namespace, name),  # this process's, kept across passes (``passcaches``)
        )
    except Exception as exc:  # a lost race beyond retries, a cluster error, or a bug: back off
        metrics.observe_reconcile(
            "conflict" if "Conflict" in type(exc).__name__ else "error", time.perf_counter() - started
        )
        log.exception("reconcile of %s/%s failed", namespace, name)
        _backoff(client, namespace, name)
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        _audit_holder(client, namespace, name, holder, "end")
    if not result.found:
        metrics.observe_reconcile("not_found", result.duration_seconds)
        publish_state(namespace, name, {"namespace": namespace, "name": name, "deleted": True})
        return {"found": False}
    metrics.observe_reconcile("error" if result.error else "ok", result.duration_seconds)
    _clear_backoff(client, namespace, name)
    # A superseded pass built no view and no status: publishing the empty view would show the page
    # a state without a spec (a browser test caught "reading 'paused'" of it), and sampling it would
    # chart 0 %. It only asks to run again (requeue_after 0).
    if not result.superseded:
        for role in result.status.get("roles") or []:
            metrics.set_rollout_progress(namespace, name, role.get("name", ""), float(role.get("progress") or 0.0))
        maybe_queue_depth(client)
        announce_analysis(namespace, name, result.audit)
        publish_state(namespace, name, result.view)
        hooks.run_post_reconcile(namespace, name, result.view)
        _route_weights(cluster, namespace, name, result.status)
        sample_progress(namespace, name, result.status, clock.now(), client)
    if result.requeue_after is not None:
        _requeue(client, namespace, name, clock.to_wall_seconds(workqueue.requeue_seconds(result.requeue_after)))
    outcome = {
        "found": True,
        "actions": [a.to_trace() for a in result.actions],
        "seconds": round(result.duration_seconds, 4),
    }
    if result.superseded:
        outcome["superseded"] = True
    return outcome


def _audit_holder(client: redis.Redis | None, namespace: str, name: str, holder: str, what: str) -> None:
    """Optional trace of who reconciled what when (``ROLLOUTUI_LOCK_AUDIT=1``): the integration
    tests read it to prove that no two passes of one ModelServing overlapped."""
    if client is None or not (getattr(settings, "ROLLOUTUI_LOCK_AUDIT", None) or _env_flag("ROLLOUTUI_LOCK_AUDIT")):
        return
    try:
        client.rpush(redisconn.key("audit", f"{namespace}/{name}"), f"{what} {holder} {os.getpid()} {time.time():.6f}")
    except redis.RedisError:
        pass


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "") == "1"


def _requeue(client: redis.Redis | None, namespace: str, name: str, wall_seconds: float) -> None:
    """A timed wake-up (drain timeout). Deduplicated: a wake-up still pending and due no later covers it."""
    due = time.time() + wall_seconds
    if client is not None:
        key = redisconn.key("requeue", f"{namespace}/{name}")
        try:
            current = client.get(key)
            pending = float(current) if current is not None and float(current) > time.time() else None
            if workqueue.already_queued(pending, due + REQUEUE_SLACK_SECONDS):
                return
            client.set(key, f"{due:.3f}", px=int(wall_seconds * 1000) + 1000)
        except (redis.RedisError, ValueError):
            pass
    enqueue.send(namespace, name, countdown=wall_seconds, dedupe=False)


def _backoff(client: redis.Redis | None, namespace: str, name: str) -> None:
    # The count of consecutive failures lives in Redis (any worker may run the next pass).
    failures = 1
    if client is not None:
        try:
            key = redisconn.key("failures", f"{namespace}/{name}")
            failures = int(client.incr(key))
            client.expire(key, 600)
        except redis.RedisError:
            pass
    enqueue.send(namespace, name, countdown=workqueue.backoff_seconds(failures), dedupe=False)


def _clear_backoff(client: redis.Redis | None, namespace: str, name: str) -> None:
    if client is not None:
        try:
            client.delete(redisconn.key("failures", f"{namespace}/{name}"))
        except redis.RedisError:
            pass


_last_depth = [0.0]


def maybe_queue_depth(client: redis.Redis | None) -> None:
    """Broker queue depth gauge, at most every 2 s per process (one pipelined LLEN per queue)."""
    if time.monotonic() - _last_depth[0] < 2.0:
        return
    _last_depth[0] = time.monotonic()
    url = getattr(settings, "CELERY_BROKER_URL", "") or ""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return
    from rolloutui import metrics

    try:
        broker = _broker_client(url)
        metrics.set_queue_depth(metrics.broker_queue_depth(broker))
    except redis.RedisError:
        pass


_broker_clients: dict[str, redis.Redis] = {}


def _broker_client(url: str) -> redis.Redis:
    key = f"{url}@{os.getpid()}"
    if key not in _broker_clients:
        _broker_clients[key] = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0)
    return _broker_clients[key]
