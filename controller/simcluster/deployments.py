"""The Kubernetes ReplicaSet and Deployment controllers of the simulated cluster.

The same decisions as kube-controller-manager (``pkg/controller/replicaset``,
``pkg/controller/deployment``), on ``apps/v1`` objects, through ``workloads.WorkloadStore``; the
rolling-update arithmetic is ``controller.core.kserve.rolling`` (the dashboard explains a wait
with the same functions):

- **ReplicaSet**: keeps ``spec.replicas`` active pods (not terminating, not failed). It creates the
  missing ones from its template (``generateName: <rs>-``) and deletes the extra ones, not-ready
  pods first: unscheduled, then pending, then not ready, then the most recently ready, the most
  restarted, the newest (kube's ``ActivePodsWithRanks``). A failed pod is deleted (the pod garbage
  collector's job, folded in here) and replaced. Status: replicas, ready and available counts.
- **Deployment**, RollingUpdate: one ReplicaSet per pod template, named ``<deployment>-<hash>``
  with the label ``pod-template-hash`` and the annotation ``deployment.kubernetes.io/revision``
  (a new template gets max + 1; going back to an older template reuses its ReplicaSet and gives it
  max + 1). Each pass does ONE kind of step, as the real controller does: create the new
  ReplicaSet (sized within ``maxSurge``) and scale old ones down in that pass; or scale the new one
  up within ``maxSurge`` and stop; or scale old ones down within ``maxUnavailable``. Once complete,
  old ReplicaSets at 0 beyond ``revisionHistoryLimit`` are deleted, oldest revisions first.
- Deployment, **Recreate** (kube's ``rolloutRecreate``): every old ReplicaSet is scaled to 0, and
  only once none of their pods runs (terminating ones included) is the new ReplicaSet created at the
  full count: an outage by design.
- ``spec.paused``: no rollout step (the new ReplicaSet is not even created); condition Progressing
  ``Unknown/DeploymentPaused``, then ``DeploymentResumed`` on resume (which restarts the deadline).
- ``progressDeadlineSeconds``: Progressing is ``True/ReplicaSetUpdated`` with ``lastUpdateTime`` =
  the last progress (more updated, ready or available pods, or fewer old ones); once that is older
  than the deadline it becomes ``False/ProgressDeadlineExceeded``; ``True/NewReplicaSetAvailable``
  when the rollout is complete.

Worked example, 8 replicas at 25%/25% (surge 2, unavailable 2): the pass that creates the new
ReplicaSet gives it 2 (10 pods wanted) and takes the old one to 6 (8 + 2 - 6 available floor - 2
new unavailable = 2 may go); when the 2 new pods are available the next pass grows the new one to 4
(6 + 4 = 10), the one after shrinks the old one to 4 (6 available - 6 floor... = 8 - 6 = 2), and so
on: never more than 10 pods wanted, never fewer than 6 available.

Pure Python (no Django); every function takes the time, none reads a clock.
"""

from __future__ import annotations

from typing import Any

from controller.core.kserve.apps import (
    ANNOTATION_REVISION,
    LABEL_TEMPLATE_HASH,
    PROGRESSING_COMPLETE,
    PROGRESSING_PAUSED,
    PROGRESSING_TIMED_OUT,
    fenceposts,
    is_complete,
    is_recreate,
    progress_deadline,
    replica_set_count,
    replicas_of,
    revision_of,
    split_replica_sets,
    status_count,
    template_hash,
)
from controller.core.kserve.rolling import ReplicaSetCount, new_replica_set_target, old_replica_set_targets
from controller.core.mergepatch import copy_json
from controller.core.ports import Conflict, NotFound, Obj

from . import objects, workloads
from .objects import DEPLOYMENT, REPLICASET, parse_rfc3339, rfc3339
from .workloads import WorkloadStore

API_VERSION = "apps/v1"

# Progressing reasons (kube's deploymentutil).
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = PROGRESSING_COMPLETE
TIMED_OUT = PROGRESSING_TIMED_OUT
PAUSED = PROGRESSING_PAUSED
RESUMED = "DeploymentResumed"
DEFAULT_REVISION_HISTORY_LIMIT = 10


def owned(store: WorkloadStore, kind: str, owner: Obj) -> list[Obj]:
    """What ``owner`` controls (its controller ownerReference carries the owner's UID)."""
    meta = owner["metadata"]
    return [
        o
        for o in store.list_objects(kind, meta["namespace"], owner=meta["name"])
        if (objects.controller_ref(o) or {}).get("uid") == meta.get("uid")
    ]


def controlled_pods(store: WorkloadStore, rs: Obj) -> list[Obj]:
    meta = rs["metadata"]
    return [
        p
        for p in store.list_controlled_pods(meta["namespace"], meta["name"])
        if (objects.controller_ref(p) or {}).get("uid") == meta.get("uid")
    ]


# -- ReplicaSet controller --------------------------------------------------------------------------

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_order(pods: list[Obj]) -> list[Obj]:
    """Pods in the order a ReplicaSet deletes extra ones (kube's ``ActivePodsWithRanks``, without
    the co-location rank): unscheduled, pending, not ready first; among ready ones the most recently
    ready; then the most restarted; then the newest."""

    def key(pod: Obj) -> tuple:
        status = pod.get("status") or {}
        ready = workloads.is_ready(pod)
        ready_since = (workloads.condition(pod, "Ready") or {}).get("lastTransitionTime") or ""
        restarts = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []), default=0)
        created = (pod.get("metadata") or {}).get("creationTimestamp") or ""
        return (
            workloads.is_scheduled(pod),
            _PHASE_RANK.get(status.get("phase"), 1),
            ready,
            _descending(ready_since) if ready else "",
            -restarts,
            _descending(created),
            workloads.name(pod),
        )

    return sorted(pods, key=key)


def _descending(text: str) -> tuple:
    # Sort RFC 3339 strings newest first inside an ascending sort.
    return tuple(-ord(ch) for ch in text)


def pod_from_template(rs: Obj) -> Obj:
    template = (rs.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {
        "generateName": f"{workloads.name(rs)}-",
        "namespace": rs["metadata"]["namespace"],
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [objects.owner_reference(rs)],
    }
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy_json(template.get("spec") or {})}


def replicaset_status(rs: Obj, pods: list[Obj]) -> Obj:
    active = [p for p in pods if workloads.is_active(p)]
    status = {
        "replicas": len(active),
        "fullyLabeledReplicas": len(active),
        "readyReplicas": sum(1 for p in active if workloads.is_ready(p)),
        "availableReplicas": sum(1 for p in active if workloads.is_available(p)),
        "observedGeneration": rs["metadata"].get("generation") or 1,
    }
    return status


def sync_replicaset(store: WorkloadStore, namespace: str, name: str, now: float) -> float | None:
    """One pass of the ReplicaSet controller over ``namespace/name``. Never asks to be called back:
    every pod change calls it."""
    try:
        rs = store.get_object(REPLICASET, namespace, name)
    except NotFound:
        return None
    pods = controlled_pods(store, rs)
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Failed" and not workloads.is_terminating(pod):
            _delete_pod(store, pod)
    active = [p for p in pods if workloads.is_active(p)]
    diff = len(active) - replicas_of(rs)
    if diff < 0:
        for _ in range(-diff):
            store.create_pod(pod_from_template(rs))
    elif diff > 0:
        for pod in deletion_order(active)[:diff]:
            _delete_pod(store, pod)
    status = {**(rs.get("status") or {}), **replicaset_status(rs, pods)}
    store.replace_object_status(REPLICASET, namespace, name, status)
    return None


def _delete_pod(store: WorkloadStore, pod: Obj) -> None:
    try:
        store.delete_pod(pod["metadata"]["namespace"], pod["metadata"]["name"], uid=workloads.uid(pod))
    except (NotFound, Conflict):
        pass  # gone already, or another pod by that name now


# -- Deployment controller --------------------------------------------------------------------------


def _with_condition(conditions: list[Obj], cond: Obj, now: float) -> list[Obj]:
    """Set ``cond`` (by type): ``lastUpdateTime`` now, ``lastTransitionTime`` kept unless the
    status changes (kube's ``SetDeploymentCondition``)."""
    stamp = rfc3339(now)
    out = []
    found = False
    for c in conditions:
        if c.get("type") == cond["type"]:
            found = True
            since = c.get("lastTransitionTime") if c.get("status") == cond["status"] else stamp
            out.append({**cond, "lastUpdateTime": stamp, "lastTransitionTime": since or stamp})
        else:
            out.append(c)
    if not found:
        out.append({**cond, "lastUpdateTime": stamp, "lastTransitionTime": stamp})
    return out


def _find(conditions: list[Obj], ctype: str) -> Obj | None:
    return next((c for c in conditions if c.get("type") == ctype), None)


def _progressing(old: Obj, new: Obj) -> bool:
    """kube's ``DeploymentProgressing``: more updated, ready or available pods, or fewer old ones."""
    old_old = status_count({"status": old}, "replicas") - status_count({"status": old}, "updatedReplicas")
    new_old = int(new.get("replicas") or 0) - int(new.get("updatedReplicas") or 0)
    return (
        int(new.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0)
        or int(new.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0)
        or int(new.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0)
        or new_old < old_old
    )


def timed_out(deployment: Obj, conditions: list[Obj], now: float) -> bool:
    deadline = progress_deadline(deployment)
    cond = _find(conditions, "Progressing")
    if deadline is None or cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    return parse_rfc3339(cond["lastUpdateTime"]) + deadline < now


def deployment_status(deployment: Obj, new: Obj | None, rss: list[Obj], conditions: list[Obj], now: float) -> Obj:
    """kube's ``calculateStatus`` (the Progressing condition is the caller's)."""
    desired = replicas_of(deployment)
    _, unavailable_budget = fenceposts(deployment)
    available = sum(status_count(rs, "availableReplicas") for rs in rss)
    wanted = sum(replicas_of(rs) for rs in rss)
    status: Obj = {
        "observedGeneration": deployment["metadata"].get("generation") or 1,
        "replicas": sum(status_count(rs, "replicas") for rs in rss),
        "updatedReplicas": status_count(new, "replicas") if new is not None else 0,
        "readyReplicas": sum(status_count(rs, "readyReplicas") for rs in rss),
        "availableReplicas": available,
        "unavailableReplicas": max(wanted - available, 0),
    }
    collisions = (deployment.get("status") or {}).get("collisionCount")
    if collisions:
        status["collisionCount"] = collisions
    if available >= desired - unavailable_budget:
        cond = {
            "type": "Available",
            "status": "True",
            "reason": "MinimumReplicasAvailable",
            "message": "Deployment has minimum availability.",
        }
    else:
        cond = {
            "type": "Available",
            "status": "False",
            "reason": "MinimumReplicasUnavailable",
            "message": "Deployment does not have minimum availability.",
        }
    old = _find(conditions, "Available")
    if old is None or old.get("status") != cond["status"]:
        conditions = _with_condition(conditions, cond, now)
    status["conditions"] = conditions
    return status


def _scale(store: WorkloadStore, rs: Obj, replicas: int) -> Obj:
    meta = rs["metadata"]
    return store.patch_object(REPLICASET, meta["namespace"], meta["name"], {"spec": {"replicas": replicas}})


def _set_revision(store: WorkloadStore, obj: Obj, kind: str, revision: int) -> Obj:
    meta = obj["metadata"]
    patch = {"metadata": {"annotations": {ANNOTATION_REVISION: str(revision)}}}
    return store.patch_object(kind, meta["namespace"], meta["name"], patch)


def new_replica_set(deployment: Obj, hash_: str, replicas: int, revision: int) -> Obj:
    spec = deployment.get("spec") or {}
    template = copy_json(spec.get("template") or {})
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), LABEL_TEMPLATE_HASH: hash_}
    selector = copy_json(spec.get("selector") or {"matchLabels": {}})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), LABEL_TEMPLATE_HASH: hash_}
    dmeta = deployment["metadata"]
    return {
        "apiVersion": API_VERSION,
        "kind": REPLICASET,
        "metadata": {
            "name": f"{dmeta['name']}-{hash_}",
            "namespace": dmeta["namespace"],
            "labels": dict(tmeta["labels"]),
            "annotations": {ANNOTATION_REVISION: str(revision)},
            "ownerReferences": [objects.owner_reference(deployment)],
        },
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    }


def sync_deployment(store: WorkloadStore, namespace: str, name: str, now: float) -> float | None:
    """One pass of the Deployment controller. Returns when it must look again by itself (the
    progress deadline), or None."""
    try:
        deployment = store.get_object(DEPLOYMENT, namespace, name)
    except NotFound:
        return None
    spec = deployment.get("spec") or {}
    old_status = deployment.get("status") or {}
    conditions = list(old_status.get("conditions") or [])
    paused = bool(spec.get("paused"))
    progressing = _find(conditions, "Progressing")
    has_deadline = progress_deadline(deployment) is not None
    if paused and (progressing is None or progressing.get("reason") != PAUSED):
        cond = {"type": "Progressing", "status": "Unknown", "reason": PAUSED, "message": "Deployment is paused"}
        conditions = _with_condition(conditions, cond, now)
    elif not paused and progressing is not None and progressing.get("reason") == PAUSED:
        cond = {"type": "Progressing", "status": "Unknown", "reason": RESUMED, "message": "Deployment is resumed"}
        conditions = _with_condition(conditions, cond, now)

    rss = owned(store, REPLICASET, deployment)
    new, olds = split_replica_sets(deployment, rss)
    desired = replicas_of(deployment)
    surge, unavailable = fenceposts(deployment)
    max_old_revision = max((revision_of(rs) for rs in olds), default=0)

    if paused:
        # No rollout step while paused; a Deployment with a single active ReplicaSet still scales.
        active = [rs for rs in rss if replicas_of(rs) > 0]
        if new is not None and all(rs is new for rs in active) and replicas_of(new) != desired:
            new = _scale(store, new, desired)
        rss = [new, *olds] if new is not None else olds
        return _finish(store, deployment, new, rss, conditions, old_status, now, check_progress=False)

    if is_recreate(deployment):
        return _rollout_recreate(store, deployment, new, olds, conditions, old_status, now)

    total = sum(replicas_of(rs) for rs in olds)
    replicas_if_created = new_replica_set_target(desired, ReplicaSetCount("", 0, 0), total, surge)
    deployment, new, conditions = _new_replica_set(
        store, deployment, new, max_old_revision, replicas_if_created, conditions, old_status, now
    )
    if has_deadline and _find(conditions, "Progressing") is None:
        cond = {
            "type": "Progressing",
            "status": "True",
            "reason": FOUND_NEW_RS,
            "message": f'Found new replica set "{workloads.name(new)}"',
        }
        conditions = _with_condition(conditions, cond, now)

    # Scale up the new ReplicaSet within maxSurge; a pass that does so does nothing else.
    total = sum(replicas_of(rs) for rs in olds) + replicas_of(new)
    target = new_replica_set_target(desired, replica_set_count(new), total, surge)
    if target != replicas_of(new):
        new = _scale(store, new, target)
        return _finish(store, deployment, new, [new, *olds], conditions, old_status, now)

    # Scale old ReplicaSets down within maxUnavailable (unhealthy pods first, oldest first).
    targets = old_replica_set_targets(
        desired, unavailable, replica_set_count(new), [replica_set_count(rs) for rs in olds]
    )
    scaled = False
    for i, rs in enumerate(olds):
        if targets[workloads.name(rs)] != replicas_of(rs):
            olds[i] = _scale(store, rs, targets[workloads.name(rs)])
            scaled = True
    if not scaled:
        status = deployment_status(deployment, new, [new, *olds], conditions, now)
        if is_complete(deployment, status):
            olds = _clean_up(store, deployment, olds)
    return _finish(store, deployment, new, [new, *olds], conditions, old_status, now)


def _old_pods_running(store: WorkloadStore, olds: list[Obj]) -> bool:
    """kube's ``oldPodsRunning``: an old ReplicaSet still counts pods, or one of its pods has not
    finished (a terminating pod is still running)."""
    if any(status_count(rs, "replicas") for rs in olds):
        return True
    return any(
        (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")
        for rs in olds
        for p in controlled_pods(store, rs)
    )


def _rollout_recreate(
    store: WorkloadStore,
    deployment: Obj,
    new: Obj | None,
    olds: list[Obj],
    conditions: list[Obj],
    old_status: Obj,
    now: float,
) -> float | None:
    """kube's ``rolloutRecreate``: scale every old ReplicaSet to 0, wait until none of their pods
    runs any more, then create (or scale up) the new ReplicaSet at the full count. Each pass does
    one step. Example: 4 pods of v1 -> v1 scaled to 0; the 4 pods terminate; v2 created with 4."""
    rss = lambda: [*([new] if new is not None else []), *olds]  # noqa: E731 - the current list, after each step
    scaled = False
    for i, rs in enumerate(olds):
        if replicas_of(rs) != 0:
            olds[i] = _scale(store, rs, 0)
            scaled = True
    if scaled or _old_pods_running(store, olds):
        return _finish(store, deployment, new, rss(), conditions, old_status, now)
    desired = replicas_of(deployment)
    max_old_revision = max((revision_of(rs) for rs in olds), default=0)
    deployment, new, conditions = _new_replica_set(
        store, deployment, new, max_old_revision, desired, conditions, old_status, now
    )
    if replicas_of(new) != desired:
        new = _scale(store, new, desired)
        return _finish(store, deployment, new, rss(), conditions, old_status, now)
    status = deployment_status(deployment, new, rss(), conditions, now)
    if is_complete(deployment, status):
        olds[:] = _clean_up(store, deployment, olds)
    return _finish(store, deployment, new, rss(), conditions, old_status, now)


def _new_replica_set(
    store: WorkloadStore,
    deployment: Obj,
    new: Obj | None,
    max_old_revision: int,
    replicas_if_created: int,
    conditions: list[Obj],
    old_status: Obj,
    now: float,
) -> tuple[Obj, Obj, list[Obj]]:
    """kube's ``getNewReplicaSet``, shared by both strategies: create the ReplicaSet of the current
    template (with ``replicas_if_created``) when there is none, or give it the next revision when it
    is an older template come back (a rollback); then the Deployment's revision annotation follows.
    Returns the Deployment, the new ReplicaSet and the conditions. Example: olds at revisions 1 and
    2, no new one -> created at revision 3, the Deployment annotated 3."""
    if new is None:
        spec = deployment.get("spec") or {}
        hash_ = template_hash(spec.get("template") or {}, int(old_status.get("collisionCount") or 0))
        new = store.create_object(new_replica_set(deployment, hash_, replicas_if_created, max_old_revision + 1))
        cond = {
            "type": "Progressing",
            "status": "True",
            "reason": NEW_RS_CREATED,
            "message": f'Created new replica set "{workloads.name(new)}"',
        }
        conditions = _with_condition(conditions, cond, now)
    elif revision_of(new) <= max_old_revision:
        new = _set_revision(store, new, REPLICASET, max_old_revision + 1)  # back to an older template
    if (deployment["metadata"].get("annotations") or {}).get(ANNOTATION_REVISION) != str(revision_of(new)):
        deployment = _set_revision(store, deployment, DEPLOYMENT, revision_of(new))
    return deployment, new, conditions


def _clean_up(store: WorkloadStore, deployment: Obj, olds: list[Obj]) -> list[Obj]:
    """Delete old ReplicaSets at 0 beyond ``revisionHistoryLimit``, oldest revision first."""
    limit = (deployment.get("spec") or {}).get("revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    if limit is None:
        return olds
    idle = [rs for rs in olds if replicas_of(rs) == 0 and status_count(rs, "replicas") == 0]
    gone = set()
    for rs in sorted(idle, key=revision_of)[: max(len(idle) - int(limit), 0)]:
        try:
            store.delete_object(REPLICASET, rs["metadata"]["namespace"], workloads.name(rs))
        except NotFound:
            pass
        gone.add(workloads.name(rs))
    return [rs for rs in olds if workloads.name(rs) not in gone]


def _finish(
    store: WorkloadStore,
    deployment: Obj,
    new: Obj | None,
    rss: list[Obj],
    conditions: list[Obj],
    old_status: Obj,
    now: float,
    *,
    check_progress: bool = True,
) -> float | None:
    """Write the status (kube's ``syncRolloutStatus``) and say when to look again for the deadline."""
    status = deployment_status(deployment, new, rss, conditions, now)
    conditions = status["conditions"]
    requeue = None
    deadline = progress_deadline(deployment)
    if check_progress and deadline is not None and new is not None:
        cond = _find(conditions, "Progressing")
        done = status["replicas"] == status["updatedReplicas"] and cond and cond.get("reason") == NEW_RS_AVAILABLE
        if not done:
            rs_name = workloads.name(new)
            if is_complete(deployment, status):
                cond = {
                    "type": "Progressing",
                    "status": "True",
                    "reason": NEW_RS_AVAILABLE,
                    "message": f'ReplicaSet "{rs_name}" has successfully progressed.',
                }
                conditions = _with_condition(conditions, cond, now)
            elif _progressing(old_status, status):
                cond = {
                    "type": "Progressing",
                    "status": "True",
                    "reason": RS_UPDATED,
                    "message": f'ReplicaSet "{rs_name}" is progressing.',
                }
                conditions = _with_condition(conditions, cond, now)
            elif timed_out(deployment, conditions, now):
                if (_find(conditions, "Progressing") or {}).get("reason") != TIMED_OUT:
                    cond = {
                        "type": "Progressing",
                        "status": "False",
                        "reason": TIMED_OUT,
                        "message": f'ReplicaSet "{rs_name}" has timed out progressing.',
                    }
                    conditions = _with_condition(conditions, cond, now)
            current = _find(conditions, "Progressing")
            if current is not None and current.get("reason") not in (NEW_RS_AVAILABLE, TIMED_OUT):
                # kube's requeueStuckDeployment: look again when the deadline would pass.
                requeue = max(parse_rfc3339(current["lastUpdateTime"]) + deadline - now, 0.0) + 1.0
    status["conditions"] = conditions
    meta = deployment["metadata"]
    store.replace_object_status(DEPLOYMENT, meta["namespace"], meta["name"], status)
    return requeue
