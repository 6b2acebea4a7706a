"""Creating pods: always from a stored, readable revision, never from a guessed template.

A group or instance is built from the data of the revision it belongs to (the update revision for
new capacity, the recorded revision for a protected or paused group). When that data cannot be
read, nothing is created and the reason is reported once per group.
"""

from __future__ import annotations

from collections.abc import Callable

from ..observe import GroupObs
from ..plan import BECAUSE_RECOVERY, BECAUSE_SCALE, CREATE, Action
from ..podtemplate import build_instance_pods
from ..spec import IN_PLACE
from .builder import PlanBuilder
from .labels import create_labels


def create_instance(
    out: PlanBuilder, group: int, role: str, ordinal: int, rev: str, reason: str, pod_indexes: list[int] | None = None
) -> bool:
    """Create the pods of instance ``role-ordinal`` of ``group`` at ``rev`` (only ``pod_indexes``
    when given: recovery of single pods). False when the revision cannot be read."""
    ctx = out.ctx
    rd = ctx.role_data_of(rev, role)
    if rd is None:
        out.report_unreadable_once(rev, group, role, f"creating {role}-{ordinal} of group {group}")
        return False
    pods = build_instance_pods(
        ms=ctx.ms.manifest,
        revision_hash=rev,
        role_data=rd,
        group=group,
        ordinal=ordinal,
        in_place_gate=ctx.ms.strategy.type == IN_PLACE,
        scheduler_name=(ctx.data_of(rev) or {}).get("schedulerName"),
        pod_indexes=pod_indexes,
        extra_labels=create_labels(out, role, rd, rev),
    )
    out.act(
        Action(CREATE, group, role, ordinal, rev, reason, pods=pods, pod_names=[p["metadata"]["name"] for p in pods])
    )
    return True


def create_group(out: PlanBuilder, ordinal: int, rev: str, reason: str) -> None:
    """Every instance of every role the revision defines (and the spec still has)."""
    ctx = out.ctx
    data = ctx.data_of(rev)
    if data is None:
        out.report_unreadable_once(rev, ordinal, None, f"creating group {ordinal}")
        return
    for role in data.get("roles") or []:
        if not ctx.in_spec(role["name"]):
            continue
        for k in range(ctx.role_replicas(role["name"])):
            create_instance(out, ordinal, role["name"], k, rev, reason)


def create_missing_instances(
    out: PlanBuilder,
    group_ordinal: int,
    group: GroupObs | None,
    roles: list[str],
    revision_for: Callable[[str, int], str],
) -> None:
    """Instances missing from a group (scale up, or a group lost whole), each at the revision
    ``revision_for(role, ordinal)`` says."""
    for role in roles:
        for ordinal in range(out.ctx.role_replicas(role)):
            if group is not None and (role, ordinal) in group.instances:
                continue
            reason = BECAUSE_SCALE if group is not None else BECAUSE_RECOVERY
            create_instance(out, group_ordinal, role, ordinal, revision_for(role, ordinal), reason)
