"""Coordinated multi-role updates (RoleRollingUpdate with ``coordination``), inside one group.

A selection loop admits one replacement at a time: the candidate whose role has the lowest started
progress, then the earlier role in the spec, then the highest ordinal. Each admission must pass:

- the role's own budget (``maxUnavailable`` / surge, as without coordination);
- the **skew quota**: a role may have at most ``ceil(min(1, baseline + maxSkew) * T)``
  replacements started, where the baseline is the lowest Ready progress of the coordinated roles
  (``budgets.skew_quota`` / ``budgets.ready_baseline``);
- the **dependency gate**: for A -> B (A calls B) a new A starts only once a new B is Ready;
- the **teardown order**: while an old caller exists, one old instance of its dependency stays
  (a single-instance dependency with ``maxSurge: 0`` therefore cannot move: reported as such);
- with a request path and revision-affine routing, **consistent paths** stay possible
  (``paths.replacement_case``): no new entry before a later hop of its revision is Ready, and not
  the last Ready later hop of Ready entries.

When nothing is admitted and nothing is in motion while work remains, no later pass can change
that by itself: it is reported as a stall an operator must resolve.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from ..plan import KIND_BUDGET, KIND_DEADLOCK, KIND_DEPENDENCY, KIND_SKEW
from ..spec import Coordination
from .budgets import RoleReadiness, ready_baseline, replacement_allowed, skew_quota
from .builder import PlanBuilder
from .paths import ALLOWED, LAST_PATH_OF_ENTRIES, keeper_of
from .role_state import RoleState


def admit_coordinated(
    out: PlanBuilder,
    group: int,
    states: dict[str, RoleState],
    queues: dict[str, list[int]],
    admitted: dict[str, list[int]],
) -> None:
    """Admit replacements of the coordinated roles from ``queues`` into ``admitted``."""
    ctx = out.ctx
    coordination = ctx.ms.strategy.coordination
    assert coordination is not None
    coordinated = [name for name in ctx.ms.role_names if name in set(coordination.roles)]
    skew = Fraction(coordination.max_skew_percent, 100)
    order = {name: i for i, name in enumerate(ctx.ms.role_names)}
    callers = _callers(coordination, coordinated)
    reasons: dict[str, tuple[str, str]] = {}
    keeper = keeper_of(out)
    held: dict[str, bool] = {}  # held_by_path's answers until the next admission changes the tally

    def held_by_path(role: str) -> bool:
        """The role's last old instance is kept because Ready entries still need it for a path."""
        if keeper is None:
            return False
        if role not in held:
            st = states[role]
            serving = [k for k in st.outdated_pending if k in st.available]
            held[role] = len(serving) == 1 and keeper.case(ctx, st.instances[serving[0]]).case == LAST_PATH_OF_ENTRIES
        return held[role]

    while True:
        best = None
        for role in coordinated:
            queue = queues.get(role) or []
            if not queue:
                continue
            st = states[role]
            k = queue[0]
            why = _refusal(out, coordination, role, states, coordinated, skew, callers, held_by_path)
            if why is None and keeper is not None:
                case = keeper.case(ctx, st.instances[k])
                if case.case != ALLOWED:
                    why = (case.reason, KIND_DEPENDENCY)
            if why is None and not _budget_allows(st, k):
                why = (role_budget_reason(st), KIND_BUDGET)
            if why is not None:
                reasons[role] = why
                continue
            reasons.pop(role, None)
            rank = (st.started_progress(), order[role], -k)
            if best is None or rank < best[0]:
                best = (rank, role, k)
        if best is None:
            break
        _, role, k = best
        queues[role].pop(0)
        if keeper is not None:
            keeper.take(ctx, states[role].instances[k])
            held.clear()
        states[role].take(k)
        admitted.setdefault(role, []).append(k)
    stalled = not admitted and not any(_in_motion(states[r]) for r in coordinated)
    for role, (reason, kind) in sorted(reasons.items()):
        if queues.get(role):
            if stalled and kind in (KIND_SKEW, KIND_DEPENDENCY, KIND_BUDGET):
                reason, kind = (
                    f"stalled: {reason}; no role can move until an operator changes the strategy "
                    "(maxSkew, maxSurge, maxUnavailable)",
                    KIND_DEADLOCK,
                )
            out.block(group, role, reason, kind)


def _callers(coordination: Coordination, coordinated: list[str]) -> dict[str, list[str]]:
    """For each role, the roles that call it (the reverse of ``dependencies``)."""
    callers: dict[str, list[str]] = {r: [] for r in coordinated}
    for dep in coordination.dependencies:
        for target in dep.depends_on:
            callers[target].append(dep.role)
    return callers


def _in_motion(st: RoleState) -> bool:
    """Something of this role will change by itself: a replacement in flight, a new instance not
    Ready yet, or surge that may still be created."""
    return (
        st.in_flight > 0
        or any(k not in st.available for k in st.at_target)
        or (bool(st.outdated_pending) and sum(1 for k in st.instances if k >= st.replicas) < st.max_surge)
    )


def _budget_allows(st: RoleState, k: int) -> bool:
    return replacement_allowed(
        candidate_available=k in st.available,
        available=len(st.available),
        total=st.replicas,
        max_unavailable=st.max_unavailable,
    )


def role_budget_reason(st: RoleState) -> str:
    """Why a role's next replacement waits on its own budget."""
    unavailable = max(st.replicas - len(st.available), 0)
    if st.max_unavailable == 0:
        for k in (k for k in st.instances if k >= st.replicas):
            message = st.instances[k].unschedulable
            if message:
                return f"blocked: surge pod unschedulable, 0 unavailable allowed ({st.role}-{k}: {message})"
        return f"0 unavailable allowed: waiting for surge {st.role} capacity to become Ready"
    failures = [
        f"{st.role}-{k}: {failure}"
        for k, inst in sorted(st.instances.items())
        if k not in st.available and (failure := inst.failure())
    ]
    # Named, or the operator reads "waiting" and waits for a crash loop that never ends.
    detail = f" ({'; '.join(failures[:3])}{'; ...' if len(failures) > 3 else ''})" if failures else ""
    return f"maxUnavailable reached ({unavailable} of {st.max_unavailable}){detail}"


def _readiness(
    states: dict[str, RoleState],
    coordinated: list[str],
    callers: dict[str, list[str]],
    held_by_path: Callable[[str], bool],
):
    for name in coordinated:
        st = states[name]
        # Held only once everything else of the role is Ready: before that the role is simply
        # behind. Example: B=3 with 1 new Ready, 1 in flight and 1 old is at 1/3, not 2/3.
        held = (
            st.old_routable == 1
            and st.ready_target == st.target - 1
            and bool(st.outdated_pending)
            and (any(states[c].old_alive > 0 for c in callers.get(name, [])) or held_by_path(name))
        )
        yield RoleReadiness(st.ready_target, st.target, held)


def _closure(role: str, coordination: Coordination) -> list[str]:
    """Every role ``role`` depends on, directly or transitively."""
    seen: list[str] = []
    stack = list(coordination.depends_on(role))
    while stack:
        dep = stack.pop()
        if dep in seen:
            continue
        seen.append(dep)
        stack.extend(coordination.depends_on(dep))
    return seen


def _refusal(
    out: PlanBuilder,
    coordination: Coordination,
    role: str,
    states: dict[str, RoleState],
    coordinated: list[str],
    skew: Fraction,
    callers: dict[str, list[str]],
    held_by_path: Callable[[str], bool],
) -> tuple[str, str] | None:
    """Why the next replacement of ``role`` may not start now (skew, dependency, teardown)."""
    st = states[role]
    baseline = ready_baseline(_readiness(states, coordinated, callers, held_by_path))
    allowed = skew_quota(st.target, baseline, skew)
    if st.ready_target + st.in_flight + 1 > allowed:
        return (
            f"maxSkew {coordination.max_skew_percent}%: {st.ready_target + st.in_flight} of {st.target} "
            f"started, quota {allowed} "
            f"until the slowest role passes {float(baseline) * 100:.0f}% Ready",
            KIND_SKEW,
        )
    # Dependency gate: before the first replacement of `role`, every role it depends on
    # (transitively) has a Ready instance on the target template.
    if st.ready_target == 0:
        for dep in _closure(role, coordination):
            dst = states.get(dep)
            if dst is None:
                continue
            target = out.ctx.update_role_hashes.get(dep)
            if not any(dst.instances[j].role_hash == target and j in dst.available for j in dst.instances):
                if dst.target == 0 and dst.old_alive:
                    return (
                        f"waits for dependency {dep}, whose replicas are all protected by its partition",
                        KIND_DEADLOCK,
                    )
                return (
                    f"waits for dependency {dep}: no Ready {dep} instance on the new template yet",
                    KIND_DEPENDENCY,
                )
    # Teardown order: while an old caller exists, keep at least one old instance of its
    # dependency. A single-instance dependency therefore needs surge or an interruption.
    old_callers = [c for c in callers.get(role, []) if states[c].old_alive > 0]
    if old_callers and st.old_routable - 1 < 1:
        if st.max_surge == 0:
            return (
                f"replacing the last old {role} instance would leave old {', '.join(old_callers)} "
                f"without an old {role}: "
                f"{role} needs maxSurge >= 1, an interruption (raise maxUnavailable and accept it), or "
                "cross-version compatibility",
                KIND_DEADLOCK,
            )
        return (
            f"keeps its last old instance while old {', '.join(old_callers)} exist (teardown order)",
            KIND_DEPENDENCY,
        )
    return None
