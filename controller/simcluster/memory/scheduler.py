"""The simulated kube-scheduler: places pending pods on nodes by ``nvidia.com/gpu``.

A new pod is considered ``schedule`` seconds (drawn per pod) after it is created. It goes to the
node with the most free GPUs that fits it (kube-scheduler's default LeastAllocated scoring; ties go
to the earlier node), which spreads a rollout's pods. When no node fits, the pod stays Pending with
``PodScheduled=False, reason=Unschedulable`` and a message in kube-scheduler's words, e.g. on three
full 2-GPU nodes: ``0/3 nodes are available: 3 Insufficient nvidia.com/gpu (pod needs 1 free
nvidia.com/gpu; the most free on one node is 0)``. Unschedulable pods are retried, oldest first,
whenever capacity appears (a bound pod is finally removed, or a node is added): like the real
scheduler's unschedulable queue, no polling.

GPU accounting is kept incrementally (bind: +n on the node; final removal of a bound pod: -n), so
a placement costs O(nodes), not O(pods). A terminating pod keeps its GPUs until it is removed.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from controller.core import naming
from controller.core.ports import NotFound, Obj

from ..config import ClusterConfig
from .clock import EventLoop
from .store import Change, InMemoryStore, rfc3339


def pod_gpus(pod: Obj) -> int:
    """GPUs a pod needs: the sum over its containers of the GPU request (the limit when no request).

    Example: containers with limits {"nvidia.com/gpu": "1"} and {"nvidia.com/gpu": "2"} need 3.
    Init containers run before the others, so they add only what exceeds the regular sum.
    """
    spec = pod.get("spec") or {}

    def need(container: Obj) -> int:
        res = container.get("resources") or {}
        value = (res.get("requests") or {}).get(naming.GPU_RESOURCE)
        if value is None:
            value = (res.get("limits") or {}).get(naming.GPU_RESOURCE)
        return int(value or 0)

    regular = sum(need(c) for c in spec.get("containers") or [])
    init = max((need(c) for c in spec.get("initContainers") or []), default=0)
    return max(regular, init)


class Scheduler:
    def __init__(
        self, store: InMemoryStore, loop: EventLoop, config: ClusterConfig, rng_for: Callable[[Obj, str], random.Random]
    ) -> None:
        self.store = store
        self.loop = loop
        self.config = config
        self.rng_for = rng_for
        self.used: dict[str, int] = {}  # node name -> GPUs held by bound pods
        self._unschedulable: dict[tuple[str, str], str] = {}  # (ns, name) -> uid, in arrival order
        self._retry_scheduled = False
        self._pod_ips = 0
        store.add_listener(self._on_change)

    # -- capacity -------------------------------------------------------------------------------

    def capacity(self, node: Obj) -> int:
        return int(((node.get("status") or {}).get("allocatable") or {}).get(naming.GPU_RESOURCE, 0))

    def free(self) -> dict[str, int]:
        return {
            n["metadata"]["name"]: self.capacity(n) - self.used.get(n["metadata"]["name"], 0)
            for n in self.store.list_nodes()
        }

    # -- events ---------------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind == "Pod":
            if change.type == "ADDED":
                pod = change.obj
                delay = self.config.timing["schedule"].draw(self.rng_for(pod, "schedule"))
                uid = pod["metadata"]["uid"]
                self.loop.call_later(delay, lambda: self._attempt(change.namespace, change.name, uid))
            elif change.type == "DELETED":
                node = (change.old.get("spec") or {}).get("nodeName")
                self._unschedulable.pop((change.namespace, change.name), None)
                if node:
                    self.used[node] = self.used.get(node, 0) - pod_gpus(change.old)
                    self._schedule_retry()
        elif change.kind == "Node":
            if change.type == "ADDED":
                self._schedule_retry()
            elif change.type == "DELETED":
                self.used.pop(change.name, None)

    def _schedule_retry(self) -> None:
        if self._unschedulable and not self._retry_scheduled:
            self._retry_scheduled = True
            self.loop.call_later(0, self._retry)

    def _retry(self) -> None:
        self._retry_scheduled = False
        for (ns, name), uid in list(self._unschedulable.items()):
            self._attempt(ns, name, uid, retry=True)

    # -- placement ------------------------------------------------------------------------------

    def _attempt(self, namespace: str, name: str, uid: str, *, retry: bool = False) -> None:
        pod = self.store.peek_pod(namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid or (pod.get("spec") or {}).get("nodeName"):
            self._unschedulable.pop((namespace, name), None)
            return
        if pod["metadata"].get("deletionTimestamp"):
            return
        need = pod_gpus(pod)
        nodes = self.store.list_nodes()
        best, best_free = None, -1
        most_free = 0
        for node in nodes:
            node_name = node["metadata"]["name"]
            free = self.capacity(node) - self.used.get(node_name, 0)
            most_free = max(most_free, free)
            if free >= need and free > best_free:
                best, best_free = node, free
        status = dict(pod.get("status") or {})
        now = rfc3339(self.loop.now())
        if best is None:
            # Stays queued; the status says why (written once: an unchanged status is a no-op).
            self._unschedulable[(namespace, name)] = uid
            n = len(nodes)
            message = (
                f"0/{n} nodes are available: {n} Insufficient {naming.GPU_RESOURCE} "
                f"(pod needs {need} free {naming.GPU_RESOURCE}; the most free on one node is {most_free})"
            )
            cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
            if old and old.get("status") == "False" and old.get("message") == message:
                return
            cond["lastTransitionTime"] = (
                now if not old or old.get("status") != "False" else old.get("lastTransitionTime", now)
            )
            self.store.write_pod_status(
                namespace, name, {**status, "phase": "Pending", "conditions": [cond, *conditions]}, uid=uid
            )
            return
        self._unschedulable.pop((namespace, name), None)
        node_name = best["metadata"]["name"]
        self.used[node_name] = self.used.get(node_name, 0) + need
        host_ip = next((a["address"] for a in best["status"].get("addresses", []) if a.get("type") == "InternalIP"), "")
        self._pod_ips += 1
        n = self._pod_ips
        # Pod IPs from 10.128.0.0/9 in binding order: 10.128.0.1, 10.128.0.2, ..., 10.128.1.0, ...
        pod_ip = f"10.{128 + (n >> 16) % 128}.{(n >> 8) & 255}.{n & 255}"
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.insert(0, {"type": "PodScheduled", "status": "True", "lastTransitionTime": now})
        new_status = {
            **status,
            "phase": "Pending",
            "conditions": conditions,
            "hostIP": host_ip,
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": now,
        }
        try:
            self.store.bind_pod(namespace, name, node_name, uid=uid, status=new_status)
        except NotFound:
            self.used[node_name] -= need
