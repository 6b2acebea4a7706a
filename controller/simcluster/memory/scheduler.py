"""The in-memory driver's kube-scheduler: places pending pods on nodes by ``nvidia.com/gpu``.

The rules are ``controller.simcluster.physics``'s (shared with the database driver's tick): a new
pod is considered ``physics.schedule_delay`` after it is created and goes to the node
``physics.place`` picks (the most free GPUs that fit: LeastAllocated, ties to the earlier node);
when none fits it stays Pending with ``physics.unschedulable``'s condition and message. What is
particular to this driver is kept here: a timer per new pod, an incremental count of the GPUs held
per node (bind: +n on the node; final removal of a bound pod: -n; a terminating pod keeps its GPUs
until it is removed) kept with the free GPUs per node in node order (``physics.FreeGpus``, which
answers ``place`` from a heap: a 1,000-group preview places 6,000 pods on ~380 nodes), and a queue
of unschedulable pods retried, oldest first, as soon as capacity appears (a bound pod is removed,
a node is added), like the real scheduler's unschedulable queue: no polling. Pod IPs are handed out in binding order.

Gang scheduling (pods with ``schedulerName: volcano`` naming a PodGroup): when one member is
considered, the whole group is (``physics.schedule_gang``): its pending pods are bound together, or
none of them is and every one stays Pending with the gang's reason ("gang of 8 pods cannot be
placed: 5 GPUs free ...").
"""

from __future__ import annotations

from controller.core import naming
from controller.core import naming as _naming
from controller.core.ports import PODGROUP, NotFound, Obj

from .. import physics
from ..config import ClusterConfig
from .clock import EventLoop
from .store import Change, InMemoryStore


class Scheduler:
    def __init__(self, store: InMemoryStore, loop: EventLoop, config: ClusterConfig) -> None:
        self.store = store
        self.loop = loop
        self.config = config
        self.used: dict[str, int] = {}  # node name -> GPUs held by bound pods
        # Node name -> allocatable - used, for the nodes that exist, in the store's node order
        # (nodes are only added and removed, never resized), with ``place``'s answer at hand.
        self._free = physics.FreeGpus()
        self._unschedulable: dict[tuple[str, str], str] = {}  # (ns, name) -> uid, in arrival order
        self._retry_scheduled = False
        self._pod_ips = 0
        # (ns, name) -> GPUs of each pod bound by this scheduler or taken up bound (``restore``):
        # given back when it is removed without reading its containers' requests again (a pod's
        # resources never change: the store refuses any spec change but an image).
        self._held: dict[tuple[str, str], int] = {}
        store.add_listener(self._on_change)

    # -- capacity -------------------------------------------------------------------------------

    def capacity(self, node: Obj) -> int:
        return int(((node.get("status") or {}).get("allocatable") or {}).get(naming.GPU_RESOURCE, 0))

    def free(self) -> dict[str, int]:
        return dict(self._free)

    # -- events ---------------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind == "Pod":
            if change.type == "ADDED":
                pod = change.obj
                uid = pod["metadata"]["uid"]
                delay = physics.schedule_delay(pod, self.config)
                self.loop.call_later(delay, lambda: self._attempt(change.namespace, change.name, uid))
            elif change.type == "DELETED":
                node = (change.old.get("spec") or {}).get("nodeName")
                self._unschedulable.pop((change.namespace, change.name), None)
                held = self._held.pop((change.namespace, change.name), None)
                if node:
                    gpus = physics.pod_gpus(change.old) if held is None else held
                    self.used[node] = self.used.get(node, 0) - gpus
                    if node in self._free:
                        self._free.add(node, gpus)
                    self._schedule_retry()
        elif change.kind == "Node":
            if change.type == "ADDED":
                self._free.set(change.name, self.capacity(change.obj) - self.used.get(change.name, 0))
                self._schedule_retry()
            elif change.type == "DELETED":
                self.used.pop(change.name, None)
                self._free.remove(change.name)

    def restore(self) -> None:
        """Take up the pods the store was given as they are (``InMemoryStore.restore``): a bound
        pod holds its GPUs on its node (a terminating one too, until it is removed); a pod not
        bound yet is considered when the scheduling delay its kubelet state records is over (the
        database driver records it there), or at once."""
        now = self.loop.now()
        for pod in self.store.all_pods():
            meta, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
            if node:
                gpus = self._held[(meta["namespace"], meta["name"])] = physics.pod_gpus(pod)
                self.used[node] = self.used.get(node, 0) + gpus
                if node in self._free:
                    self._free.add(node, -gpus)
            elif not meta.get("deletionTimestamp"):
                state = physics.kubelet_state(pod) or {}
                at = state.get("at") if state.get("phase") == physics.SCHEDULING else None
                ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
                self.loop.call_at(
                    now if at is None else at, lambda ns=ns, name=name, uid=uid: self._attempt(ns, name, uid)
                )

    def _schedule_retry(self) -> None:
        if self._unschedulable and not self._retry_scheduled:
            self._retry_scheduled = True
            self.loop.call_later(0, self._retry)

    def _retry(self) -> None:
        self._retry_scheduled = False
        for (ns, name), uid in list(self._unschedulable.items()):
            self._attempt(ns, name, uid)

    # -- placement ------------------------------------------------------------------------------

    def _attempt(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.peek_pod(namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid or (pod.get("spec") or {}).get("nodeName"):
            self._unschedulable.pop((namespace, name), None)
            return
        if pod["metadata"].get("deletionTimestamp"):
            return
        need = physics.pod_gpus(pod)
        if physics.gang_of(pod) and self._attempt_gang(namespace, pod):
            return
        best, most_free = self._free.best(need)
        now = self.loop.now()
        if best is None:
            # Stays queued; the status says why (written once: an unchanged status is a no-op).
            self._unschedulable[(namespace, name)] = uid
            waiting = physics.unschedulable(pod, now, len(self._free), need, most_free)
            if waiting is not pod:
                self.store.write_pod_status(namespace, name, waiting["status"], uid=uid)
            return
        self._bind(namespace, name, uid, pod, best, need)

    def _bind(self, namespace: str, name: str, uid: str, pod: Obj, best: str, need: int) -> None:
        now = self.loop.now()
        self._unschedulable.pop((namespace, name), None)
        node = self.store.get_node(best)
        self.used[best] = self.used.get(best, 0) + need
        self._free.add(best, -need)
        host_ip = next((a["address"] for a in node["status"].get("addresses", []) if a.get("type") == "InternalIP"), "")
        self._pod_ips += 1
        bound = physics.bind(pod, now, best, host_ip, physics.pod_ip(self._pod_ips))
        self._held[(namespace, name)] = need
        try:
            self.store.bind_pod(namespace, name, best, uid=uid, status=bound["status"])
        except NotFound:
            self._held.pop((namespace, name), None)
            self.used[best] -= need
            self._free.add(best, need)

    def _attempt_gang(self, namespace: str, pod: Obj) -> bool:
        """Volcano's turn for the pod's PodGroup. True when it decided (bound the gang's pending
        pods, or left them all Pending); False when the pod is placed on its own (no such PodGroup,
        or ``minMember`` of the gang already run)."""
        group = physics.gang_of(pod)
        try:
            podgroup = self.store.get_object(PODGROUP, namespace, group)
        except NotFound:
            return False
        ms_name = ((pod.get("metadata") or {}).get("labels") or {}).get(_naming.LABEL_NAME, "")
        members = [
            p
            for p in self.store.list_pods(namespace, ms_name)
            if physics.gang_of(p) == group and not p["metadata"].get("deletionTimestamp")
        ]
        bindings, message = physics.schedule_gang(podgroup, members, self._free)
        if not bindings and message is None:
            return False
        now = self.loop.now()
        for member in members:
            meta = member["metadata"]
            if (member.get("spec") or {}).get("nodeName"):
                continue
            node = bindings.get(meta["name"])
            if node is not None:
                self._bind(namespace, meta["name"], meta["uid"], member, node, physics.pod_gpus(member))
                continue
            if message is None:
                continue  # beyond minMember and did not fit: its own attempt comes round again
            self._unschedulable[(namespace, meta["name"])] = meta["uid"]
            waiting = physics.unschedulable(member, now, len(self._free), physics.pod_gpus(member), 0, message=message)
            if waiting is not member:
                self.store.write_pod_status(namespace, meta["name"], waiting["status"], uid=meta["uid"])
        return True
