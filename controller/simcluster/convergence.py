"""When a simulated rollout counts as converged: the trace's ``converged`` and ``convergedAt``.

The contract (shared/docs/scenarios.md): the spec's update revision runs on every instance outside
the partition, every instance is Ready, nothing is draining or deleting. The runner asks after
every reconcile pass, about the cluster as it stands after that pass (its pods listed then and
observed), and the preview stops there.

The rule reads the observation (``core.observe``), the same one the state view's instance entries
are made from: an instance is Ready here exactly when its entry in the view says ``state: Ready``
(``core.view.instance_state``, with the pods per instance of the revision it runs), and it runs
what the view's ``revision`` says. It asks nothing the page needs (gates, in-flight counts), so a
caller that draws no page (the preview) builds no view at all; ``tests/sim`` checks it against the
contract read from the full view on every pass of a corpus.

Why not the controller's own ``status.converged`` (``controller.core.status``)? It answers the same
question about the cluster as the pass observed it, before the pass acted. The two agree on every
pass of every scenario but for a pass that itself finishes the rollout (a rollback that cancels a
drain, or deletes leftover surge pods): this function says converged after that pass, the status
only at the next pass, 5 ms later. Switching would move ``convergedAt`` (and so the end) of 3 of the
147 corpus traces by 5 ms; see the report of issue 10.
"""

from __future__ import annotations

from typing import Any

from controller.core import strategy
from controller.core.observe import Observed
from controller.core.ports import Obj
from controller.core.revisions import History, role_hashes
from controller.core.spec import ValidationError, parse_modelserving
from controller.core.view import STATE_READY, expected_pods, instance_state


def is_converged(
    ms: Obj,
    observed: Observed,
    revisions: list[Obj] | None = None,
    *,
    cache: dict[tuple[str, str], Any] | None = None,
) -> bool:
    """scenarios.md: the update revision runs on every instance outside the partition, every instance
    is Ready, nothing is draining or deleting; plus: the controller observed the latest generation
    and exactly the desired instances exist (no leftover surge, no missing instance).

    ``ms`` is the ModelServing with the status the last pass wrote (its ``updateRevision``),
    ``observed`` its pods as they stand after that pass. ``cache`` keeps the parsed spec from one
    call to the next (keyed by uid and resourceVersion).

    Example: replicas 5, partition 3, one role with 1 instance: groups 3 and 4 must run the update
    revision; groups 0-2 may run any revision; all five must be Ready.

    Under role-level strategies an unchanged role is not replaced (its pods keep the revision label
    they were created with), and it does run the update revision's template for that role: so an
    instance counts as updated when its revision's role template equals the update revision's
    (same role hash), read from the stored revisions.
    """
    meta = ms.get("metadata") or {}
    status = ms.get("status") or {}
    if status.get("observedGeneration") != meta.get("generation"):
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
    history = History.from_objects(revisions or [])
    update = status.get("updateRevision")
    record = history.get(update)
    update_role_hashes = record.role_hashes() if record is not None else {}
    pods_per = {r.name: r.pods_per_instance for r in spec.roles}
    role_replicas = {r.name: r.replicas for r in spec.roles}
    expected_of: dict[tuple[str, str], int] = {}

    def ready(inst: Any, role: str) -> bool:
        # Ready as the state view shows it: with the pods per instance of the revision it runs.
        n = expected_of.get((inst.revision, role))
        if n is None:
            n = expected_of[(inst.revision, role)] = expected_pods(spec, history, inst.revision, role)
        return instance_state(inst, n) == STATE_READY

    def runs_update(inst: Any, role: str) -> bool:
        runs = inst.revision
        if spec.role_level and update and inst.role_hash and update_role_hashes.get(role) == inst.role_hash:
            runs = update  # an unchanged role's instance runs the update revision's template
        if runs == update:
            return True
        if not spec.role_level:
            return False
        have, want = history.data_of(runs), history.data_of(update)
        if have is None or want is None:
            return False
        return role_hashes(have).get(role) == role_hashes(want).get(role) is not None

    seen = 0
    # Cheap tests first: during a rollout most passes end at the first group that is not done.
    for g in sorted(observed.groups):
        group = observed.groups[g]
        for (role, ordinal), inst in group.instances.items():
            seen += 1
            if g >= spec.replicas or ordinal >= role_replicas.get(role, 0):
                return False  # a surge instance, or one of a role that left the spec
            if not ready(inst, role):
                return False  # Ready excludes draining, deleting, updating in place, failing
            want = pods_per[role]
            if len(inst.pods) != want or sum(1 for p in inst.pods.values() if p.ready) != want:
                return False
            if spec.role_level:
                protected = ordinal < eff.roles[role].partition.count
            else:
                protected = g < eff.group.partition.count
            if not protected and not runs_update(inst, role):
                return False
    return seen == sum(role_replicas.values()) * spec.replicas
