"""One step of the live simulated cluster: run by the ``sim_tick`` task every second.

1. The kubelet steps that are due (``SimObject.next_at <= now``): ``physics.advance`` (pull and start
   done -> running and loading; load done -> Ready, or a crash and CrashLoopBackOff; terminate done
   -> removed), catching up on several steps after an outage.
2. The scheduler: pods whose scheduling delay passed go, oldest first, to the node
   ``physics.place`` picks (the most free GPUs that fit: kube-scheduler's LeastAllocated; ties to
   the earlier node) and the node's kubelet starts them (``physics.bind`` then ``physics.start``, in
   one write); pods that fit nowhere get ``physics.unschedulable``'s condition and are retried on
   every tick. Pods of a Volcano gang (``physics.schedule_gang``) are bound together or not at all.
3. The simulated KServe, Deployment and ReplicaSet controllers (``controller.simcluster.controllers``):
   one pass over every InferenceService, then every Deployment, then every ReplicaSet, so a spec
   change reaches the pods within one tick and pod readiness reaches the InferenceService's status
   over the next ones. They are part of the simulated cluster (on Kubernetes, KServe and
   kube-controller-manager run them), so they run here, not in the product's reconcile tasks; level
   triggered, every tick, they need no wake-ups (a progress deadline is checked on every pass).
4. Traffic (``cluster.traffic.step``, when the cluster was given a ``RedisTraffic``).

The rules are the in-memory driver's (``controller.simcluster.physics``); only the storage and the
timing differ: everything read and written is in the database (and Redis for in-flight requests),
so a tick may run in any worker process; the ``sim_tick`` task (``controller.runtime.periodic``)
holds a Redis lock so two ticks never overlap. Every write goes through ``DatabaseCluster``
(compare-and-set), so a tick racing a reconcile never loses either write, and every change is
reported to the cluster's ``on_change`` (the runtime enqueues a reconcile of its ModelServing).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from controller.core import naming
from controller.core.kserve.materialize import LABEL_ISVC
from controller.core.ports import PODGROUP, Conflict, NotFound, Obj
from controller.models import SimObject
from controller.simcluster import controllers, physics, podlog

from .store import REMOVE, DatabaseCluster

log = logging.getLogger(__name__)


def tick(cluster: DatabaseCluster, *, now: float | None = None) -> dict[str, Any]:
    """One tick at ``now`` (default: the cluster's clock). Returns what it did, for the task's log."""
    now = cluster.clock.now() if now is None else now
    config = cluster.config
    started = time.perf_counter()
    report: dict[str, Any] = {"now": now, "advanced": 0, "removed": 0, "bound": 0, "unschedulable": 0, "ready": []}
    due = list(
        SimObject.objects.filter(kind=SimObject.KIND_POD, next_at__lte=now)
        .order_by("next_at", "pk")
        .values_list("namespace", "name", "pk", "data")
    )
    to_schedule: list[tuple[str, str, int, Obj]] = []
    for ns, name, pk, data in due:
        if physics.awaiting_schedule(data):
            to_schedule.append((ns, name, pk, data))
            continue

        def step(old: Obj) -> Any:
            new = physics.advance(old, now, config).pod
            return REMOVE if new is None else new

        try:
            before, after = cluster.update_pod(ns, name, step)
        except NotFound:
            continue
        if after is REMOVE:
            report["removed"] += 1
        elif after is not before:
            report["advanced"] += 1
            if _ready(after) and not _ready(before):
                report["ready"].append(f"{ns}/{name}")
            if cluster.traffic is not None:
                # A crash is a Warning on the cluster's event list too (the Events page).
                for crash in podlog.crashes(before, after):
                    cluster.traffic.add_event(
                        {**crash, "wall": time.time(), "namespace": ns, "kind": "Pod", "name": name}
                        | _workload_of(after)
                    )
    if to_schedule:
        _schedule(cluster, to_schedule, now, report)
    report["workloads"] = sync_workloads(cluster, now)
    if cluster.traffic is not None:
        report["traffic"] = cluster.traffic.step(now, config)
    report["seconds"] = round(time.perf_counter() - started, 4)
    return report


def sync_workloads(cluster: DatabaseCluster, now: float) -> int:
    """One pass of the simulated controllers over every workload object (see the module docstring).
    Returns how many passes ran (0 and a single query when there are no such objects)."""
    keys = list(SimObject.objects.filter(kind__in=controllers.ORDER).values_list("kind", "namespace", "name"))
    if not keys:
        return 0
    rank = {kind: i for i, kind in enumerate(controllers.ORDER)}
    keys.sort(key=lambda k: (rank[k[0]], k[1], k[2]))
    previous, cluster.actor = cluster.actor, "kube-controller"
    passes = 0
    try:
        for key in keys:
            try:
                controllers.sync(cluster, key, now)
            except (NotFound, Conflict) as exc:  # deleted meanwhile, or a lost race: the next tick retries
                log.info("simulated controller pass of %s %s/%s skipped: %s", *key, exc)
                continue
            passes += 1
    finally:
        cluster.actor = previous
    return passes


def _workload_of(pod: Obj) -> dict[str, str]:
    """``{"workload", "workloadKind"}`` of a pod: its ModelServing (the name label) or its
    InferenceService (KServe's label); {} for neither."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(naming.LABEL_NAME):
        return {"workload": labels[naming.LABEL_NAME], "workloadKind": naming.KIND}
    if labels.get(LABEL_ISVC):
        return {"workload": labels[LABEL_ISVC], "workloadKind": "InferenceService"}
    return {}


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _schedule(
    cluster: DatabaseCluster, pending: list[tuple[str, str, int, Obj]], now: float, report: dict[str, Any]
) -> None:
    nodes = cluster.list_nodes()
    used = cluster.gpus_used()
    config = cluster.config
    gangs_done: set[tuple[str, str]] = set()
    # Oldest first (creation order), like the scheduler's queue.
    for ns, name, pk, data in sorted(pending, key=lambda item: item[2]):
        group = physics.gang_of(data)
        if group and (ns, group) in gangs_done:
            continue
        if group and _schedule_gang(cluster, ns, group, data, nodes, used, now, report):
            gangs_done.add((ns, group))
            continue
        need = physics.pod_gpus(data)
        best_name, most_free = physics.place({n.name: n.gpus - used.get(n.name, 0) for n in nodes}, need)
        uid = data["metadata"].get("uid")

        if best_name is None:
            node_count = len(nodes)

            def mark(old: Obj, n=node_count, need=need, most_free=most_free) -> Obj:
                return physics.unschedulable(old, now, n, need, most_free)

            try:
                cluster.update_pod(ns, name, mark)
            except NotFound:
                pass
            report["unschedulable"] += 1
            continue
        best = next(n for n in nodes if n.name == best_name)

        def bind(old: Obj, node=best, pk=pk, uid=uid) -> Obj:
            if (
                old["metadata"].get("uid") != uid
                or (old.get("spec") or {}).get("nodeName")
                or old["metadata"].get("deletionTimestamp")
            ):
                return old
            # Bound, and started at once by the node's kubelet (one write).
            bound = physics.bind(old, now, node.name, node.ip, physics.pod_ip(pk))
            return physics.start(bound, now, config).pod

        try:
            before, after = cluster.update_pod(ns, name, bind)
        except NotFound:
            continue
        if after is not before and after is not REMOVE:
            used[best.name] = used.get(best.name, 0) + need
            report["bound"] += 1


def _schedule_gang(
    cluster: DatabaseCluster, ns: str, group: str, pod: Obj, nodes: list, used: dict[str, int], now: float, report
) -> bool:
    """Volcano's turn for one PodGroup (the in-memory scheduler's rule, ``physics.schedule_gang``):
    True when it decided for the whole gang, False when ``pod`` is placed on its own."""
    try:
        podgroup = cluster.get_object(PODGROUP, ns, group)
    except NotFound:
        return False
    ms_name = ((pod.get("metadata") or {}).get("labels") or {}).get(naming.LABEL_NAME, "")
    members = [
        p
        for p in cluster.list_pods(ns, ms_name)
        if physics.gang_of(p) == group and not p["metadata"].get("deletionTimestamp")
    ]
    free = {n.name: n.gpus - used.get(n.name, 0) for n in nodes}
    bindings, message = physics.schedule_gang(podgroup, members, free)
    if not bindings and message is None:
        return False
    by_name = {n.name: n for n in nodes}
    config = cluster.config
    # Pod IPs come from the row's primary key, as for a pod placed on its own.
    pks = dict(
        SimObject.objects.filter(kind=SimObject.KIND_POD, namespace=ns, name__in=list(bindings)).values_list(
            "name", "pk"
        )
    )
    for member in members:
        meta = member["metadata"]
        if (member.get("spec") or {}).get("nodeName"):
            continue
        uid, node_name = meta.get("uid"), bindings.get(meta["name"])
        if node_name is None:
            if message is None:
                continue

            def mark(old: Obj) -> Obj:
                return physics.unschedulable(old, now, len(nodes), physics.pod_gpus(old), 0, message=message)

            try:
                cluster.update_pod(ns, meta["name"], mark)
            except NotFound:
                continue
            report["unschedulable"] += 1
            continue
        node, pk = by_name[node_name], pks.get(meta["name"], 0)

        def bind(old: Obj, node=node, uid=uid, pk=pk) -> Obj:
            if old["metadata"].get("uid") != uid or (old.get("spec") or {}).get("nodeName"):
                return old
            return physics.start(physics.bind(old, now, node.name, node.ip, physics.pod_ip(pk)), now, config).pod

        try:
            before, after = cluster.update_pod(ns, meta["name"], bind)
        except NotFound:
            continue
        if after is not before and after is not REMOVE:
            used[node.name] = used.get(node.name, 0) + physics.pod_gpus(member)
            report["bound"] += 1
    return True
