"""The state view: one serializer for trace frames, the REST GET and the websocket.

``build_view`` is a pure function of cluster objects (the ModelServing with its status, its pods,
its revisions, the router's in-flight counts, the time), so every consumer sees the same thing and
a view can be rebuilt at any moment without asking the controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .observe import InstanceObs, Observed, observe
from .revisions import History

STATE_PENDING = "Pending"
STATE_CREATING = "Creating"
STATE_READY = "Ready"
STATE_UPDATING = "Updating"
STATE_DRAINING = "Draining"
STATE_DELETING = "Deleting"
STATE_FAILED = "Failed"


def instance_state(inst: InstanceObs, expected_pods: int) -> str:
    if inst.deleting:
        return STATE_DELETING
    if inst.draining:
        return STATE_DRAINING
    if inst.updating_in_place:
        return STATE_UPDATING
    if inst.lost or inst.failing:
        return STATE_FAILED
    if inst.ready(expected_pods):
        return STATE_READY
    if any(not p.scheduled for p in inst.pods.values()):
        return STATE_PENDING
    return STATE_CREATING


def _expected_pods(spec: dict[str, Any], history: History, revision: str, role: str) -> int:
    data = history.data_of(revision)
    for r in (data or {}).get("roles") or []:
        if r.get("name") == role:
            return 1 + int(r.get("workerReplicas") or 0)
    for r in (spec.get("template") or {}).get("roles") or []:
        if r.get("name") == role:
            return 1 + int(r.get("workerReplicas") or 0)
    return 1


def _partition(spec: dict[str, Any]) -> Any:
    strategy = spec.get("rolloutStrategy") or {}
    config = strategy.get("rollingUpdateConfiguration") or {}
    if "partition" in config:
        return config["partition"]
    role_partitions = {
        r.get("name"): r.get("partition")
        for r in (spec.get("template") or {}).get("roles") or []
        if r.get("partition") is not None
    }
    if role_partitions:
        values = set(map(str, role_partitions.values()))
        return next(iter(role_partitions.values())) if len(values) == 1 else role_partitions
    return 0


def build_view(
    ms: dict[str, Any],
    pods: list[dict[str, Any]],
    revisions: list[dict[str, Any]],
    in_flight: Mapping[str, int],
    now: float,
    *,
    observed: Observed | None = None,
) -> dict[str, Any]:
    """``observed`` may be passed when the caller already observed these very pods."""
    meta = ms.get("metadata") or {}
    spec = ms.get("spec") or {}
    status = ms.get("status") or {}
    history = History.from_objects(revisions)
    if observed is None:
        observed = observe(pods, in_flight)
    replicas = int(spec.get("replicas", 1) or 0)
    role_replicas = {
        r.get("name"): int(r.get("replicas", 1) or 0) for r in (spec.get("template") or {}).get("roles") or []
    }
    timeout = float((spec.get("drain") or {}).get("timeoutSeconds", 30))
    update_revision = status.get("updateRevision")
    update_record = history.get(update_revision)
    update_role_hashes = update_record.role_hashes() if update_record is not None else {}
    role_level = (
        (spec.get("rolloutStrategy") or {}).get("type") or "ServingGroupRollingUpdate"
    ) != "ServingGroupRollingUpdate"
    instances = []
    drain = []
    for g in sorted(observed.groups):
        group = observed.groups[g]
        for role, ordinal in sorted(group.instances):
            inst = group.instances[(role, ordinal)]
            expected = _expected_pods(spec, history, inst.revision, role)
            pods_sorted = [inst.pods[i] for i in sorted(inst.pods)]
            draining_pods = [p for p in pods_sorted if p.draining_since is not None and not p.deleting]
            inflight = sum(int(in_flight.get(p.name, 0)) for p in pods_sorted)
            instances.append(
                {
                    "group": g,
                    "role": role,
                    "ordinal": ordinal,
                    # Under role-level strategies an instance of a role whose template did not
                    # change keeps its pods (and their old revision label) but runs exactly the
                    # update revision's template for that role: report the revision it runs.
                    "revision": update_revision
                    if role_level
                    and update_revision
                    and inst.role_hash
                    and update_role_hashes.get(role) == inst.role_hash
                    else inst.revision,
                    "state": instance_state(inst, expected),
                    "pods": len(pods_sorted),
                    "readyPods": sum(1 for p in pods_sorted if p.ready),
                    "surge": g >= replicas or ordinal >= role_replicas.get(role, 0),
                    "podUids": [p.uid for p in pods_sorted],
                    "draining": len(draining_pods),
                    "inFlight": inflight,
                }
            )
            for p in draining_pods:
                since = p.draining_since if p.draining_since not in (None, float("-inf")) else now
                drain.append(
                    {
                        "pod": p.name,
                        "group": g,
                        "role": role,
                        "ordinal": ordinal,
                        "inFlight": int(in_flight.get(p.name, 0)),
                        "since": since,
                        "secondsLeft": max(round(timeout - (now - since), 3), 0.0),
                    }
                )
    revs = []
    for r in history.revisions:
        item = r.to_json()
        revs.append(item)
    out = {
        "namespace": meta.get("namespace") or "default",
        "name": meta.get("name"),
        "generation": meta.get("generation"),
        "spec": {"replicas": replicas, "partition": _partition(spec), "paused": bool(spec.get("paused", False))},
        "strategyType": (spec.get("rolloutStrategy") or {}).get("type") or "ServingGroupRollingUpdate",
        "phase": "Paused" if spec.get("paused") else status.get("phase") or "Pending",
        "converged": bool(status.get("converged")),
        "currentRevision": status.get("currentRevision"),
        "updateRevision": status.get("updateRevision"),
        "conditions": [
            {k: c.get(k) for k in ("type", "status", "reason", "message")} for c in status.get("conditions") or []
        ],
        "counts": {k: status.get(k) for k in ("replicas", "currentReplicas", "updatedReplicas", "availableReplicas")},
        "revisions": revs,
        "instances": instances,
        "blocked": expand_waiting(status.get("waiting") or []),
        "waiting": status.get("waiting") or [],
        "groups": _groups(status, instances, replicas, role_replicas, update_revision),
        "roles": status.get("roles") or [],
        "strategy": status.get("strategy") or {},
        "drain": drain,
        "time": now,
    }
    if status.get("skew") is not None:
        # Coordinated roles: the widest per-group gap in Ready progress and what the quotas allow.
        out["skew"] = status["skew"]
    return out


def _groups(
    status: dict[str, Any],
    instances: list[dict[str, Any]],
    replicas: int,
    role_replicas: dict[str, int],
    update_revision: str | None,
) -> list[dict[str, Any]]:
    """Per-group, per-role counts for the dashboard, from the instances (status keeps only a
    compact summary per group so that 1,000 groups fit in one object)."""
    recorded = {g.get("ordinal"): g for g in status.get("groups") or []}
    by_group: dict[int, list[dict[str, Any]]] = {}
    for inst in instances:
        by_group.setdefault(inst["group"], []).append(inst)
    out = []
    for o in sorted(set(range(replicas)) | set(by_group)):
        members = by_group.get(o, [])
        roles = []
        for role, desired in role_replicas.items():
            mine = [i for i in members if i["role"] == role]
            in_range = [i for i in mine if i["ordinal"] < desired] if o < replicas else []
            ready = sum(1 for i in in_range if i["state"] == STATE_READY)
            revisions: dict[str, int] = {}
            for i in mine:
                revisions[i["revision"]] = revisions.get(i["revision"], 0) + 1
            roles.append(
                {
                    "name": role,
                    "desired": desired if o < replicas else 0,
                    "ready": ready,
                    "updated": sum(1 for i in in_range if i["revision"] == update_revision),
                    "unavailable": (desired - ready) if o < replicas else 0,
                    "surge": sum(1 for i in mine if i["surge"]),
                    "draining": sum(1 for i in mine if i["draining"]),
                    "revisions": revisions,
                }
            )
        rec = recorded.get(o) or {}
        out.append(
            {
                "ordinal": o,
                "revision": rec.get("revision") or (members[0]["revision"] if members else None),
                "targetRevision": rec.get("targetRevision") or rec.get("revision"),
                "phase": rec.get("phase") or ("Missing" if not members else "Unknown"),
                "ready": bool(rec.get("ready")),
                "updated": bool(rec.get("updated")),
                "surge": o >= replicas,
                "roles": roles,
            }
        )
    return out


def expand_waiting(waiting: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Status keeps blocked reasons grouped; consumers get one entry per group and role."""
    out = []
    for w in waiting:
        for group in w.get("groups") or [None]:
            out.append({"group": group, "role": w.get("role"), "reason": w.get("reason"), "kind": w.get("kind")})
    out.sort(key=lambda b: (b["group"] is None, b["group"] if b["group"] is not None else -1, b["role"] or ""))
    return out
