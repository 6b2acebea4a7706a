"""Removing pods that serve traffic: drain first, then delete; undo a drain nobody needs any more.

Every delete of the planner goes through ``remove_pods``. A serving pod is first marked draining
(the router stops sending it new requests), and deleted once its in-flight requests are done or the
drain timeout has passed; the pods of one instance leave together. A pod marked draining that no
step of this pass removes any more gets its mark cleared at the end (``undrain_cancelled``), or it
would stay unroutable forever.
"""

from __future__ import annotations

from collections.abc import Mapping

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


# What ``remove_pods`` does with one pod this pass (``pod_case``).
TERMINATING = "terminating"  # already being deleted: wait for it to go
DRAINED = "drained"  # marked draining and no request left: delete it
DRAIN_TIMED_OUT = "drain timed out"  # marked, requests left, the timeout passed: delete, cutting them off
DRAINING = "draining"  # marked, requests left, within the timeout: wait and look again soon
START_DRAIN = "start drain"  # Ready, with a drain timeout: mark it draining
DELETE_NOW = "delete now"  # serves no traffic (not Ready), or drains are off: delete it
HOLD = "hold"  # Ready, and a paused rollout starts no removal: leave it alone


def pod_case(pod: PodObs, now: float, timeout: float, in_flight: Mapping[str, int], may_start: bool) -> str:
    """Which of the cases above ``pod`` is in. A paused rollout (``may_start`` False) starts no
    new drain and deletes no Ready pod, but a drain already started finishes.

    Worked example: timeout 120 s, marked at t=100: at t=150 with 3 in flight -> DRAINING; at
    t=160 with 0 -> DRAINED; at t=220 still with 2 -> DRAIN_TIMED_OUT.
    """
    if pod.deleting:
        return TERMINATING
    if pod.draining_since is not None:
        if in_flight.get(pod.name, 0) <= 0:
            return DRAINED
        return DRAIN_TIMED_OUT if now - pod.draining_since >= timeout else DRAINING
    if pod.ready and timeout > 0:
        return START_DRAIN if may_start else HOLD
    return DELETE_NOW if may_start or not pod.ready else HOLD


def drain_poll_delay(elapsed: float, timeout: float) -> float:
    """When to look again at a drain ``elapsed`` seconds old: the router's counts change without a
    cluster event, so soon, and no later than the timeout. Example: timeout 10 s, 9.8 s elapsed ->
    0.2 s; 3 s elapsed -> ``DRAIN_POLL_SECONDS`` (0.5 s)."""
    return min(DRAIN_POLL_SECONDS, max(timeout - elapsed, 0.0))


def ask_drain_poll(out: PlanBuilder, elapsed: float, timeout: float) -> None:
    """Ask for a pass in ``drain_poll_delay(elapsed, timeout)``: the poll, and the timeout as a
    deadline (the drain ends then, whatever the counts), so the plan says how long it holds."""
    out.requeue(DRAIN_POLL_SECONDS)
    out.requeue_at_deadline(max(timeout - elapsed, 0.0))


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

    Each pod by its ``pod_case``: a serving pod is marked draining, and deleted once the router
    reports no in-flight requests or the drain timeout has passed (the requests still running are
    then interrupted: the delete action says how many, ``Action.interrupted``, so that a cluster
    that does not count them itself records them, ``reconcile``). While one pod of the instance
    still drains, the others wait for it (``_leaving_with_a_draining_engine``).
    """
    to_drain, to_delete, interrupted, waiting = _sort_by_case(out, pods, may_start)
    if waiting and to_delete:
        to_delete = _leaving_with_a_draining_engine(to_delete)
    where = (group, role, ordinal, revision, reason)
    if to_drain:
        mark = drain_mark(out.ctx.now)
        out.act(Action(DRAIN, *where, pod_names=[p.name for p in to_drain], patches={p.name: mark for p in to_drain}))
        out.requeue(DRAIN_POLL_SECONDS)
    if to_delete:
        out.act(
            Action(
                DELETE,
                *where,
                pod_names=[p.name for p in to_delete],
                pod_uids=[p.uid for p in to_delete],
                interrupted={p.name: interrupted[p.name] for p in to_delete if p.name in interrupted},
            )
        )
    if waiting:
        _block_while_draining(out, pods, group, role, ordinal)


def _sort_by_case(
    out: PlanBuilder, pods: list[PodObs], may_start: bool
) -> tuple[list[PodObs], list[PodObs], dict[str, int], bool]:
    """``(to drain, to delete, requests a timed-out drain interrupts by pod, whether a drain
    still waits)``; every pod this pass removes (all but HOLD) goes into ``out.removing_pods``, and
    a waiting drain asks for a pass in ``drain_poll_delay``."""
    ctx = out.ctx
    now, in_flight, timeout = ctx.now, ctx.observed.in_flight, ctx.ms.drain_timeout_seconds
    to_drain: list[PodObs] = []
    to_delete: list[PodObs] = []
    interrupted: dict[str, int] = {}
    waiting = False
    for pod in pods:
        case = pod_case(pod, now, timeout, in_flight, may_start)
        if case == HOLD:
            continue
        out.removing_pods.add(pod.name)
        if case == START_DRAIN:
            to_drain.append(pod)
        elif case == DRAINING:
            waiting = True
            ask_drain_poll(out, now - pod.draining_since, timeout)
        elif case != TERMINATING:
            to_delete.append(pod)
            if case == DRAIN_TIMED_OUT:
                interrupted[pod.name] = in_flight.get(pod.name, 0)  # the timeout cuts them off
    return to_drain, to_delete, interrupted, waiting


def _leaving_with_a_draining_engine(to_delete: list[PodObs]) -> list[PodObs]:
    """Of ``to_delete``, the pods that may go while a pod of their instance still drains.

    Pods of one instance are one engine: while any of them still finishes in-flight requests (the
    entry, typically), the others those requests need stay. Only pods that were never serving (not
    Ready, never marked) go now."""
    return [p for p in to_delete if not p.ready and p.draining_since is None]


def _block_while_draining(out: PlanBuilder, pods: list[PodObs], group: int, role: str, ordinal: int) -> None:
    """Says what the instance waits for: the most requests any of its draining pods still has."""
    in_flight = out.ctx.observed.in_flight
    longest = max((in_flight.get(p.name, 0) for p in pods if p.draining), default=0)
    timeout = out.ctx.ms.drain_timeout_seconds
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
