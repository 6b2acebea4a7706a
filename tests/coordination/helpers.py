"""Shared helpers for the issue-4 tests: build a converged ModelServing on the MiniCluster, change
its images, and read role progress straight from the pods (never from the planner's own counters).
"""

from __future__ import annotations

import math
import pathlib
import sys
from dataclasses import dataclass
from fractions import Fraction

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.core import naming  # noqa: E402
from controller.core.revisions import project, role_hashes  # noqa: E402
from tests.core.harness import (  # noqa: E402,F401
    CountingRouter,
    FixedClock,
    MiniCluster,
    manifest,
    role,
    run_until_converged,
    step,
)

NS, NAME = "default", "ms"


def coordinated(skew="10%", deps=None, roles=None) -> dict:
    coordination = {"maxSkew": skew}
    if deps:
        coordination["dependencies"] = [{"role": r, "dependsOn": list(on)} for r, on in deps.items()]
    if roles:
        coordination["roles"] = list(roles)
    return {"type": "RoleRollingUpdate", "roleRollingUpdateConfiguration": {"coordination": coordination}}


def chain(*names) -> dict:
    """chain("a", "b", "c") -> a depends on b, b depends on c (A -> B -> C)."""
    return {names[i]: [names[i + 1]] for i in range(len(names) - 1)}


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
    """Role template hashes of the spec as it is now (what the planner calls the target)."""
    return role_hashes(project(spec_of(cluster)))


def _ready(pod) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in (pod.get("status") or {}).get("conditions", [])
    )


@dataclass
class RoleProgress:
    target: int  # T = replicas - partition
    ready: int  # R: eligible, target template, all pods Ready, none draining/deleting
    in_flight: int  # I: removing, target-not-Ready, or missing eligible slots
    old: int  # instances (any ordinal) on an old template not being removed
    old_any: int  # instances on an old template, whether or not being removed
    ready_any: int = 0  # target template and Ready, any ordinal (surge included): new capacity
    old_alive: int = 0  # old instances not terminating (a draining one still serves its requests)
    old_pending: int = 0  # old eligible instances not being removed (still to be replaced)

    @property
    def started(self) -> int:
        return min(self.ready + self.in_flight, self.target)


def role_progress(cluster, *, group=0, hashes=None) -> dict[str, RoleProgress]:
    """Read R, I (Kthena's definitions) per role from the pods of one group."""
    ms_obj = cluster.get_modelserving(NS, NAME)
    hashes = hashes or target_role_hashes(cluster)
    roles = ms_obj["spec"]["template"]["roles"]
    pods = [p for p in cluster.pods.values() if p["metadata"]["labels"].get(naming.LABEL_GROUP_ORDINAL) == str(group)]
    out = {}
    for r in roles:
        name, replicas = r["name"], int(r.get("replicas", 1))
        partition = int(r.get("partition", 0) or 0)
        per_instance = 1 + int(r.get("workerReplicas") or 0)
        instances: dict[int, list[dict]] = {}
        for p in pods:
            labels = p["metadata"]["labels"]
            if labels.get(naming.LABEL_ROLE) == name:
                instances.setdefault(int(labels[naming.LABEL_ROLE_ORDINAL]), []).append(p)
        ready = in_flight = old = old_any = ready_any = old_alive = old_pending = 0
        for k, ps in instances.items():
            at_target = all(p["metadata"]["labels"].get(naming.LABEL_ROLE_TEMPLATE_HASH) == hashes[name] for p in ps)
            removing = any(
                p["metadata"].get("deletionTimestamp")
                or naming.ANNOTATION_DRAINING in (p["metadata"].get("annotations") or {})
                for p in ps
            )
            is_ready = len(ps) == per_instance and all(_ready(p) for p in ps) and not removing
            terminating = any(p["metadata"].get("deletionTimestamp") for p in ps)
            if not at_target:
                old_any += 1
                if not terminating:
                    old_alive += 1
                if not removing:
                    old += 1
                    if partition <= k < replicas:
                        old_pending += 1
            if at_target and is_ready:
                ready_any += 1
            if partition <= k < replicas:
                if at_target and is_ready:
                    ready += 1
                elif at_target or removing:
                    in_flight += 1
        in_flight += sum(1 for k in range(partition, replicas) if k not in instances)
        out[name] = RoleProgress(
            max(replicas - partition, 0), ready, in_flight, old, old_any, ready_any, old_alive, old_pending
        )
    return out


def quota(baseline: Fraction, skew: Fraction, target: int) -> int:
    return min(target, math.ceil(min(Fraction(1), baseline + skew) * target))


def baseline_of(
    progress: dict[str, RoleProgress], coordinated_roles=None, deps: dict[str, list[str]] | None = None
) -> Fraction:
    """min Ready progress over roles still rolling out.

    With dependencies, domain.md's teardown order makes a dependency keep its last old instance
    while an old caller exists. That instance is held on purpose, not lagging: counting it as not
    done would cap the caller below T forever (A=10, B=5 at 10%: B sits at 4/5, A's quota
    ceil(0.9 * 10) = 9 < 10) and contradict "with maxSurge 1 it completes". So a dependency whose
    only remaining old eligible instance is held for an old caller, and whose other eligible
    instances are all replaced and Ready, counts that slot as done. Nothing more: while other
    replacements of the dependency are still in flight its progress is its Ready count.
    """
    callers: dict[str, list[str]] = {}
    for caller, on in (deps or {}).items():
        for d in on:
            callers.setdefault(d, []).append(caller)
    out = Fraction(1)
    for n, p in progress.items():
        if (coordinated_roles is not None and n not in coordinated_roles) or p.target == 0:
            continue
        ready = p.ready
        if (
            p.old == 1
            and p.old_pending == 1
            and p.ready == p.target - 1
            and any(progress[c].old_alive > 0 for c in callers.get(n, []))
        ):
            ready = min(ready + 1, p.target)
        if ready < p.target:
            out = min(out, Fraction(ready, p.target))
    return out


def started_by_role(actions) -> dict[str, int]:
    """Replacements started in one pass: instances that got a drain or a delete for the update."""
    out: dict[str, set] = {}
    for a in actions:
        if a.verb in ("drain", "delete", "patchImage", "setGate") and a.reason == "rolling update":
            out.setdefault(a.role, set()).add((a.group, a.ordinal))
    return {r: len(v) for r, v in out.items()}


def closure(role_name: str, deps: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(deps.get(role_name, []))
    while stack:
        d = stack.pop()
        if d not in seen:
            seen.add(d)
            stack.extend(deps.get(d, []))
    return seen


def roll(cluster, clock, *, on_pass=None, max_steps=400, router=None, require_converged=True):
    """Drive passes until converged. ``on_pass(result, before, after)`` sees the progress read
    from the pods before the pass and right after its actions were applied (before the kubelet
    settles), which is where a started-but-not-done replacement is visible."""
    hashes = target_role_hashes(cluster)
    groups = int(spec_of(cluster)["replicas"])
    idle = 0
    for _ in range(max_steps):
        before = [role_progress(cluster, group=g, hashes=hashes) for g in range(groups)]
        result = step(cluster, clock, router, settle=False)
        after = [role_progress(cluster, group=g, hashes=hashes) for g in range(groups)]
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
