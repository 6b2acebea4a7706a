"""Canary weights in the simulated routers: which revision a new request's first hop goes to.

A canary with ``setWeight`` steps has ``status.canary.weight`` (``core.planner.canary``): N percent
of new requests start on instances of the update revision (``status.canary.revision``), the rest on
the others (stable), whatever the number of groups each has. Both routers (``memory.router`` for
``simulate``, ``database.traffic`` for the live app) restrict the pods of a request's first hop
with ``first_hop`` and then pick among them as before (least busy).

- No weight (no ``setWeight`` step, or no canary): every pod, and no draw at all, so runs without a
  weight draw exactly what they drew before.
- A weight: one draw from ``rng`` (a stream of its own, never the traffic's): below N/100 the
  request goes to the update revision's pods, else to the others. When the side it drew has no
  routable pod the request goes to the other side: a weight never rejects a request while some
  instance serves (the status says when the weight sends nothing to the canary,
  ``weightMessage``).

Example: weight 10, pods a (stable), b (stable), c (update): about 1 request in 10 goes to c.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from controller.core.ports import Obj


@dataclass(frozen=True, slots=True)
class Weight:
    percent: int  # 0..100 of new requests to the update revision
    revision: str  # the update (canary) revision's label value


def of_modelserving(ms: Obj | None) -> Weight | None:
    """The weight in force for ``ms`` (``status.canary``), or None when it has none."""
    canary = ((ms or {}).get("status") or {}).get("canary") or {}
    percent, revision = canary.get("weight"), canary.get("revision")
    if percent is None or not revision:
        return None
    return Weight(int(percent), str(revision))


def first_hop(
    pods: list[Obj], weight: Weight | None, rng: random.Random, revision_of: Callable[[Obj], str | None]
) -> list[Obj]:
    """The pods a new request may start on under ``weight`` (see the module docstring)."""
    if weight is None or not pods:
        return pods
    to_canary = rng.random() * 100.0 < weight.percent
    canary = [p for p in pods if revision_of(p) == weight.revision]
    stable = [p for p in pods if revision_of(p) != weight.revision]
    chosen, other = (canary, stable) if to_canary else (stable, canary)
    return chosen or other
