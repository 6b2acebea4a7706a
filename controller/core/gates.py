"""Serving gates: how far each role instance is on its way to serving traffic. Pure.

"Ready" in Kubernetes terms is not "serving": a pod can be Ready while its route is not effective
yet, or while the model answers wrongly. Each instance passes, in order:

    Created -> Scheduled -> Started -> Loaded -> Routed -> Verified -> Serving

- **Created**: every pod of the instance exists (``creationTimestamp``);
- **Scheduled**: every pod is bound to a node (``PodScheduled=True``);
- **Started**: every container of every pod runs (``state.running.startedAt``);
- **Loaded**: every pod is Ready (startup and readiness probes passed: the model is loaded);
- **Routed**: the router has the entry pod as a target, observed where the router tells
  (``routed``: the embedded router's table; on Kubernetes the pod's address ready in an
  EndpointSlice of the ModelServing's Services), and the pod is Ready, not draining, not
  terminating. Where nothing tells (a router that keeps no table), it is inferred from the pod as
  the router contract has it: Ready, not draining, not terminating, at the Ready time;
- **Verified**: the verification request (``spec.verification``) answered as expected for the
  revision the instance runs; without a verification spec, reached with Routed;
- **Serving**: every gate above passed.

Each gate has the time it was reached (the latest of the instance's pods). An instance is shown at
its highest gate; one that cannot go on says which gate failed (unschedulable -> Scheduled, image
pull or crash -> Started or Loaded, a failed verification -> Verified) and which gate it waits on,
since when.

Pod times are parsed once per pod version (uid, resourceVersion), like the observation itself.

``routed`` maps an entry pod's name to the time since which the router has it as a target, or to
None when that time is not known (then the Ready time). Routed is reached at the later of Loaded and
that time; ``ready_to_routed`` is the gap, which the funnel reports per gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .observe import InstanceObs, PodObs
from .passcache import GATES_LIMIT, PODS_LIMIT, PassCache, bounded_put

CREATED, SCHEDULED, STARTED, LOADED, ROUTED, VERIFIED, SERVING = (
    "Created",
    "Scheduled",
    "Started",
    "Loaded",
    "Routed",
    "Verified",
    "Serving",
)
GATES: tuple[str, ...] = (CREATED, SCHEDULED, STARTED, LOADED, ROUTED, VERIFIED, SERVING)
_PULL_FAILURES = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"})


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class PodTimes:
    created: float | None
    scheduled: float | None
    started: float | None  # every container running: the latest start
    ready: float | None  # Ready=True: since when


def pod_times(pod: PodObs, cache: PassCache | None = None) -> PodTimes:
    """The pod's gate times, read once per pod version (uid, resourceVersion) with a cache."""
    key = (pod.uid, pod.resource_version)
    cached = cache.pod_times.get(key) if cache is not None and key[1] else None
    if cached is not None:
        return cached
    times = _read_times(pod.raw)
    if cache is not None and key[1]:
        bounded_put(cache.pod_times, PODS_LIMIT, key, times)
    return times


def _read_times(raw: dict[str, Any]) -> PodTimes:
    meta = raw.get("metadata") or {}
    status = raw.get("status") or {}
    scheduled = ready = None
    for cond in status.get("conditions") or ():
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "PodScheduled":
            scheduled = _seconds(cond.get("lastTransitionTime"))
        elif cond.get("type") == "Ready":
            ready = _seconds(cond.get("lastTransitionTime"))
    started = None
    statuses = status.get("containerStatuses") or ()
    if statuses and all(((cs.get("state") or {}).get("running")) is not None for cs in statuses):
        starts = [_seconds(cs["state"]["running"].get("startedAt")) for cs in statuses]
        started = max((s for s in starts if s is not None), default=None)
    return PodTimes(_seconds(meta.get("creationTimestamp")), scheduled, started, ready)


@dataclass(frozen=True, slots=True)
class InstanceGates:
    reached: dict[str, float]  # gate -> time, in gate order
    failed: str | None  # the gate it failed (and cannot pass by itself)
    failure: str | None  # why, in words
    waiting: str | None  # the next gate, when not Serving
    waiting_since: float | None  # when the gate before it was reached
    highest: str | None  # the last gate reached
    serving: bool

    def waiting_json(self) -> dict[str, Any] | None:
        if not self.waiting:
            return None
        return {"gate": self.waiting, "since": self.waiting_since, "reason": self.failure}


def verification_passed(entry: PodObs | None, revision: str) -> bool | None:
    """The last verification of this entry pod for ``revision``: True, False, or None (none yet)."""
    result = entry.verification if entry is not None else None
    if not result or result.get("revision") != revision:
        return None
    return bool(result.get("passed"))


_NOT_ROUTED = object()  # the entry is not in the router's table


def instance_gates(
    inst: InstanceObs,
    expected_pods: int,
    *,
    verification_required: bool,
    pods: list[PodObs] | None = None,
    routed: Mapping[str, float | None] | None = None,
    cache: PassCache | None = None,
) -> InstanceGates:
    """``pods``: the instance's pods in index order, when the caller has them already.
    ``routed``: the router's targets (entry pod name -> since when, or None: unknown, the Ready
    time); None when the router tells nothing (Routed inferred from the pod). ``cache``: between
    two passes most instances do not change (1,000 groups: 4,000 instances), so their gates are
    kept by everything they read: the versions of the pods and the arguments."""
    if pods is None:
        pods = [inst.pods[i] for i in sorted(inst.pods)]
    entry = inst.entry
    table: Any = None if routed is None else routed.get(entry.name, _NOT_ROUTED) if entry is not None else _NOT_ROUTED
    if cache is None:
        return _instance_gates(inst, pods, expected_pods, verification_required, routed is not None, table, None)
    versions = tuple([(p.uid, p.resource_version) for p in pods])
    key = (versions, inst.revision, expected_pods, verification_required, routed is None, table)
    cacheable = all([rv for _, rv in versions])
    cached = cache.gates.get(key) if cacheable else None
    if cached is not None:
        return cached
    gates = _instance_gates(inst, pods, expected_pods, verification_required, routed is not None, table, cache)
    if cacheable:
        bounded_put(cache.gates, GATES_LIMIT, key, gates)
    return gates


def _instance_gates(
    inst: InstanceObs,
    pods: list[PodObs],
    expected_pods: int,
    verification_required: bool,
    observed_routing: bool = False,
    table: Any = None,
    cache: PassCache | None = None,
) -> InstanceGates:
    times = [pod_times(p, cache) for p in pods]
    reached: dict[str, float] = {}
    complete = inst.complete(expected_pods)

    def latest(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else max(values, default=None)  # type: ignore[type-var]

    steps = (
        (CREATED, complete, [t.created for t in times]),
        (SCHEDULED, all(p.scheduled for p in pods), [t.scheduled for t in times]),
        (STARTED, True, [t.started for t in times]),
        (LOADED, all(p.ready for p in pods), [t.ready for t in times]),
    )
    for gate, holds, values in steps:
        at = latest(values) if holds and complete else None
        if at is None:
            break
        reached[gate] = max(at, *reached.values()) if reached else at
    entry = inst.entry
    routable = LOADED in reached and entry is not None and entry.draining_since is None and not entry.deleting
    if routable and observed_routing and table is _NOT_ROUTED:
        routable = False  # Ready, but the router does not send it requests (yet)
    if routable:
        since = table if observed_routing and isinstance(table, (int, float)) else None
        reached[ROUTED] = reached[LOADED] if since is None else max(reached[LOADED], float(since))
        if not verification_required:
            reached[VERIFIED] = reached[ROUTED]
        elif verification_passed(entry, inst.revision):
            at = _seconds((entry.verification or {}).get("at"))
            reached[VERIFIED] = max(at if at is not None else reached[ROUTED], reached[ROUTED])
        if VERIFIED in reached:
            reached[SERVING] = reached[VERIFIED]
    failed, failure = _failure(inst, reached, entry, verification_required)
    nxt = next((g for g in GATES if g not in reached), None)
    since = reached[GATES[GATES.index(nxt) - 1]] if nxt and nxt != CREATED and reached else None
    if nxt == CREATED:
        since = min((t.created for t in times if t.created is not None), default=None)
    highest = next(reversed(reached)) if reached else None
    return InstanceGates(reached, failed, failure, nxt, since, highest, SERVING in reached)


def _failure(
    inst: InstanceObs, reached: dict[str, float], entry: PodObs | None, verification_required: bool
) -> tuple[str | None, str | None]:
    if inst.unschedulable and SCHEDULED not in reached:
        return SCHEDULED, inst.unschedulable
    if inst.failing:
        gate = STARTED if inst.failing in _PULL_FAILURES or STARTED not in reached else LOADED
        return gate, inst.failing
    if inst.lost:
        return LOADED, "a pod failed"
    if verification_required and ROUTED in reached and verification_passed(entry, inst.revision) is False:
        result = (entry.verification if entry else None) or {}
        detail = result.get("error") or f"status {result.get('status')}"
        return VERIFIED, f"verification failed: {detail}"
    return None, None


def funnel(gates: list[tuple[tuple[int, str, int], InstanceGates]]) -> list[dict[str, Any]]:
    """How many instances stand at each gate (their highest), and per gate the instance that has
    waited longest for the next one. ``gates``: ((group, role, ordinal), gates) pairs.

    One walk over the instances (the view calls this on every pass, 160 instances a pass in the
    seed example): per gate its count and the earliest (since, key) waiting, and each routed
    instance's gap from Loaded to Routed (``ready_to_routed``)."""
    counts = dict.fromkeys(GATES, 0)
    earliest: dict[str, tuple[float, tuple[int, str, int]]] = {}
    gaps = []
    for key, g in gates:
        reached = g.reached
        routed_at = reached.get(ROUTED)
        if routed_at is not None:
            loaded_at = reached.get(LOADED)
            gaps.append(0.0 if loaded_at is None else max(0.0, routed_at - loaded_at))
        highest = g.highest
        if highest not in counts:
            continue
        counts[highest] += 1
        # The earliest "since" (ties: the first key in order): the state stays the same while
        # nothing changes (a page shows the seconds as its time minus since), so an unchanged
        # cluster publishes no new state.
        since = g.waiting_since
        if since is not None and g.waiting:
            best = earliest.get(highest)
            if best is None or (since, key) < best:
                earliest[highest] = (since, key)
    out = []
    for gate in GATES:
        slowest = None
        if gate in earliest:
            since, (group, role, ordinal) = earliest[gate]
            slowest = {"group": group, "role": role, "ordinal": ordinal, "since": since}
        out.append({"gate": gate, "count": counts[gate], "slowest": slowest})
    if gaps:
        gaps.sort()
        # The time the router took to send requests to a Ready pod: shown on the Routed gate.
        routed = out[GATES.index(ROUTED)]
        routed["fromLoaded"] = {
            "instances": len(gaps),
            "medianSeconds": round(gaps[(len(gaps) - 1) // 2], 3),
            "maxSeconds": round(gaps[-1], 3),
        }
    return out


def ready_to_routed(gates: InstanceGates) -> float:
    """Seconds from Loaded (every pod Ready) to Routed (the router has the entry as a target); 0
    when not routed yet or when the router took it at once."""
    if ROUTED not in gates.reached or LOADED not in gates.reached:
        return 0.0
    return max(0.0, gates.reached[ROUTED] - gates.reached[LOADED])
