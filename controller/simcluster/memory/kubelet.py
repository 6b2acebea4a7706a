"""The in-memory driver's kubelets: apply ``controller.simcluster.physics`` on the event loop.

What a kubelet does to a pod is decided by the pure functions in ``physics`` (the database driver
uses the same ones); this module only decides when to call them and stores what they return:

- when the scheduler binds a pod: ``physics.start``;
- at the pod's ``next_at`` (one wake-up per pod on the event loop): ``physics.advance``, one round
  per wake-up; a pod whose termination is over is removed;
- when someone else (the controller, an operator) changes the pod: a new ``deletionTimestamp`` ->
  ``physics.on_delete``; a new container image -> ``physics.on_images_changed``; new conditions (a
  readiness gate) -> ``physics.recompute_ready`` at the kubelet's next status sync (a zero-delay
  callback, after the write that set the gate);
- a failed node: ``physics.node_lost`` for each of its pods, which are then removed.

Whenever a step says the pod stops serving, the ``on_stop`` hooks (the router) interrupt the
requests in flight on it. The kubelet's state is in the pod itself (``physics.ANNOTATION_KUBELET``),
so this object keeps nothing but its pending wake-ups.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.core.ports import NotFound, Obj

from .. import physics
from ..config import ClusterConfig
from .clock import EventLoop, Timer
from .store import Change, InMemoryStore


class Kubelets:
    """All nodes' kubelets at once (their state lives in the pods)."""

    def __init__(self, store: InMemoryStore, loop: EventLoop, config: ClusterConfig) -> None:
        self.store = store
        self.loop = loop
        self.config = config
        self.wakeups: dict[tuple[str, str], Timer] = {}  # (namespace, pod) -> the pending wake-up
        self.on_stop: list[Callable[[str, str, str, str], None]] = []  # (ns, name, uid, reason)
        store.add_listener(self._on_change)

    # -- storing and scheduling ---------------------------------------------------------------------

    def _write(self, fn: Callable[[], object]) -> None:
        previous, self.store.actor = self.store.actor, "kubelet"
        try:
            fn()
        except NotFound:
            pass
        finally:
            self.store.actor = previous

    def _store(self, namespace: str, name: str, uid: str, pod: Obj) -> None:
        # ``_write`` spelled out: every kubelet step of every pod stores (12,000 in a 1,000-group
        # preview), and a closure per step adds to each.
        store = self.store
        previous, store.actor = store.actor, "kubelet"
        try:
            store.replace_pod(namespace, name, pod, uid=uid)
        except NotFound:
            pass
        finally:
            store.actor = previous

    def _wake_at(self, namespace: str, name: str, uid: str, at: float | None) -> None:
        # One pending wake-up per pod, at its earliest deadline; a step that moved it replaces it.
        pending = self.wakeups.pop((namespace, name), None)
        if pending is not None:
            pending.cancel()
        if at is not None:
            self.wakeups[(namespace, name)] = self.loop.call_at(at, lambda: self._wake(namespace, name, uid))

    def _stop_serving(self, namespace: str, name: str, uid: str, reason: str) -> None:
        for hook in self.on_stop:
            hook(namespace, name, uid, reason)

    # -- reactions --------------------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind != "Pod":
            return
        ns, name = change.namespace, change.name
        if change.type == "DELETED":
            old = change.old
            self._wake_at(ns, name, old["metadata"]["uid"], None)
            if (old.get("spec") or {}).get("nodeName"):
                self._stop_serving(ns, name, old["metadata"]["uid"], "removed")
            return
        if change.type != "MODIFIED":
            return
        new, old = change.obj, change.old
        uid = new["metadata"]["uid"]
        if (new.get("spec") or {}).get("nodeName") and not (old.get("spec") or {}).get("nodeName"):
            # Bound: this node's kubelet starts the pod (the wake-up first, then the write, so
            # callbacks due at the same instant keep the order in which they were asked for).
            pod, at, _ = physics.start(new, self.loop.now(), self.config)
            self._wake_at(ns, name, uid, at)
            self._store(ns, name, uid, pod)
            return
        if not (new.get("spec") or {}).get("nodeName"):
            return
        if new["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            pod, at, stops = physics.on_delete(new, self.loop.now(), self.config)
            if stops:
                self._stop_serving(ns, name, uid, "deleted")
            self._store(ns, name, uid, pod)
            self._wake_at(ns, name, uid, at)
            return
        if change.by == "kubelet" or physics.is_terminating(new):
            return
        if (new.get("spec") or {}).get("containers") != (old.get("spec") or {}).get("containers"):
            pod, at, stops = physics.on_images_changed(new, self.loop.now(), self.config)
            if stops:
                self._stop_serving(ns, name, uid, "container restart")
                self._wake_at(ns, name, uid, at)
                self._store(ns, name, uid, pod)
        if (new.get("status") or {}).get("conditions") != (old.get("status") or {}).get("conditions"):
            # Someone set a readiness gate: Ready follows on the kubelet's next status sync.
            self.loop.call_later(0, lambda: self._sync_ready(ns, name, uid))

    def restore(self) -> None:
        """Take up the bound pods the store was given as they are (``InMemoryStore.restore``): each
        one's next step is due when its kubelet state says. Both drivers keep that state in the pod
        from the moment it is bound (bound and started in one step), and a deleted pod's
        termination is in it from the moment it is deleted, so a pod copied at any moment of its
        life goes on from there (``tests/live/test_live_physics_parity.py``)."""
        for pod in self.store.all_pods():
            if (pod.get("spec") or {}).get("nodeName"):
                meta = pod["metadata"]
                at = physics.next_at(physics.kubelet_state(pod))
                self._wake_at(meta["namespace"], meta["name"], meta["uid"], at)

    def _sync_ready(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.peek_pod(namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid or physics.is_terminating(pod):
            return
        self._store(namespace, name, uid, physics.recompute_ready(pod, self.loop.now()))

    def _wake(self, namespace: str, name: str, uid: str) -> None:
        self.wakeups.pop((namespace, name), None)
        pod = self.store.peek_pod(namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid:
            return
        new, at, _ = physics.advance(pod, self.loop.now(), self.config, rounds=1)
        if new is None:
            self._write(lambda: self.store.remove_pod(namespace, name, uid=uid))
            return
        self._wake_at(namespace, name, uid, at)
        self._store(namespace, name, uid, new)

    def fail_node(self, node_name: str) -> list[str]:
        """The node is lost: it leaves the cluster, its pods fail and are removed. Returns pod names."""
        self._write(lambda: self.store.remove_node(node_name))
        victims = [p for p in self.store.all_pods() if (p.get("spec") or {}).get("nodeName") == node_name]
        for pod in victims:
            meta = pod["metadata"]
            ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
            self._wake_at(ns, name, uid, None)
            lost, _, _ = physics.node_lost(pod, node_name)
            self._stop_serving(ns, name, uid, "node failed")
            self._store(ns, name, uid, lost)
            self._write(lambda ns=ns, name=name, uid=uid: self.store.remove_pod(ns, name, uid=uid))
        return [p["metadata"]["name"] for p in victims]
