"""When a simulated rollout counts as converged: the trace's ``converged`` and ``convergedAt``.

The contract (shared/docs/scenarios.md): the spec's update revision runs on every instance outside
the partition, every instance is Ready, nothing is draining or deleting. The runner asks after
every reconcile pass, about the cluster as it stands after that pass, and the preview stops there.

Why not the controller's own ``status.converged`` (``controller.core.status``)? It answers the same
question about the cluster as the pass observed it, before the pass acted. The two agree on every
pass of every scenario but for a pass that itself finishes the rollout (a rollback that cancels a
drain, or deletes leftover surge pods): this function says converged after that pass, the status
only at the next pass, 5 ms later. Switching would move ``convergedAt`` (and so the end) of 3 of the
147 corpus traces by 5 ms; see the report of issue 10.
"""

from __future__ import annotations

from typing import Any

from controller.core.ports import Obj


def is_converged(
    ms: Obj,
    view: dict[str, Any],
    revisions: list[Obj] | None = None,
    *,
    cache: dict[tuple[str, str], Any] | None = None,
) -> bool:
    """scenarios.md: the update revision runs on every instance outside the partition, every instance
    is Ready, nothing is draining or deleting; plus: the controller observed the latest generation
    and exactly the desired instances exist (no leftover surge, no missing instance).

    Example: replicas 5, partition 3, one role with 1 instance: groups 3 and 4 must run the update
    revision; groups 0-2 may run any revision; all five must be Ready.

    Under role-level strategies an unchanged role is not replaced (its pods keep the revision label
    they were created with), and it does run the update revision's template for that role: so an
    instance counts as updated when its revision's role template equals the update revision's
    (same role hash), read from the stored revisions.
    """
    from controller.core import strategy
    from controller.core.revisions import History, role_hashes
    from controller.core.spec import ValidationError, parse_modelserving

    meta = ms.get("metadata") or {}
    if (ms.get("status") or {}).get("observedGeneration") != meta.get("generation"):
        return False
    instances = view.get("instances") or []
    # Cheap test first: during a rollout most passes end here, before any parsing.
    if any(inst.get("state") != "Ready" or inst.get("draining") or inst.get("surge") for inst in instances):
        return False
    key = (meta.get("uid", ""), meta.get("resourceVersion", ""))
    cache = {} if cache is None else cache
    parsed = cache.get(key)
    if parsed is None:
        try:
            spec = parse_modelserving(ms)
        except ValidationError:
            return False
        parsed = (spec, strategy.resolve(spec))
        cache.clear()
        cache[key] = parsed
    spec, eff = parsed
    update = view.get("updateRevision")
    expected = {(g, r.name, o) for g in range(spec.replicas) for r in spec.roles for o in range(r.replicas)}
    if len(instances) != len(expected):
        return False
    pods_per = {r.name: r.pods_per_instance for r in spec.roles}
    history = History.from_objects(revisions or []) if spec.role_level else None

    def same_role_template(revision: str, role: str) -> bool:
        if history is None:
            return False
        have, want = history.data_of(revision), history.data_of(update)
        if have is None or want is None:
            return False
        return role_hashes(have).get(role) == role_hashes(want).get(role) is not None

    for inst in instances:
        k = (inst.get("group"), inst.get("role"), inst.get("ordinal"))
        if k not in expected:
            return False
        if inst.get("state") != "Ready" or inst.get("draining") or inst.get("surge"):
            return False
        if inst.get("readyPods") != pods_per[k[1]] or inst.get("pods") != pods_per[k[1]]:
            return False
        if spec.role_level:
            protected = k[2] < eff.roles[k[1]].partition.count
        else:
            protected = k[0] < eff.group.partition.count
        if not protected and inst.get("revision") != update and not same_role_template(inst.get("revision"), k[1]):
            return False
    return True
