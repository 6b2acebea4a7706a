"""Reading a trace (format 1): the counts the tests assert on, computed from frames only."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction


def groups(frame) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for inst in frame["instances"]:
        out[inst["group"]].append(inst)
    return out


def group_complete_and_ready(instances, roles: dict[str, int]) -> bool:
    """All ``roles[r]`` instances of every role present and Ready (roles: name -> instances per group)."""
    ready = {(i["role"], i["ordinal"]) for i in instances if i["state"] == "Ready"}
    return all((r, o) in ready for r, n in roles.items() for o in range(n))


def available_groups(frame, roles: dict[str, int]) -> int:
    return sum(group_complete_and_ready(insts, roles) for insts in groups(frame).values())


def ready_instances(frame, group: int, role: str) -> int:
    return sum(1 for i in frame["instances"] if i["group"] == group and i["role"] == role and i["state"] == "Ready")


def instance_count(frame, group: int, role: str) -> int:
    return sum(1 for i in frame["instances"] if i["group"] == group and i["role"] == role)


def all_ready(frame, replicas: int, roles: dict[str, int]) -> bool:
    g = groups(frame)
    return (
        set(g) == set(range(replicas))
        and all(group_complete_and_ready(g[o], roles) for o in range(replicas))
        and len(frame["instances"]) == replicas * sum(roles.values())
    )


def first_converged_frame(trace, replicas: int, roles: dict[str, int]) -> float | None:
    for f in trace["frames"]:
        if all_ready(f, replicas, roles):
            return f["t"]
    return None


def skew_quota(ready_progress_min: Fraction, max_skew: Fraction, target: int) -> int:
    """ceil(min(1, minReadyProgress + maxSkew) * T) in exact arithmetic.

    Floats would get it wrong: 0.2 + 0.1 = 0.30000000000000004, times 50 is 15.000000000000002,
    whose ceiling is 16, not 15.
    """
    return math.ceil(min(Fraction(1), ready_progress_min + max_skew) * target)


def blocked_reasons(frame) -> list[str]:
    return [b.get("reason", "") for b in frame.get("blocked") or []]
