"""The status a reconcile pass writes: Kthena's fields plus per-group and per-role detail.

It is computed from what was observed at the start of the pass (not from what the pass's actions
will do), so it always describes the cluster as it is. It also persists what recovery needs after
a restart: the revision every group and every off-update instance runs (``groups[].revision``,
``groups[].roles[].instanceRevisions``) and the set of revisions GC must keep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import naming, phases
from .plan import KIND_PARTITION, STUCK_KINDS
from .spec import GROUP_ROLLING

if TYPE_CHECKING:
    from .planner import _Pass


def _condition(
    prev: dict[str, dict[str, Any]], ctype: str, status: bool, reason: str, message: str, now: float
) -> dict[str, Any]:
    value = "True" if status else "False"
    old = prev.get(ctype)
    since = old.get("lastTransitionTime") if old and old.get("status") == value else now
    return {"type": ctype, "status": value, "reason": reason, "message": message, "lastTransitionTime": since}


def build_status(p: _Pass) -> dict[str, Any]:
    ms = p.ms
    observed = p.observed
    replicas = ms.replicas
    group_level = ms.strategy.type == GROUP_ROLLING
    partition = p.strategy.group.partition.count if group_level else 0
    roles_total: dict[str, dict[str, Any]] = {
        r.name: {
            "name": r.name,
            "desired": 0,
            "ready": 0,
            "updated": 0,
            "updatedReady": 0,
            "unavailable": 0,
            "surge": 0,
            "eligible": 0,
            "draining": 0,
        }
        for r in ms.roles
    }
    groups_out: list[dict[str, Any]] = []
    referenced: set[str] = {p.update_hash, p.current_hash}
    updated_groups = available_groups = 0
    converged = True
    non_updated_revisions: dict[str, int] = {}
    for o in sorted(set(observed.groups) | set(range(replicas))):
        group = observed.groups.get(o)
        surge_group = o >= replicas
        target_rev = None
        if group_level:
            rev = p.group_revisions.get(o) or p.update_hash
            target_rev = p.recorded_group_revision(o)
            referenced.add(target_rev)
        else:
            rev = group.revision if group and group.instances else p.update_hash
        if group is not None and group.instances:
            for r in group.revisions():
                referenced.add(r)
        available = p.group_available(group) and not (group is not None and p.being_removed(group))
        group_updated = True
        roles_out = []
        group_instance_revisions: dict[str, str] = {}
        for role in ms.roles:
            name = role.name
            tot = roles_total[name]
            budgets = p.strategy.roles[name]
            role_partition = budgets.partition.count if not group_level else 0
            counts = {
                "name": name,
                "desired": 0 if surge_group else role.replicas,
                "ready": 0,
                "updated": 0,
                "unavailable": 0,
                "surge": 0,
                "draining": 0,
            }
            instance_revisions: dict[str, str] = {}
            revisions: dict[str, int] = {}
            for k in range(0 if surge_group else role.replicas):
                inst = group.instances.get((name, k)) if group else None
                if inst is None:
                    counts["unavailable"] += 1
                    converged = False
                    kept = p.recorded.instance_revision.get((o, name, k))
                    if kept and kept not in p.equivalent:
                        instance_revisions[str(k)] = kept  # still needed to rebuild it
                        referenced.add(kept)
                    if not group_level and k >= role_partition:
                        group_updated = False
                    continue
                ready = p.instance_available(inst)
                updated = p.instance_updated_or_group(rev, inst, name)
                revisions[inst.revision] = revisions.get(inst.revision, 0) + 1
                if ready:
                    counts["ready"] += 1
                else:
                    counts["unavailable"] += 1
                if updated:
                    counts["updated"] += 1
                    if ready:
                        tot["updatedReady"] += 1
                else:
                    group_updated = False
                    removal = p.instance_removals.get((o, name, k))
                    if removal is None or removal.reason != "rolling update":
                        instance_revisions[str(k)] = inst.revision
                if inst.draining:
                    counts["draining"] += 1
                eligible = (o >= partition) if group_level else (k >= role_partition)
                if eligible:
                    tot["eligible"] += 1
                    if not updated:
                        converged = False
                if not ready or inst.deleting or inst.draining:
                    converged = False
            extra = [
                inst
                for (r, k), inst in (group.instances.items() if group else [])
                if r == name and k >= (0 if surge_group else role.replicas)
            ]
            counts["surge"] = len(extra)
            if extra:
                converged = False
            if len(revisions) > 1:
                counts["revisions"] = revisions
            for k, r in instance_revisions.items():
                group_instance_revisions[f"{name}/{k}"] = r
            roles_out.append(counts)
            for key in ("desired", "ready", "updated", "unavailable", "surge", "draining"):
                tot[key] += counts[key]
        if group is not None and group.instances:
            stray_roles = {r for r, _ in group.instances} - set(ms.role_names)
            if stray_roles:
                converged = False
                group_updated = False
        if group_level:
            group_updated = rev in p.equivalent
            referenced.add(rev)
        if surge_group:
            converged = False
        phase = _group_phase(p, group, available)
        if not surge_group:
            if group_updated and group is not None:
                updated_groups += 1
            elif group is not None:
                non_updated_revisions[rev] = non_updated_revisions.get(rev, 0) + 1
            if available:
                available_groups += 1
        # Compact on purpose (1,000 groups must fit in one object): what the group runs (or is
        # rebuilt on when missing), what it is rebuilt on if all its pods go when that differs (the
        # update revision once its replacement started), the roles that are not simply done, and
        # the revision of every instance that runs something else than the group.
        entry: dict[str, Any] = {
            "ordinal": o,
            "revision": rev,
            "phase": phase,
            "ready": available,
            "updated": group_updated,
        }
        if target_rev and target_rev != rev:
            entry["targetRevision"] = target_rev
        if surge_group:
            entry["surge"] = True
        notable = [c for c in roles_out if c["unavailable"] or c["surge"] or c["draining"] or "revisions" in c]
        if notable:
            entry["roles"] = notable
        differing = {key: r for key, r in group_instance_revisions.items() if r != rev}
        if differing:
            entry["instanceRevisions"] = differing
        groups_out.append(entry)
    if observed.foreign:
        converged = False

    # currentRevision follows StatefulSets: it becomes the update revision once every group runs
    # it; until then it keeps its value while a non-updated group still uses it.
    existing_groups = sum(1 for o, g in observed.groups.items() if o < replicas and g.instances)
    if updated_groups == replicas and existing_groups == replicas:
        current = p.update_hash
    elif p.current_hash in non_updated_revisions or not non_updated_revisions:
        current = p.current_hash
    else:
        current = max(sorted(non_updated_revisions), key=lambda r: non_updated_revisions[r])
    referenced.add(current)

    # Grouped by (reason, kind, role): during a 1,000-group rollout most groups wait for the same
    # reason, and status must stay small. The view expands it back to one entry per group.
    waiting: dict[tuple[str, str, str | None], list[int | None]] = {}
    for b in p.blocked:
        waiting.setdefault((b.reason, b.kind, b.role), []).append(b.group)
    blocked = [
        {"reason": reason, "kind": kind, "role": role, "groups": groups}
        for (reason, kind, role), groups in waiting.items()
    ]
    stuck = [b for b in p.blocked if b.kind in STUCK_KINDS]
    prev_conditions = {c.get("type"): c for c in p.prev.get("conditions") or [] if isinstance(c, dict)}
    now = p.now
    # Available as for Deployments: the minimum the budget promises is met (a rollout within
    # maxUnavailable keeps it True; losing more than the budget allows makes it False).
    floor = replicas - (p.strategy.group.max_unavailable.count if group_level else 0)
    conditions = [
        _condition(
            prev_conditions,
            "Available",
            available_groups >= floor,
            ("AllGroupsReady" if available_groups >= replicas else "MinimumGroupsAvailable")
            if available_groups >= floor
            else "GroupsUnavailable",
            f"{available_groups} of {replicas} ServingGroups available (at least {floor} required)",
            now,
        ),
    ]
    updating = any(b.kind != KIND_PARTITION for b in p.blocked) or not converged
    if ms.paused:
        conditions.append(
            _condition(prev_conditions, "Progressing", False, "Paused", "rollout paused by spec.paused", now)
        )
    elif converged:
        conditions.append(
            _condition(
                prev_conditions, "Progressing", False, "RolloutComplete", f"revision {p.update_hash} rolled out", now
            )
        )
    else:
        conditions.append(
            _condition(
                prev_conditions, "Progressing", True, "RollingUpdate", f"rolling out revision {p.update_hash}", now
            )
        )
    outdated_groups = replicas - updated_groups
    # In progress until the last new group is Ready, not only until the last old one is gone.
    new_not_ready = any(g["phase"] != "Ready" and not g.get("surge") and g["updated"] for g in groups_out)
    in_progress = updating and not converged and (outdated_groups > partition or new_not_ready)
    conditions.append(
        _condition(
            prev_conditions,
            "UpdateInProgress",
            in_progress,
            "GroupsUpdating" if in_progress else "NoUpdate",
            f"{updated_groups} of {replicas} ServingGroups on revision {p.update_hash}",
            now,
        )
    )
    unreadable = [b for b in p.blocked if b.kind == "revision"]
    if unreadable:
        conditions.append(
            _condition(prev_conditions, "RevisionUnreadable", True, "RevisionUnreadable", unreadable[0].reason, now)
        )

    if ms.paused:
        phase = phases.PAUSED
    elif stuck:
        phase = phases.BLOCKED
    elif not converged and any(g["phase"] == "Failed" for g in groups_out):
        # Something failed and nothing in this pass is stuck on it: capacity is short.
        phase = phases.DEGRADED
    elif not converged:
        # Replacing, creating, draining or scaling: moving towards the spec (the last group of a
        # rollout being recreated is still progress, not degradation).
        phase = phases.PROGRESSING
    elif available_groups < replicas:
        phase = phases.DEGRADED
    else:
        phase = phases.HEALTHY

    roles_summary = []
    for tot in roles_total.values():
        eligible_target = tot.pop("eligible")
        updated_ready = tot.pop("updatedReady")
        tot["progress"] = 1.0 if tot["desired"] == 0 else round(updated_ready / max(tot["desired"], 1), 4)
        tot["eligible"] = eligible_target
        roles_summary.append(tot)

    first_role = ms.roles[0].name if ms.roles else ""
    return {
        "observedGeneration": ms.generation,
        "replicas": sum(1 for g in observed.groups.values() if g.instances),
        "currentReplicas": replicas - updated_groups,
        "updatedReplicas": updated_groups,
        "availableReplicas": available_groups,
        "currentRevision": current,
        "updateRevision": p.update_hash,
        "collisionCount": p.update.collision_count,
        "labelSelector": (
            f"{naming.LABEL_NAME}={ms.name},{naming.LABEL_ENTRY}=true,"
            f"{naming.LABEL_ROLE}={first_role},{naming.LABEL_ROLE_ORDINAL}=0"
        ),
        "conditions": conditions,
        "phase": phase,
        "converged": converged,
        "paused": ms.paused,
        "strategy": p.strategy.to_json(),
        "groups": groups_out,
        "roles": roles_summary,
        # Role replicas at the time of writing: recovery tells "lost" from "not yet scaled up".
        "roleReplicas": {r.name: r.replicas for r in ms.roles},
        "waiting": blocked,
        "referencedRevisions": sorted(r for r in referenced if r),
    }


def _group_phase(p: _Pass, group: Any, available: bool) -> str:
    if group is None or not group.instances:
        return "Missing"
    if p.being_removed(group):
        return "Deleting" if group.deleting else "Draining"
    if available:
        return "Ready"
    for inst in group.instances.values():
        if inst.lost or inst.failing:
            return "Failed"
    for inst in group.instances.values():
        if inst.updating_in_place:
            return "Updating"
    for inst in group.instances.values():
        if inst.unschedulable:
            return "Pending"
    return "Creating"
