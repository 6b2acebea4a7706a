"""The RollingUpdate arithmetic of a Kubernetes Deployment, as pure functions.

The same rules as the Deployment controller (``pkg/controller/deployment/rolling.go``):

- **scale up** the new ReplicaSet while the total of all ReplicaSets stays within
  ``replicas + maxSurge`` (maxSurge rounds **up**);
- **scale down** old ReplicaSets while the available pods stay at or above
  ``replicas - maxUnavailable`` (maxUnavailable rounds **down**); unhealthy old pods go first, then
  the oldest ReplicaSets;
- when both round to 0 the controller allows one unavailable pod (the "fencepost" rule), so a
  rollout always moves.

Worked example, 8 replicas at 25%/25%: surge 2, unavailable 2 -> the new ReplicaSet goes to 2
(10 pods), the old one down to 6 (available 6 = the floor); as new pods become available the old
one shrinks further, never below 6 available, never above 10 pods.

The simulated Deployment controller applies these; the dashboard uses ``blocked_reasons`` to say
why a Deployment waits, on any cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..intorpercent import IntOrPercent


def resolve_fenceposts(max_surge: IntOrPercent, max_unavailable: IntOrPercent, replicas: int) -> tuple[int, int]:
    """(surge, unavailable) counts for ``replicas``; both 0 -> unavailable 1.
    Example: 25%/25% of 2 -> surge ceil(0.5) = 1, unavailable floor(0.5) = 0."""
    surge = max_surge.resolve(replicas, round_up=True)
    unavailable = max_unavailable.resolve(replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


@dataclass(frozen=True, slots=True)
class ReplicaSetCount:
    name: str
    replicas: int  # spec.replicas
    available: int  # status.availableReplicas


def new_replica_set_target(desired: int, new: ReplicaSetCount, total_replicas: int, surge: int) -> int:
    """The new ReplicaSet's replicas after this step: grow while the total of every ReplicaSet's
    spec stays within ``desired + surge``, never beyond ``desired``; shrink if above it."""
    if new.replicas >= desired:
        return desired
    room = desired + surge - total_replicas
    if room <= 0:
        return new.replicas
    return new.replicas + min(room, desired - new.replicas)


def old_replica_set_targets(
    desired: int, unavailable: int, new: ReplicaSetCount, olds: list[ReplicaSetCount]
) -> dict[str, int]:
    """Old ReplicaSets' replicas after this step (``olds`` oldest first).

    1. Unhealthy old pods (spec - available) may go as long as the new ReplicaSet's own not-yet-
       available pods leave room: ``maxScaledDown = all - minAvailable - newUnavailable``.
    2. Then available old pods, while the available total stays above ``desired - unavailable``.
    """
    targets = {rs.name: rs.replicas for rs in olds}
    old_total = sum(rs.replicas for rs in olds)
    if old_total == 0:
        return targets
    min_available = desired - unavailable
    all_replicas = old_total + new.replicas
    new_unavailable = max(new.replicas - new.available, 0)
    max_scaled_down = all_replicas - min_available - new_unavailable
    if max_scaled_down <= 0:
        return targets
    cleaned = 0
    for rs in olds:
        if cleaned >= max_scaled_down:
            break
        unhealthy = targets[rs.name] - rs.available
        if unhealthy <= 0:
            continue
        step = min(unhealthy, max_scaled_down - cleaned)
        targets[rs.name] -= step
        cleaned += step
    available_total = new.available + sum(min(rs.available, targets[rs.name]) for rs in olds)
    if available_total <= min_available:
        return targets
    to_scale_down = available_total - min_available
    for rs in olds:
        if to_scale_down <= 0:
            break
        step = min(targets[rs.name], to_scale_down)
        targets[rs.name] -= step
        to_scale_down -= step
    return targets


def blocked_reasons(
    desired: int,
    surge: int,
    unavailable: int,
    new: ReplicaSetCount,
    olds: list[ReplicaSetCount],
) -> list[str]:
    """Why a rolling update cannot take its next step now, in an operator's words (empty when it
    can, or when it is complete)."""
    old_total = sum(rs.replicas for rs in olds)
    if new.replicas >= desired and old_total == 0:
        return []
    reasons = []
    total = old_total + new.replicas
    if new.replicas < desired and total >= desired + surge:
        reasons.append(f"maxSurge reached: {total} of {desired + surge} pods exist ({surge} above {desired})")
    available = new.available + sum(rs.available for rs in olds)
    if old_total and available <= desired - unavailable:
        reasons.append(
            f"maxUnavailable reached: {available} available, at least {desired - unavailable} required "
            f"(waiting for {max(new.replicas - new.available, 0)} new pod(s) to become available)"
        )
    return reasons
