"""The one acting controller per cluster: leader election gating the shared watch.

``run_controller`` is what a long-running process on a cluster calls (``python -m controller.k8s
watch``, or a management command with its own ``enqueue``): it campaigns for the Lease and, while
leading, runs the ``ClusterWatcher`` whose events (and a periodic full resync) enqueue reconciles.
When leadership is lost the watch stops at once, so two replicas never feed the queue from two
watches; the new leader relists on start, so nothing is missed.

Liveness: with ``heartbeat``, the supervising loop touches a file every ``heartbeat_interval``
seconds while the process is healthy: the election loop completed an attempt recently and, when
leading, every watch stream made progress recently (``ClusterWatcher.healthy``). An unreachable API
server is not unhealthy (the loops keep trying; a restart would not help); a dead or stuck thread
is, and the container's probe (``python -m controller.k8s.liveness``) then restarts the process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import kubernetes

from controller.core.ports import ClusterError
from controller.k8s.cluster import KubernetesCluster
from controller.k8s.leader import LeaseElector
from controller.k8s.liveness import Heartbeat
from controller.k8s.watch import ClusterWatcher, Enqueue

log = logging.getLogger(__name__)


def run_controller(
    api_client: kubernetes.client.ApiClient,
    enqueue: Enqueue,
    *,
    lease_namespace: str,
    lease_name: str = "rolloutui-controller",
    namespace: str | None = None,
    resync_period: float = 300.0,
    stop: threading.Event | None = None,
    elector_factory: Callable[..., LeaseElector] = LeaseElector,
    heartbeat: Heartbeat | None = None,
    heartbeat_interval: float = 10.0,
    watcher_factory: Callable[..., ClusterWatcher] = ClusterWatcher,
) -> None:
    """Block until ``stop`` is set: campaign, and watch while leading.

    ``namespace``: watch one namespace (``None``: the whole cluster). ``resync_period``: seconds
    between full resyncs (every ModelServing enqueued) while leading, the safety net for any missed
    event and for timed waits such as drain timeouts. ``heartbeat``: touched every
    ``heartbeat_interval`` seconds while healthy (see the module docstring).
    """
    stop = stop or threading.Event()
    state: dict[str, ClusterWatcher | None] = {"watcher": None}
    lock = threading.Lock()

    def started() -> None:
        with lock:
            if state["watcher"] is None:
                state["watcher"] = watcher_factory(api_client, enqueue, namespace=namespace).start()

    def stopped() -> None:
        with lock:
            watcher, state["watcher"] = state["watcher"], None
        if watcher is not None:
            watcher.stop(timeout=10)

    elector = elector_factory(
        api_client,
        lease_namespace,
        lease_name,
        on_started_leading=started,
        on_stopped_leading=stopped,
    )
    cluster = KubernetesCluster(api_client)
    elector.start()
    # One election attempt takes at most a GET and a PUT with the client's timeouts (5 s connect,
    # 30 s read each) plus the retry period: anything slower than this means the loop is stuck.
    election_silence = max(elector.retry_period * 3, 75.0)
    tick = min(heartbeat_interval, resync_period) if heartbeat is not None else resync_period
    next_resync = time.monotonic() + resync_period
    try:
        while not stop.wait(tick):
            if heartbeat is not None and healthy(elector, state["watcher"], election_silence):
                try:
                    heartbeat.beat()
                except OSError as exc:
                    log.warning("could not write the heartbeat %s: %s", heartbeat.path, exc)
            if time.monotonic() < next_resync:
                continue
            next_resync = time.monotonic() + resync_period
            if not elector.is_leader():
                continue
            try:
                for ms in cluster.list_modelservings(namespace):
                    meta = ms.get("metadata") or {}
                    enqueue(meta.get("namespace", ""), meta["name"])
            except ClusterError as exc:
                log.warning("periodic resync failed: %s", exc)
    finally:
        elector.stop(timeout=10)
        stopped()


def healthy(elector: LeaseElector, watcher: ClusterWatcher | None, election_silence: float) -> bool:
    """The election loop turns and, while this process leads, its watch streams make progress."""
    if not elector.running(election_silence):
        return False
    if elector.is_leader():
        return watcher is not None and watcher.healthy()
    return True
