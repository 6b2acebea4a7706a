"""Simulated kubelets: pod phases, containers, images, readiness gates, termination, node failure.

Timeline of a healthy pod (seconds drawn per pod from the seeded RNG when a timing is a range):

    created --schedule--> bound (scheduler.py) --pull--> --start--> running, loading --load--> Ready
    deleted --terminate--> removed (its GPUs are free only now)

Example with the group-rolling scenario's timing {schedule: 1, pull: 5, start: 2, load: 30,
terminate: 3}: a pod created at t=100 is bound at 101, its container runs at 108 and is ready at
138; deleted at 200, it is gone (and its GPU free) at 203.

Per-image behaviour (scenario ``images:``): ``crash`` makes the container exit at the end of every
load phase, so it never becomes ready, its restartCount grows and it waits in CrashLoopBackOff
(10 s, doubling, at most 300 s, as the real kubelet); ``load`` overrides the load timing.

Readiness: pod ``Ready`` = all containers ready AND every ``spec.readinessGates`` condition True.
When someone else (the controller) changes a pod's conditions, the kubelet recomputes ``Ready``.

In-place image change: a container whose ``spec`` image differs from the one it runs is restarted:
restartCount+1, pull + start + load again, and then ``image``/``imageID`` show the new image. The pod
keeps its UID, node and IP. ``imageID`` is ``sha256:`` + the SHA-256 of the image reference, stable.

Requests in flight on a pod are interrupted (``on_stop`` hooks, used by the router) when the pod
starts terminating, when one of its containers restarts, and when its node fails.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.core.ports import NotFound, Obj

from ..config import ClusterConfig, Span
from .clock import EventLoop
from .store import Change, InMemoryStore, rfc3339

CRASH_BACKOFF_START = 10.0
CRASH_BACKOFF_MAX = 300.0
KUBELET_OWNED = ("Initialized", "ContainersReady", "Ready")


def image_id(image: str) -> str:
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


# The kubelet's status rules that do not depend on how the runtime is kept (here in memory, in the
# live app in the pod itself: ``controller.simcluster.database.kubelet``), shared by both.


def ready_conditions(pod: Obj, conditions: list[Obj], containers_ready: bool, stamp: str) -> list[Obj]:
    """Initialized / ContainersReady / Ready, keeping every other condition (readiness gates)."""
    gates = [g.get("conditionType") for g in (pod.get("spec") or {}).get("readinessGates") or []]
    by_type = {c.get("type"): c for c in conditions}
    gates_ok = all((by_type.get(g) or {}).get("status") == "True" for g in gates)
    ready = containers_ready and gates_ok
    out = [c for c in conditions if c.get("type") not in KUBELET_OWNED]
    for ctype, value in (("Initialized", True), ("ContainersReady", containers_ready), ("Ready", ready)):
        text = "True" if value else "False"
        old = by_type.get(ctype)
        since = old.get("lastTransitionTime") if old and old.get("status") == text else stamp
        cond = {"type": ctype, "status": text, "lastTransitionTime": since}
        if ctype == "Ready" and not value and containers_ready and not gates_ok:
            cond["reason"] = "ReadinessGatesNotReady"
        out.append(cond)
    return out


def node_lost_status(status: Obj, node: str, pod_name: str | None) -> Obj:
    """The status of a pod whose node is lost: Failed, NodeLost, its containers no longer ready."""
    status = {
        **status,
        "phase": "Failed",
        "reason": "NodeLost",
        "message": f"Node {node} which was running pod {pod_name} is unresponsive",
    }
    status["conditions"] = [
        {**c, "status": "False"} if c.get("type") in ("Ready", "ContainersReady") else c
        for c in status.get("conditions") or []
    ]
    return status


@dataclass
class ContainerRuntime:
    name: str
    image: str  # the image this container runs (or will run once started)
    running_image: str | None = None  # shown in status once started
    restart_count: int = 0
    state: str = "waiting"  # waiting | running | terminated
    reason: str = "ContainerCreating"
    started_at: float | None = None
    ready: bool = False
    started: bool = False
    gen: int = 0  # bumped to invalidate this container's pending timers
    attempts: int = 0  # start attempts (for fresh RNG draws per attempt)


@dataclass
class PodRuntime:
    namespace: str
    name: str
    uid: str
    node: str
    containers: list[ContainerRuntime] = field(default_factory=list)
    terminating: bool = False
    gen: int = 0  # bumped on termination to invalidate every pending timer of the pod


class Kubelets:
    """All nodes' kubelets at once (one object; per-node state lives in the pod records)."""

    def __init__(
        self, store: InMemoryStore, loop: EventLoop, config: ClusterConfig, rng_for: Callable[[Obj, str], random.Random]
    ) -> None:
        self.store = store
        self.loop = loop
        self.config = config
        self.rng_for = rng_for
        self.pods: dict[tuple[str, str], PodRuntime] = {}
        self.on_stop: list[Callable[[str, str, str, str], None]] = []  # (ns, name, uid, reason)
        store.add_listener(self._on_change)

    # -- helpers ----------------------------------------------------------------------------------

    def _write(self, fn: Callable[[], object]) -> None:
        previous, self.store.actor = self.store.actor, "kubelet"
        try:
            fn()
        except NotFound:
            pass
        finally:
            self.store.actor = previous

    def _stop_serving(self, rt: PodRuntime, reason: str) -> None:
        for hook in self.on_stop:
            hook(rt.namespace, rt.name, rt.uid, reason)

    def _draw(self, rt: PodRuntime, key: str, span: Span) -> float:
        return span.draw(self.rng_for({"metadata": {"uid": rt.uid}}, key))

    # -- watch ------------------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.kind != "Pod":
            return
        key = (change.namespace, change.name)
        if change.type == "DELETED":
            rt = self.pods.pop(key, None)
            if rt is not None and rt.uid == change.old["metadata"]["uid"]:
                rt.gen += 1
                self._stop_serving(rt, "removed")
            return
        if change.type != "MODIFIED":
            return
        new, old = change.obj, change.old
        node = (new.get("spec") or {}).get("nodeName")
        if node and not (old.get("spec") or {}).get("nodeName"):
            self._start_pod(new)
            return
        rt = self.pods.get(key)
        if rt is None or rt.uid != new["metadata"]["uid"]:
            return
        if new["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            self._terminate(rt, new)
            return
        if rt.terminating:
            return
        if change.by != "kubelet":
            if (new.get("spec") or {}).get("containers") != (old.get("spec") or {}).get("containers"):
                self._sync_images(rt, new)
            if (new.get("status") or {}).get("conditions") != (old.get("status") or {}).get("conditions"):
                # Someone set a readiness gate: Ready follows on the kubelet's next status sync.
                gen = rt.gen
                self.loop.call_later(0, lambda: gen == rt.gen and self._sync_status(rt))

    # -- lifecycle --------------------------------------------------------------------------------

    def _start_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        rt = PodRuntime(meta["namespace"], meta["name"], meta["uid"], pod["spec"]["nodeName"])
        rt.containers = [
            ContainerRuntime(c.get("name", f"c{i}"), c.get("image", ""))
            for i, c in enumerate(pod["spec"].get("containers") or [])
        ]
        self.pods[(rt.namespace, rt.name)] = rt
        # Pull and start are drawn once per pod (one image pull per pod in this model); load per image.
        pull = self._draw(rt, "pull", self.config.timing["pull"])
        start = self._draw(rt, "start", self.config.timing["start"])
        for c in rt.containers:
            self._run_container(rt, c, pull + start)
        self._sync_status(rt)

    def _run_container(self, rt: PodRuntime, c: ContainerRuntime, until_running: float) -> None:
        c.gen += 1
        c.attempts += 1
        gen, pgen = c.gen, rt.gen
        self.loop.call_later(until_running, lambda: self._container_running(rt, c, gen, pgen))

    def _alive(self, rt: PodRuntime, c: ContainerRuntime, gen: int, pgen: int) -> bool:
        return c.gen == gen and rt.gen == pgen and not rt.terminating and self.pods.get((rt.namespace, rt.name)) is rt

    def _container_running(self, rt: PodRuntime, c: ContainerRuntime, gen: int, pgen: int) -> None:
        if not self._alive(rt, c, gen, pgen):
            return
        c.state, c.reason, c.started, c.ready = "running", "", True, False
        c.running_image, c.started_at = c.image, self.loop.now()
        behaviour = self.config.image(c.image)
        load = self._draw(rt, f"load/{c.name}/{c.attempts}", behaviour.load or self.config.timing["load"])
        self.loop.call_later(load, lambda: self._container_loaded(rt, c, gen, pgen))
        self._sync_status(rt)

    def _container_loaded(self, rt: PodRuntime, c: ContainerRuntime, gen: int, pgen: int) -> None:
        if not self._alive(rt, c, gen, pgen):
            return
        if self.config.image(c.image).crash:
            # Exit 1, then CrashLoopBackOff: 10 s after the first crash, 20 s, 40 s, ... at most 300 s.
            c.restart_count += 1
            backoff = min(CRASH_BACKOFF_MAX, CRASH_BACKOFF_START * 2 ** (c.restart_count - 1))
            c.state, c.reason, c.started, c.ready = "waiting", "CrashLoopBackOff", False, False
            start = self._draw(rt, f"start/{c.name}/{c.attempts}", self.config.timing["start"])
            self._run_container(rt, c, backoff + start)
        else:
            c.ready = True
        self._sync_status(rt)

    def _sync_images(self, rt: PodRuntime, pod: Obj) -> None:
        specs = {c.get("name"): c.get("image", "") for c in pod["spec"].get("containers") or []}
        restarted = False
        for c in rt.containers:
            new_image = specs.get(c.name, c.image)
            if new_image == c.image:
                continue
            if not restarted:
                self._stop_serving(rt, "container restart")
                restarted = True
            # The old container is killed and a new one created from the new image: one restart.
            c.image = new_image
            c.restart_count += 1
            c.state, c.reason, c.started, c.ready = "waiting", "ContainerCreating", False, False
            pull = self._draw(rt, f"pull/{c.name}/{c.attempts}", self.config.timing["pull"])
            start = self._draw(rt, f"start/{c.name}/{c.attempts}", self.config.timing["start"])
            self._run_container(rt, c, pull + start)
        if restarted:
            self._sync_status(rt)

    def _terminate(self, rt: PodRuntime, pod: Obj) -> None:
        rt.terminating = True
        rt.gen += 1
        self._stop_serving(rt, "deleted")
        for c in rt.containers:
            c.ready = False
        self._sync_status(rt)
        grace = pod["metadata"].get("deletionGracePeriodSeconds")
        delay = self._draw(rt, "terminate", self.config.timing["terminate"])
        if grace is not None:
            delay = min(delay, float(grace))  # SIGKILL at the end of the grace period
        uid = rt.uid
        self.loop.call_later(delay, lambda: self._write(lambda: self.store.remove_pod(rt.namespace, rt.name, uid=uid)))

    def fail_node(self, node_name: str) -> list[str]:
        """The node is lost: it leaves the cluster, its pods fail and are removed. Returns pod names."""
        self._write(lambda: self.store.remove_node(node_name))
        victims = [rt for rt in self.pods.values() if rt.node == node_name]
        victims.sort(key=lambda rt: (rt.namespace, rt.name))
        for rt in victims:
            rt.gen += 1
            rt.terminating = True
            self._stop_serving(rt, "node failed")
            pod = self.store.peek_pod(rt.namespace, rt.name)
            if pod is not None:
                status = node_lost_status(pod.get("status") or {}, node_name, rt.name)
                self._write(
                    lambda rt=rt, status=status: self.store.write_pod_status(rt.namespace, rt.name, status, uid=rt.uid)
                )
            self._write(lambda rt=rt: self.store.remove_pod(rt.namespace, rt.name, uid=rt.uid))
        # Pods bound there but not yet started by the kubelet do not exist here: none (binding starts them).
        return [rt.name for rt in victims]

    # -- status -----------------------------------------------------------------------------------

    def _sync_status(self, rt: PodRuntime) -> None:
        pod = self.store.peek_pod(rt.namespace, rt.name)
        if pod is None or pod["metadata"].get("uid") != rt.uid:
            return
        self._write(lambda: self.store.write_pod_status(rt.namespace, rt.name, self.render_status(rt, pod), uid=rt.uid))

    def render_status(self, rt: PodRuntime, pod: Obj) -> Obj:
        status = dict(pod.get("status") or {})
        now = rfc3339(self.loop.now())
        statuses = []
        for c in rt.containers:
            shown = c.running_image or c.image
            entry = {
                "name": c.name,
                "image": shown,
                "imageID": image_id(shown) if c.running_image else "",
                "ready": c.ready,
                "started": c.started,
                "restartCount": c.restart_count,
            }
            if c.state == "running":
                entry["state"] = {"running": {"startedAt": rfc3339(c.started_at or 0.0)}}
            else:
                entry["state"] = {"waiting": {"reason": c.reason}}
            statuses.append(entry)
        containers_ready = bool(rt.containers) and all(c.ready for c in rt.containers) and not rt.terminating
        conditions = ready_conditions(pod, status.get("conditions") or [], containers_ready, now)
        phase = "Running" if any(c.started or c.restart_count for c in rt.containers) else "Pending"
        status.update(phase=phase, conditions=conditions, containerStatuses=statuses)
        return status
