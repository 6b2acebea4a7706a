"""The coordination tests' oracle: the rules of ``docs/concepts.md`` ("Rolling updates",
"Coordinated multi-role update") stated over what the cluster holds, and checked on every pass.

Nothing here comes from the planner: no planner module is imported, no counter of its status is
read, and no action's wording is trusted. Every figure is read from the pods (labels, Ready
condition, deletion timestamp, drain mark) and the spec (role counts, budgets, partition,
coordination), and every rule is written as the contract words it:

- progress of role r: instances at the target revision that are Ready, at an eligible ordinal
  (``partition <= k < replicas``; surge instances do not count), over ``T_r = replicas - partition``;
- skew: at most ``ceil(min(1, minReadyProgress + maxSkew) * T_r)`` replacements started, in
  flight included;
- startup gate: for A -> B -> C, new B and C capacity is Ready before a new A starts;
- teardown: while an old A exists, an old B is kept (and an old C while an old B exists);
- budgets, per role and per group: at most ``maxUnavailable`` instances not Ready (int or
  percent, rounds down, default 1) and at most ``replicas + maxSurge`` instances (percent rounds
  up, default 0); ``partition`` percent rounds up.

A pass is judged by comparing the state before it (what the controller saw) with the state right
after its writes (before the kubelet acts), where a started replacement is visible.
"""

from __future__ import annotations

import math
import pathlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.core import naming  # noqa: E402
from controller.core.revisions import project, role_hashes  # noqa: E402
from tests import contract  # noqa: E402
from tests.core.harness import (  # noqa: E402,F401
    CountingRouter,
    FixedClock,
    MiniCluster,
    manifest,
    role,
    run_until_converged,
    step,
)
from tests.factories import chain, coordinated  # noqa: E402,F401  (the suite's names for them)

NS, NAME = "default", "ms"


# -- driving the cluster (not part of the oracle) ----------------------------------------------------


def converged_cluster(m: dict, *, cluster: MiniCluster | None = None, clock: FixedClock | None = None):
    cluster = cluster or MiniCluster()
    clock = clock or FixedClock()
    cluster.create_modelserving(m)
    run_until_converged(cluster, clock)
    return cluster, clock


def spec_of(cluster) -> dict:
    return cluster.get_modelserving(NS, NAME)["spec"]


def set_images(cluster, image: str, roles=None) -> None:
    """Change the image of the first container of the named roles (all when None): a new revision."""
    template = spec_of(cluster)["template"]
    for r in template["roles"]:
        if roles is None or r["name"] in roles:
            for key in ("entryTemplate", "workerTemplate"):
                if r.get(key):
                    r[key]["spec"]["containers"][0]["image"] = image
    cluster.patch_modelserving(NS, NAME, {"spec": {"template": template}})


def target_role_hashes(cluster) -> dict[str, str]:
    """The role template hashes of the spec as it is now: which pods are "at the target revision".

    The hash is the product's revision identity (domain.md "Revisions"), computed from the spec
    alone; it says which revision a pod belongs to, not what the planner should do with it."""
    return role_hashes(project(spec_of(cluster)))


# -- reading the state -------------------------------------------------------------------------------


def _pod_ready(pod) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])
    )


@dataclass(frozen=True)
class Instance:
    """One role instance (entry pod plus its workers) as the pods show it."""

    ordinal: int
    new: bool  # every pod carries the target revision's role template hash
    ready: bool  # all its pods exist and are Ready (domain.md: "Ready only when all its pods are Ready")
    terminating: bool  # a pod has a deletion timestamp: it no longer exists as serving capacity
    draining: bool  # a pod carries the drain mark: the router sends it nothing new

    @property
    def serving(self) -> bool:
        """Ready and routable: counts as available capacity."""
        return self.ready and not self.terminating and not self.draining

    @property
    def kept(self) -> bool:
        """Neither draining nor terminating: nobody has started to take it away."""
        return not self.terminating and not self.draining


@dataclass(frozen=True)
class RoleView:
    """One role in one group, in the contract's terms."""

    replicas: int
    partition: int
    max_unavailable: int
    max_surge: int
    instances: tuple[Instance, ...]

    @property
    def target(self) -> int:
        """T_r = replicas - partition: the instances this rollout replaces."""
        return max(self.replicas - self.partition, 0)

    def _eligible(self, i: Instance) -> bool:
        return self.partition <= i.ordinal < self.replicas

    @property
    def replaced_ready(self) -> int:
        """Progress numerator: eligible instances at the target revision and Ready."""
        return sum(1 for i in self.instances if self._eligible(i) and i.new and i.serving)

    @property
    def started(self) -> int:
        """Replacements started, in flight included: eligible ordinals whose old instance is no
        longer there untouched (gone, draining, terminating, or already replaced)."""
        untouched_old = {i.ordinal for i in self.instances if self._eligible(i) and not i.new and i.kept}
        return self.target - len(untouched_old)

    @property
    def in_flight(self) -> int:
        """Started but not yet replaced-and-Ready."""
        return self.started - self.replaced_ready

    @property
    def old(self) -> int:
        """Old instances (any ordinal) nobody has started to take away."""
        return sum(1 for i in self.instances if not i.new and i.kept)

    @property
    def old_unreplaced(self) -> int:
        """Old eligible instances nobody has started to take away: what is left to replace."""
        return sum(1 for i in self.instances if self._eligible(i) and not i.new and i.kept)

    @property
    def old_alive(self) -> int:
        """Old instances that still exist (a draining one still serves its in-flight requests)."""
        return sum(1 for i in self.instances if not i.new and not i.terminating)

    @property
    def old_any(self) -> int:
        return sum(1 for i in self.instances if not i.new)

    @property
    def new_ready(self) -> int:
        """New capacity that is Ready, any ordinal (surge included): what the startup gate asks for."""
        return sum(1 for i in self.instances if i.new and i.serving)

    @property
    def available(self) -> int:
        return sum(1 for i in self.instances if i.serving)

    @property
    def existing(self) -> int:
        return sum(1 for i in self.instances if not i.terminating)

    # The names the tests used before this oracle was rewritten (kept for other test modules).
    ready = replaced_ready
    ready_any = new_ready
    old_pending = old_unreplaced


RoleProgress = RoleView  # the name the tests used before


def role_views(cluster, *, group=0, hashes=None) -> dict[str, RoleView]:
    """Every role of one group, read from its pods and the spec."""
    spec = spec_of(cluster)
    hashes = hashes or target_role_hashes(cluster)
    pods = [p for p in cluster.pods.values() if p["metadata"]["labels"].get(naming.LABEL_GROUP_ORDINAL) == str(group)]
    out = {}
    for r in spec["template"]["roles"]:
        name, replicas = r["name"], int(r.get("replicas", 1))
        per_instance = 1 + int(r.get("workerReplicas") or 0)
        by_ordinal: dict[int, list[dict]] = {}
        for p in pods:
            labels = p["metadata"]["labels"]
            if labels.get(naming.LABEL_ROLE) == name:
                by_ordinal.setdefault(int(labels[naming.LABEL_ROLE_ORDINAL]), []).append(p)
        instances = tuple(
            Instance(
                ordinal=k,
                new=all(p["metadata"]["labels"].get(naming.LABEL_ROLE_TEMPLATE_HASH) == hashes[name] for p in ps),
                ready=len(ps) == per_instance and all(_pod_ready(p) for p in ps),
                terminating=any(p["metadata"].get("deletionTimestamp") for p in ps),
                draining=any(naming.ANNOTATION_DRAINING in (p["metadata"].get("annotations") or {}) for p in ps),
            )
            for k, ps in sorted(by_ordinal.items())
        )
        b = contract.budgets(r, replicas)
        out[name] = RoleView(
            replicas=replicas,
            partition=b.partition,
            max_unavailable=b.max_unavailable,
            max_surge=b.max_surge,
            instances=instances,
        )
    return out


role_progress = role_views  # the name the tests used before


# -- the rules ---------------------------------------------------------------------------------------


def quota(min_ready_progress: Fraction, skew: Fraction, target: int) -> int:
    """ceil(min(1, minReadyProgress + maxSkew) * T_r). Seed example: all at 0, maxSkew 10%:
    A=100 -> ceil(0.1 * 100) = 10, B=50 -> 5, C=10 -> 1."""
    return math.ceil(min(Fraction(1), min_ready_progress + skew) * target)


def callers_of(deps: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for caller, on in deps.items():
        for d in on:
            out.setdefault(d, []).append(caller)
    return out


def min_ready_progress(views: dict[str, RoleView], coordinated_roles=None, deps=None) -> Fraction:
    """minReadyProgress over the coordinated roles (all roles when the set is not given).

    A role whose target is 0 has no progress to measure and is left out. Teardown holds one old
    instance of a dependency while an old caller exists, so such a dependency can reach T_r - 1
    replaced-and-Ready and no further until its callers finish: it has done everything the rules
    let it do. Reading its progress as (T_r - 1) / T_r would cap its callers below their target
    for ever (A=10 calling B=5 at 10%: B at 4/5 gives A ceil(0.9 * 10) = 9 of 10), which the
    contract rules out ("a dependency with a single instance therefore needs surge" - one with
    several does not). So a dependency whose every eligible instance but the one held for an old
    caller is replaced and Ready counts as complete; one with replacements still in flight counts
    its Ready ones only.
    """
    held_for = callers_of(deps or {})
    out = Fraction(1)
    for name, v in views.items():
        if (coordinated_roles is not None and name not in coordinated_roles) or v.target == 0:
            continue
        done = v.replaced_ready
        held = v.old == 1 and v.old_unreplaced == 1 and any(views[c].old_alive for c in held_for.get(name, []))
        if held and done == v.target - 1:
            done = v.target
        out = min(out, Fraction(done, v.target))
    return out


baseline_of = min_ready_progress  # the name the tests used before


def depends_on(role_name: str, deps: dict[str, list[str]]) -> set[str]:
    """Every role ``role_name`` calls, directly or through others (A -> B -> C: {B, C})."""
    seen: set[str] = set()
    stack = list(deps.get(role_name, []))
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(deps.get(d, []))
    return seen


closure = depends_on  # the name the tests used before


def started_between(before: dict[str, RoleView], after: dict[str, RoleView]) -> dict[str, int]:
    """Replacements a pass started, per role (roles that started none are left out)."""
    out = {r: after[r].started - before[r].started for r in after}
    return {r: n for r, n in out.items() if n > 0}


def started_in_pass(cluster, clock, router=None, *, group=0):
    """Run one pass without letting the kubelet act: (replacements it started per role, result)."""
    hashes = target_role_hashes(cluster)
    before = role_views(cluster, group=group, hashes=hashes)
    result = step(cluster, clock, router, settle=False)
    return started_between(before, role_views(cluster, group=group, hashes=hashes)), result


def started_by_role(actions) -> dict[str, int]:
    """Instances that got an update action in one pass, from the actions (kept for other test
    modules; the oracle reads the pods instead, see ``started_between``)."""
    out: dict[str, set] = {}
    for a in actions:
        if a.verb in ("drain", "delete", "patchImage", "setGate") and a.reason == "rolling update":
            out.setdefault(a.role, set()).add((a.group, a.ordinal))
    return {r: len(v) for r, v in out.items()}


def check_pass(
    skew: Fraction,
    deps: dict[str, list[str]],
    ever_started: dict,
    problems: list,
    teardown: bool = True,
    bound: bool = True,
    budgets: bool = True,
    coordinated_roles=None,
) -> Callable:
    """An ``on_pass`` for ``roll``: appends to ``problems`` every rule a pass broke, in words.

    ``bound``: the skew quota; the startup gate always; ``teardown``: the old-dependency rule;
    ``budgets``: maxUnavailable and maxSurge per role and group. A rule is judged on what the
    pass itself did: a figure the kubelet changed (a new pod becoming Ready, an old one lost) is
    not the pass's doing, so "no worse than before the pass" is accepted where the state was
    already outside a bound.
    """

    def on_pass(result, before_groups, after_groups):
        for g, (before, after) in enumerate(zip(before_groups, after_groups, strict=True)):
            base = min_ready_progress(before, coordinated_roles, deps)
            for r, a in after.items():
                b = before[r]
                coordinated_role = coordinated_roles is None or r in coordinated_roles
                if bound and coordinated_role:
                    allowed = quota(base, skew, a.target)
                    if a.started > max(allowed, b.started):
                        problems.append(
                            f"group {g} {r}: {a.started} replacements started > quota {allowed} "
                            f"(minReadyProgress {base}, T {a.target})"
                        )
                if a.started > b.started and (g, r) not in ever_started:
                    ever_started[(g, r)] = True
                    for d in depends_on(r, deps):
                        if before[d].new_ready == 0:
                            problems.append(f"group {g}: {r} started before a new {d} was Ready")
                if budgets:
                    floor = a.replicas - a.max_unavailable
                    if a.available < min(floor, b.available):
                        problems.append(
                            f"group {g} {r}: {a.available} available < replicas {a.replicas} - "
                            f"maxUnavailable {a.max_unavailable} (and {b.available} before the pass)"
                        )
                    ceiling = a.replicas + a.max_surge
                    if a.existing > max(ceiling, b.existing):
                        problems.append(
                            f"group {g} {r}: {a.existing} instances exist > replicas {a.replicas} + "
                            f"maxSurge {a.max_surge}"
                        )
            for caller, on in deps.items() if teardown else ():
                for d in on:
                    # "while an old A exists": a draining A still serves (its requests call B);
                    # "keep an old B": one nobody has started to take away.
                    if after[caller].old_alive > 0 and after[d].old == 0 and before[d].old_any > 0:
                        problems.append(f"group {g}: an old {caller} exists but no old {d} is kept")

    return on_pass


def roll(cluster, clock, *, on_pass=None, max_steps=400, router=None, require_converged=True):
    """Drive passes until converged. ``on_pass(result, before, after)`` gets the role views of
    every group read before the pass and right after its writes (before the kubelet settles)."""
    hashes = target_role_hashes(cluster)
    groups = int(spec_of(cluster)["replicas"])
    idle = 0
    for _ in range(max_steps):
        before = [role_views(cluster, group=g, hashes=hashes) for g in range(groups)]
        result = step(cluster, clock, router, settle=False)
        after = [role_views(cluster, group=g, hashes=hashes) for g in range(groups)]
        if on_pass:
            on_pass(result, before, after)
        cluster.settle()
        status = cluster.get_modelserving(NS, NAME).get("status") or {}
        if status.get("converged") and not result.actions:
            return result
        idle = 0 if result.actions else idle + 1
        if idle >= 5 and not require_converged:
            return result  # stalled: nothing changes any more
    if not require_converged:
        return result
    raise AssertionError(f"did not converge in {max_steps} passes; blocked: {result.blocked}")
