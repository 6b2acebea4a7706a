"""The in-memory driver's KServe, Deployment and ReplicaSet controllers, on the event loop.

What they do is ``controller.simcluster.controllers`` (shared with the database driver); this only
decides when: every real change of a pod, ReplicaSet, Deployment, InferenceService or the KServe
ConfigMap queues a pass of the controllers concerned ``COALESCE_SECONDS`` later (several changes in
that window make one pass, like a work queue), and a pass that asks to look again
(``requeue_after``: a progress deadline, a scale-to-zero grace period) gets a timer. Writes are made
as the actor ``kube-controller``. A pass that loses a race is retried 0.1 s later.
"""

from __future__ import annotations

from controller.core import workqueue
from controller.core.ports import ClusterError

from .. import controllers
from ..controllers import Key
from ..objects import INFERENCESERVICE
from .clock import EventLoop, Timer
from .store import Change, InMemoryStore

ACTOR = "kube-controller"


class WorkloadControllers:
    def __init__(self, store: InMemoryStore, loop: EventLoop) -> None:
        self.store = store
        self.loop = loop
        self.queue: dict[Key, Timer] = {}
        self.timers: list[Timer] = []  # wake-ups passes asked for (requeue_after)
        self.passes = 0
        self.errors: list[tuple[float, str]] = []
        store.add_listener(self._on_change)

    def _on_change(self, change: Change) -> None:
        obj = change.obj if change.obj is not None else change.old
        if change.kind == "Pod":
            # The commonest change by far (27,000 in a 1,000-group preview), and it concerns one
            # ReplicaSet at most: what ``keys_for_change`` answers, without its list of keys.
            key = controllers.replicaset_of_pod(obj) if obj is not None else None
            if key is not None:
                self.enqueue(key)
            return
        for key in controllers.keys_for_change(change.kind, obj, self._inferenceservices):
            self.enqueue(key)

    def _inferenceservices(self):
        return self.store.list_objects(INFERENCESERVICE)

    def enqueue(self, key: Key, delay: float = workqueue.COALESCE_SECONDS) -> None:
        at = self.loop.now() + delay
        pending = self.queue.get(key)
        if workqueue.already_queued(None if pending is None or pending.cancelled else pending.at, at):
            return
        if pending is not None:
            pending.cancel()
        self.queue[key] = self.loop.call_at(at, lambda: self._work(key))

    def _work(self, key: Key) -> None:
        self.queue.pop(key, None)
        self.passes += 1
        previous, self.store.actor = self.store.actor, ACTOR
        try:
            again = controllers.sync(self.store, key, self.loop.now())
        except ClusterError as exc:
            self.errors.append((self.loop.now(), f"{key[0]} {key[1]}/{key[2]}: {type(exc).__name__}: {exc}"))
            again = 0.1
        finally:
            self.store.actor = previous
        if again is not None:
            self.timers = [t for t in self.timers if not t.cancelled and t.at > self.loop.now()]
            self.timers.append(self.loop.call_later(again, lambda: self.enqueue(key)))

    def restart(self) -> None:
        """The controllers restart: their queues and timers are lost; they start from a full list
        of every object, like fresh informers."""
        for timer in [*self.queue.values(), *self.timers]:
            timer.cancel()
        self.queue.clear()
        self.timers.clear()
        for kind in controllers.ORDER:
            for obj in self.store.list_objects(kind):
                self.enqueue((kind, obj["metadata"]["namespace"], obj["metadata"]["name"]))
