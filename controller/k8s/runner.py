"""The one acting controller per cluster: leader election gating the shared watch.

``run_controller`` is what a long-running process on a cluster calls (``python -m controller.k8s
watch``, or a management command with its own ``enqueue``): it campaigns for the Lease and, while
leading, runs the ``ClusterWatcher`` whose events (and a periodic full resync) enqueue reconciles.
When leadership is lost the watch stops at once, so two replicas never feed the queue from two
watches; the new leader relists on start, so nothing is missed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import kubernetes

from controller.core.ports import ClusterError
from controller.k8s.cluster import KubernetesCluster
from controller.k8s.leader import LeaseElector
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
) -> None:
    """Block until ``stop`` is set: campaign, and watch while leading.

    ``namespace``: watch one namespace (``None``: the whole cluster). ``resync_period``: seconds
    between full resyncs (every ModelServing enqueued) while leading, the safety net for any missed
    event and for timed waits such as drain timeouts.
    """
    stop = stop or threading.Event()
    state: dict[str, ClusterWatcher | None] = {"watcher": None}
    lock = threading.Lock()

    def started() -> None:
        with lock:
            if state["watcher"] is None:
                state["watcher"] = ClusterWatcher(api_client, enqueue, namespace=namespace).start()

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
    try:
        while not stop.wait(resync_period):
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
