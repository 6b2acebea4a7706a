"""Removing pods that serve traffic: drain first, then delete; undo a drain nobody needs any more.

Every delete of the planner goes through ``remove_pods``. A serving pod is first marked draining
(the router stops sending it new requests), and deleted once its in-flight requests are done or the
drain timeout has passed; the pods of one instance leave together. A pod marked draining that no
step of this pass removes any more gets its mark cleared at the end (``undrain_cancelled``), or it
would stay unroutable forever.
"""

from __future__ import annotations

from ..naming import ANNOTATION_DRAINING
from ..observe import GroupObs, InstanceObs, PodObs
from ..plan import DELETE, DRAIN, KIND_DRAIN, UNDRAIN, Action
from .builder import PlanBuilder, Removal

# While a drain waits for in-flight requests the router's counts change without any cluster event,
# so the controller looks again this often.
DRAIN_POLL_SECONDS = 0.5


def drain_mark(now: float) -> dict:
    """The merge patch that marks a pod draining since ``now`` (the router contract)."""
    return {"metadata": {"annotations": {ANNOTATION_DRAINING: repr(float(now))}}}


def remove_pods(
    out: PlanBuilder,
    pods: list[PodObs],
    *,
    group: int,
    role: str,
    ordinal: int,
    revision: str,
    reason: str,
    may_start: bool,
) -> None:
    """Delete pods, draining the ones that serve traffic first.

    Per pod: already terminating -> wait; not Ready and not marked -> delete now (it serves no
    traffic); marked draining -> delete once the router reports no in-flight requests or the drain
    timeout has passed (the requests still running are then interrupted, and the simulator counts
    them); Ready -> mark draining (only when ``may_start``: a paused rollout starts no new drain,
    but one already started finishes).

    Worked example: timeout 120 s, marked at t=100, at t=150 in-flight 3 -> wait (poll again in
    0.5 s); at t=160 in-flight 0 -> delete; had it still been 2 at t=220, delete anyway, and the
    delete action says 2 requests were interrupted (``Action.interrupted``: a cluster that does not
    count them itself records them, ``reconcile``).
    """
    ctx = out.ctx
    in_flight_of = ctx.observed.in_flight
    to_drain: list[PodObs] = []
    to_delete: list[PodObs] = []
    interrupted: dict[str, int] = {}
    waiting = False
    timeout = ctx.ms.drain_timeout_seconds
    for pod in pods:
        if pod.deleting:
            out.removing_pods.add(pod.name)
            continue
        if pod.draining_since is not None:
            out.removing_pods.add(pod.name)
            elapsed = ctx.now - pod.draining_since
            left = in_flight_of.get(pod.name, 0)
            if left <= 0 or elapsed >= timeout:
                to_delete.append(pod)
                if left > 0:
                    interrupted[pod.name] = left  # the timeout cuts them off
            else:
                waiting = True
                out.requeue(min(DRAIN_POLL_SECONDS, max(timeout - elapsed, 0.0)))
            continue
        if pod.ready and timeout > 0:
            if may_start:
                to_drain.append(pod)
                out.removing_pods.add(pod.name)
            continue
        if may_start or not pod.ready:
            to_delete.append(pod)
            out.removing_pods.add(pod.name)
    if waiting and to_delete:
        # Pods of one instance are one engine: while any of them still finishes in-flight requests
        # (the entry, typically), the others those requests need stay. Only pods that were never
        # serving (not Ready, never marked) go now.
        to_delete = [p for p in to_delete if not p.ready and p.draining_since is None]
    if to_drain:
        mark = drain_mark(ctx.now)
        out.act(
            Action(
                DRAIN,
                group,
                role,
                ordinal,
                revision,
                reason,
                pod_names=[p.name for p in to_drain],
                patches={p.name: mark for p in to_drain},
            )
        )
        out.requeue(DRAIN_POLL_SECONDS)
    if to_delete:
        out.act(
            Action(
                DELETE,
                group,
                role,
                ordinal,
                revision,
                reason,
                pod_names=[p.name for p in to_delete],
                pod_uids=[p.uid for p in to_delete],
                interrupted={p.name: interrupted[p.name] for p in to_delete if p.name in interrupted},
            )
        )
    if waiting:
        longest = max(
            (in_flight_of.get(p.name, 0) for p in pods if p.draining),
            default=0,
        )
        out.block(
            group,
            role,
            f"draining {role}-{ordinal}: waiting for {longest} in-flight request(s) (timeout {timeout:g} s)",
            KIND_DRAIN,
        )


def remove_instance(out: PlanBuilder, inst: InstanceObs, reason: str, *, may_start: bool) -> None:
    out.instance_removals[(inst.group, inst.role, inst.ordinal)] = Removal(reason, inst.revision)
    remove_pods(
        out,
        list(inst.pods.values()),
        group=inst.group,
        role=inst.role,
        ordinal=inst.ordinal,
        revision=inst.revision,
        reason=reason,
        may_start=may_start,
    )


def remove_group(out: PlanBuilder, group: GroupObs, reason: str, *, may_start: bool) -> None:
    out.group_removals[group.ordinal] = Removal(reason, group.revision)
    for (role, ordinal), inst in sorted(group.instances.items()):
        remove_pods(
            out,
            list(inst.pods.values()),
            group=group.ordinal,
            role=role,
            ordinal=ordinal,
            revision=inst.revision,
            reason=reason,
            may_start=may_start,
        )


def undrain_cancelled(out: PlanBuilder) -> None:
    """A drain whose pod is no longer to be deleted must be undone, or it stays unroutable. Runs
    last: only then is every pod this pass removes known."""
    for group in out.ctx.observed.groups.values():
        for inst in group.instances.values():
            if not inst.draining:
                continue  # no pod of it is marked (and not terminating)
            names = [p.name for p in inst.pods.values() if p.draining and p.name not in out.removing_pods]
            if names:
                unmark = {"metadata": {"annotations": {ANNOTATION_DRAINING: None}}}
                out.act(
                    Action(
                        UNDRAIN,
                        inst.group,
                        inst.role,
                        inst.ordinal,
                        inst.revision,
                        "drain cancelled",
                        pod_names=names,
                        patches={n: unmark for n in names},
                    )
                )
