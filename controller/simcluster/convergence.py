"""When a simulated rollout counts as converged: the trace's ``converged`` and ``convergedAt``.

The contract (docs/scenarios.md): the spec's update revision runs on every instance outside
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

from collections.abc import Callable, Iterable
from typing import Any

from controller.core import strategy
from controller.core.observe import InstanceObs, Observed
from controller.core.plan import CREATE, Action
from controller.core.ports import Obj
from controller.core.revisions import History, role_hashes
from controller.core.spec import ModelServing, ValidationError, parse_modelserving
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
    call to the next (keyed by uid and resourceVersion). Each instance is judged by
    ``Convergence.unfinished``.

    Example: replicas 5, partition 3, one role with 1 instance: groups 3 and 4 must run the update
    revision; groups 0-2 may run any revision; all five must be Ready.
    """
    meta = ms.get("metadata") or {}
    status = ms.get("status") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        return False
    parsed = _parsed_spec(ms, cache)
    if parsed is None:
        return False
    rule = Convergence(*parsed, History.from_objects(revisions or []), status.get("updateRevision"))
    seen = 0
    # Cheap tests first: during a rollout most passes end at the first group that is not done.
    for g in sorted(observed.groups):
        for (role, ordinal), inst in observed.groups[g].instances.items():
            seen += 1
            if rule.unfinished(g, role, ordinal, inst) is not None:
                return False
    return seen == rule.instances_wanted


def an_acted_pod_is_unfinished(actions: Iterable[Action], stored: Callable[[str], Obj | None]) -> bool:
    """Whether a pod a pass acted on stands, after the pass, not Ready or being deleted (``stored``:
    the stored pod of that name, or None). Its instance is then not Ready (``InstanceObs.all_ready``
    reads the pod's last Ready condition and its deletionTimestamp), so ``is_converged`` would say
    False, and the runner need not list and observe every pod to hear it. Worked example, the
    1,000-group preview of ``bench sim``: the pass that deletes a batch's 300 pods leaves them
    terminating, the one that creates their 300 replacements leaves them Pending; each would have
    observed 3,000-3,300 pods, parsing the 300 new versions that change again before the next pass.
    False (ask ``is_converged``) when every acted-on pod is Ready or gone (a label patch, a pod
    removed at once because it was never bound)."""
    for action in actions:
        if action.verb == CREATE:
            names = [(p.get("metadata") or {}).get("name") for p in action.pods]
        else:
            names = action.pod_names
        for name in names:
            pod = stored(name) if name else None
            if pod is not None and _unfinished_pod(pod):
                return True
    return False


def _unfinished_pod(pod: Obj) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return True
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _parsed_spec(ms: Obj, cache: dict[tuple[str, str], Any] | None) -> tuple[ModelServing, Any] | None:
    """``(spec, effective strategy)`` of ``ms``, None when it is invalid (never converged).

    ``cache`` keeps the last one, keyed by the ModelServing's uid and resourceVersion: a run asks
    after every pass, and the spec changes only at an event."""
    key = ((ms.get("metadata") or {}).get("uid", ""), (ms.get("metadata") or {}).get("resourceVersion", ""))
    cache = {} if cache is None else cache
    parsed = cache.get(key)
    if parsed is None:
        try:
            spec = parse_modelserving(ms)
        except ValidationError:
            return None
        parsed = (spec, strategy.resolve(spec))
        cache.clear()
        cache[key] = parsed
    return parsed


# Why an instance keeps a rollout from having converged (``Convergence.unfinished``).
SURPLUS = "surplus"  # a surge instance, or one of a role that left the spec
NOT_READY = "not ready"  # draining, deleting, updating in place, failing, or not yet Ready
PODS_MISSING = "pods missing"  # Ready, but not exactly the spec's pods per instance
OUTDATED = "outdated"  # outside the partition and not running the update revision


class Convergence:
    """The rule of one call of ``is_converged``: the spec, its effective strategy, the stored
    revisions and the update revision, with the pods per instance of each (revision, role) read
    once."""

    __slots__ = ("spec", "eff", "history", "update", "update_role_hashes", "pods_per", "role_replicas", "_expected")

    def __init__(self, spec: ModelServing, eff: Any, history: History, update: str | None) -> None:
        self.spec, self.eff, self.history, self.update = spec, eff, history, update
        record = history.get(update)
        self.update_role_hashes = record.role_hashes() if record is not None else {}
        self.pods_per = {r.name: r.pods_per_instance for r in spec.roles}
        self.role_replicas = {r.name: r.replicas for r in spec.roles}
        self._expected: dict[tuple[str, str], int] = {}

    @property
    def instances_wanted(self) -> int:
        return sum(self.role_replicas.values()) * self.spec.replicas

    def unfinished(self, group: int, role: str, ordinal: int, inst: InstanceObs) -> str | None:
        """Why instance ``role-ordinal`` of ``group`` is not done (one of the reasons above,
        cheapest test first), None when it is."""
        if group >= self.spec.replicas or ordinal >= self.role_replicas.get(role, 0):
            return SURPLUS
        if not self.ready(inst, role):
            return NOT_READY  # Ready excludes draining, deleting, updating in place, failing
        # Ready means every pod it has is Ready (``InstanceObs.all_ready``), so counting its pods is
        # enough: an instance of the spec's 2 pods per instance with a third pod is not done.
        if len(inst.pods) != self.pods_per[role]:
            return PODS_MISSING
        if not self.protected(group, role, ordinal) and not self.runs_update(inst, role):
            return OUTDATED
        return None

    def ready(self, inst: InstanceObs, role: str) -> bool:
        """Ready as the state view shows it: with the pods per instance of the revision it runs."""
        n = self._expected.get((inst.revision, role))
        if n is None:
            n = self._expected[(inst.revision, role)] = expected_pods(self.spec, self.history, inst.revision, role)
        return instance_state(inst, n) == STATE_READY

    def protected(self, group: int, role: str, ordinal: int) -> bool:
        """Inside the partition (of the role under role-level strategies, else of the groups)."""
        if self.spec.role_level:
            return ordinal < self.eff.roles[role].partition.count
        return group < self.eff.group.partition.count

    def runs_update(self, inst: InstanceObs, role: str) -> bool:
        """Runs the update revision's template for ``role``.

        Under role-level strategies an unchanged role is not replaced (its pods keep the revision
        label they were created with), and it does run the update revision's template for that
        role: so an instance counts as updated when its revision's role template equals the update
        revision's (same role hash), read from the stored revisions.
        Example: update B changes prefill only; a decode instance labelled A with B's decode hash
        runs the update."""
        update, runs = self.update, inst.revision
        if self.spec.role_level and update and inst.role_hash and self.update_role_hashes.get(role) == inst.role_hash:
            runs = update  # an unchanged role's instance runs the update revision's template
        if runs == update:
            return True
        if not self.spec.role_level:
            return False
        have, want = self.history.data_of(runs), self.history.data_of(update)
        if have is None or want is None:
            return False
        return role_hashes(have).get(role) == role_hashes(want).get(role) is not None
