"""One simulated cluster in memory: store + scheduler + kubelets + router, on one event loop."""

from __future__ import annotations

import dataclasses
import random

from controller.core.ports import Obj

from .. import physics
from ..config import ClusterConfig, Traffic
from .clock import EventLoop, VirtualClock
from .kubelet import Kubelets
from .router import SimRouter
from .scheduler import Scheduler
from .store import InMemoryStore
from .workloads import WorkloadControllers


class SimCluster:
    def __init__(
        self,
        config: ClusterConfig,
        *,
        seed: int = 0,
        namespace: str = "default",
        ms_name: str = "",
        traffic: Traffic | None = None,
        copy_reads: bool = False,
        loop: EventLoop | None = None,
    ) -> None:
        # The seed is part of every physics draw's key (``physics.draw``).
        self.config = config = dataclasses.replace(config, seed=seed)
        self.seed = seed
        self.loop = loop or EventLoop(VirtualClock())
        self.clock = self.loop.clock
        self.store = InMemoryStore(self.clock, seed=seed, copy_reads=copy_reads)
        self.scheduler = Scheduler(self.store, self.loop, config)
        self.kubelets = Kubelets(self.store, self.loop, config)
        self.router = SimRouter(
            self.store, self.loop, config, namespace, ms_name, traffic, random.Random(f"{seed}:traffic")
        )
        self.kubelets.on_stop.append(self.router.interrupt)
        # KServe, Deployment and ReplicaSet controllers: idle unless InferenceServices exist.
        self.workloads = WorkloadControllers(self.store, self.loop)
        self._node_count = 0
        self.add_nodes(config.nodes, config.gpus_per_node)

    def node_name(self, index: int) -> str:
        return f"node-{index}"

    def add_nodes(self, count: int, gpus: int) -> list[str]:
        names = []
        for _ in range(count):
            i = self._node_count
            self._node_count += 1
            self.store.add_node(self.node_name(i), gpus, ip=physics.node_ip(i))
            names.append(self.node_name(i))
        return names

    def add_node(self, name: str, gpus: int) -> str:
        """A node named as in the cluster a copy is made of (``restore``), with the next node IP."""
        i = self._node_count
        self._node_count += 1
        self.store.add_node(name, gpus, ip=physics.node_ip(i))
        return name

    def restore(self, *, modelservings: list[Obj], revisions: list[Obj], pods: list[Obj]) -> None:
        """Copy objects from another cluster (at this cluster's current time, which should be the
        other's: a pod's kubelet state holds deadlines on its clock) and take them up where they
        are: the scheduler counts the GPUs of bound pods and considers the pending ones, the
        kubelets wake each pod at its next step (``Scheduler.restore``, ``Kubelets.restore``).
        Add the nodes first, named as there; requests in flight are not copied."""
        self.store.restore(modelservings=modelservings, revisions=revisions, pods=pods)
        self.scheduler.restore()
        self.kubelets.restore()

    def fail_node(self, name: str) -> list[str]:
        return self.kubelets.fail_node(name)
