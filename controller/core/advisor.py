"""The strategy advisor's search: which rollout budgets roll a change out fastest while keeping a floor.

Pure: no Django, no cluster. The caller (``rolloutui.services.advisor``) runs a preview of the change
for each candidate on a copy of the running ModelServing and hands the outcomes back here.

The steps, in order:

1. ``floor_of``: the capacity the rollout must keep, in ServingGroups: the larger of the current
   strategy's floor (``replicas - maxUnavailable`` at group level) and the groups the offered load
   needs at the safe concurrency (the capacity signals' recommendation, when there is one), with a
   sentence saying which one sets it.
2. ``candidates``: strategies to try. The current strategy first, always. Then, for
   ``ServingGroupRollingUpdate``, group-level ``maxUnavailable`` / ``maxSurge`` pairs; for the
   role-level types, the same budgets on every role (they count instances inside each group), and
   ``maxSkew`` values when the roles are coordinated. Canary steps and partitions stay as written.
   A candidate whose budget alone may take the ModelServing below the floor, or whose surge needs
   more GPUs than are free, is kept in the list as infeasible with the reason in words ("surge 2
   needs 12 GPUs, 8 free") and is not simulated. At most ``limit`` candidates are simulated;
   duplicates (the same effective budgets) are dropped.
3. ``advise``: each simulated candidate is feasible when its preview converged and never went below
   the floor; the recommended one is the fastest feasible (ties: fewer GPUs borrowed, then the
   earlier candidate, so the current strategy wins a tie).

Worked example (the demo): 4 groups of 6 GPUs, ``maxUnavailable: 1``, 20 GPUs free, no load signal:
the floor is 3 groups (the current strategy's). ``maxUnavailable 2`` is infeasible (may leave 2 of
4), ``maxSurge 4`` is infeasible (needs 24 GPUs, 20 free); ``maxUnavailable 1, maxSurge 3`` replaces
all four groups at once and is recommended when its preview keeps 3 groups available throughout.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import podresources
from .spec import GROUP_ROLLING, IN_PLACE, ModelServing, ValidationError, parse_modelserving
from .strategy import ClusterSettings, resolve

DEFAULT_LIMIT = 12


class AdvisorError(ValueError):
    """Bad input to the search, naming the field."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Floor:
    groups: int
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"groups": self.groups, "why": self.why}


@dataclass(frozen=True)
class Candidate:
    """One strategy to try. ``strategy``: what is shown and applied (see ``strategy_patch``);
    ``reason``: why it is infeasible without simulating it (None: simulate it)."""

    strategy: dict[str, Any]
    current: bool
    gpus_borrowed: int  # GPUs its surge may hold at once
    reason: str | None = None
    key: tuple = field(default=(), compare=False)
    # Role level: the groups' worth of every role its budgets keep serving (see ``role_keeps``).
    keeps: int | None = None

    @property
    def simulate(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class Outcome:
    """What the preview of one candidate showed (virtual seconds from the change)."""

    converged: bool
    duration: float | None
    min_available: int | None
    min_at: float | None
    desired: int
    error: str | None = None  # the preview did not run (time limit, refused)
    stopped: str | None = None  # the preview was stopped early, and why (slower than the best so far)


# --- figures of a manifest -----------------------------------------------------------------------------
def instance_gpus(ms: ModelServing) -> dict[str, int]:
    """GPUs of one instance of each role: its entry pod and its workers."""
    return {
        r.name: podresources.instance_gpus(r.entry_template, r.worker_replicas, r.worker_template) for r in ms.roles
    }


def group_gpus(ms: ModelServing) -> int:
    """GPUs of one ServingGroup: every role's instances. Demo: prefill 1 x (2 + 2) + decode 2 x 1 = 6."""
    per = instance_gpus(ms)
    return sum(r.replicas * per[r.name] for r in ms.roles)


def _parse(manifest: Mapping[str, Any], what: str) -> ModelServing:
    try:
        return parse_modelserving(dict(manifest))
    except ValidationError as err:
        raise AdvisorError(f"{what} is not a valid ModelServing: {err}", field=f"{what}.{err.field}") from None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- the floor -------------------------------------------------------------------------------------------
def strategy_floor(ms: ModelServing, settings: ClusterSettings | None) -> tuple[int, str]:
    """The groups the current strategy keeps by its budget (group level), with the words."""
    eff = resolve(ms, settings)
    if ms.strategy.type == GROUP_ROLLING:
        mu = eff.group.max_unavailable.count
        return max(ms.replicas - mu, 0), (
            f"the current strategy's floor ({ms.replicas} groups less maxUnavailable {mu})"
        )
    keeps, words = role_keeps(ms, {n: b.max_unavailable.count for n, b in eff.roles.items()})
    return keeps, f"the current strategy's floor ({words})"


def role_keeps(ms: ModelServing, unavailable: Mapping[str, int]) -> tuple[int, str]:
    """Role-level budgets count instances inside each group, and every group spends its own: with
    ``maxUnavailable`` u of a role's r instances per group, r - u of them serve in every group while
    it updates. In groups' worth: the ModelServing's groups x the smallest such share over the
    roles, rounded down (a group is whole only when every role in it serves). Example: 4 groups,
    decode 1 of 2 unavailable, prefill 0 of 1 -> 4 x min(1/2, 1) = 2."""
    share, words = None, []
    for r in ms.roles:
        u = min(int(unavailable.get(r.name, 0)), r.replicas)
        words.append(f"{r.name} {r.replicas - u} of {r.replicas}")
        part = (r.replicas - u) / r.replicas if r.replicas else 1.0
        share = part if share is None else min(share, part)
    keeps = int(ms.replicas * (share if share is not None else 1.0) + 1e-9)
    return keeps, f"{', '.join(words)} instances per group keep serving: {keeps} of {ms.replicas} groups' worth"


def floor_of(
    ms: ModelServing,
    settings: ClusterSettings | None,
    *,
    load_groups: int | None,
    load_why: str,
    current_min: int | None = None,
    override: int | None = None,
) -> Floor:
    """The floor in groups and why: the larger of the current strategy's floor and ``load_groups``
    (the groups the offered load needs at the safe concurrency; None: unknown, ``load_why`` says
    why). For role-level strategies the current strategy's floor is what its budgets keep of every
    role (``role_keeps``). ``override``: an operator's own floor, used as given. ``current_min`` is
    not used (kept for callers)."""
    if override is not None:
        if override < 0 or override > ms.replicas:
            raise AdvisorError(f"floor must be between 0 and {ms.replicas} (the groups there are)", field="floor")
        return Floor(override, f"{override} of {ms.replicas} groups: the floor asked for")
    own, own_why = strategy_floor(ms, settings)
    load = min(load_groups, ms.replicas) if load_groups is not None else None
    if load is None:
        return Floor(own, f"{own} of {ms.replicas} groups: {own_why}; the load sets none ({load_why})")
    if load > own:
        return Floor(
            load, f"{load} of {ms.replicas} groups: what the offered load needs ({load_why}); {own_why} is {own}"
        )
    return Floor(own, f"{own} of {ms.replicas} groups: {own_why}; the offered load needs {load} ({load_why})")


# --- candidates ----------------------------------------------------------------------------------------
def _ladder(top: int) -> list[int]:
    """0, 1, 2, 4, 8, ... up to ``top``, and ``top`` itself."""
    values, v = [0], 1
    while v < top:
        values.append(v)
        v *= 2
    if top > 0:
        values.append(top)
    return values


def _written_group(raw: Mapping[str, Any]) -> dict[str, Any]:
    spec = raw.get("spec") or {}
    rs = spec.get("rolloutStrategy") or {}
    return rs.get("rollingUpdateConfiguration") or {}


def current_strategy(manifest: Mapping[str, Any], ms: ModelServing, settings: ClusterSettings | None) -> dict[str, Any]:
    """The current strategy in the advisor's shape, with resolved counts."""
    eff = resolve(ms, settings)
    if ms.strategy.type == GROUP_ROLLING:
        return {
            "type": ms.strategy.type,
            "maxUnavailable": eff.group.max_unavailable.count,
            "maxSurge": eff.group.max_surge.count,
        }
    out: dict[str, Any] = {
        "type": ms.strategy.type,
        "roles": {
            name: {"maxUnavailable": b.max_unavailable.count, "maxSurge": b.max_surge.count}
            for name, b in sorted(eff.roles.items())
        },
    }
    if eff.coordination is not None:
        out["maxSkew"] = eff.coordination["maxSkew"]
    return out


def candidates(
    manifest: Mapping[str, Any],
    *,
    settings: ClusterSettings | None,
    free_gpus: int,
    floor: Floor,
    limit: int = DEFAULT_LIMIT,
) -> list[Candidate]:
    """The strategies to try for ``manifest`` (the ModelServing after the change), current first.

    At most ``limit`` are to be simulated (the current among them); infeasible ones found without
    simulating are listed as well (at most one per reason), after them. Raises ``AdvisorError``
    naming the field for a bad ``limit`` or ``free_gpus``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise AdvisorError("limit must be a whole number of candidates, 1 or more", field="limit")
    if isinstance(free_gpus, bool) or not isinstance(free_gpus, int) or free_gpus < 0:
        raise AdvisorError("free GPUs must be a whole number, 0 or more", field="freeGpus")
    ms = _parse(manifest, "manifest")
    current = current_strategy(manifest, ms, settings)
    if ms.strategy.type == GROUP_ROLLING:
        pool = _group_candidates(manifest, ms, settings, free_gpus, floor)
    elif ms.strategy.type == IN_PLACE:
        pool = _role_candidates(manifest, ms, settings, free_gpus, floor, surge=False)
    else:
        pool = _role_candidates(manifest, ms, settings, free_gpus, floor, surge=True)
    keeps = None
    if "roles" in current:
        keeps = role_keeps(ms, {n: b["maxUnavailable"] for n, b in current["roles"].items()})[0]
    first = Candidate(
        current, True, _borrowed(ms, current), key=_effective_key(manifest, current, settings), keeps=keeps
    )
    out = [first]
    seen = {first.key}
    infeasible: dict[str, Candidate] = {}
    for cand in pool:
        if cand.key in seen:
            continue
        seen.add(cand.key)
        if cand.reason is not None:
            kind = cand.reason.split(" ", 1)[0]
            infeasible.setdefault(kind, cand)
            continue
        if len(out) < limit:
            out.append(cand)
    return out + list(infeasible.values())


def _borrowed(ms: ModelServing, strategy: Mapping[str, Any]) -> int:
    if "roles" in strategy:
        per = instance_gpus(ms)
        return sum(
            min(int(b.get("maxSurge") or 0), _role(ms, name).replicas) * per[name] * ms.replicas
            for name, b in strategy["roles"].items()
        )
    return min(int(strategy.get("maxSurge") or 0), ms.replicas) * group_gpus(ms)


def _role(ms: ModelServing, name: str):
    return next(r for r in ms.roles if r.name == name)


def _effective_key(manifest: Mapping[str, Any], strategy: Mapping[str, Any], settings) -> tuple:
    """Two strategies with the same effective budgets are the same candidate."""
    try:
        ms = parse_modelserving(apply_strategy(manifest, strategy))
    except ValidationError:
        return ("invalid", repr(sorted(strategy.items())))
    eff = resolve(ms, settings)
    roles = (
        tuple((n, b.max_unavailable.count, b.max_surge.count) for n, b in sorted(eff.roles.items()))
        if ms.strategy.type != GROUP_ROLLING
        else ()
    )
    skew = (eff.coordination or {}).get("maxSkewPercent")
    return (ms.strategy.type, eff.group.max_unavailable.count, eff.group.max_surge.count, roles, skew)


def _group_candidates(
    manifest: Mapping[str, Any], ms: ModelServing, settings, free_gpus: int, floor: Floor
) -> list[Candidate]:
    per_group = group_gpus(ms)
    replicas = ms.replicas
    max_mu = max(replicas - floor.groups, 0)
    max_surge = min(free_gpus // per_group, replicas) if per_group > 0 else replicas
    pool: list[tuple[tuple, Candidate]] = []
    for mu in _ladder(max_mu):
        for surge in _ladder(max_surge):
            if mu == 0 and surge == 0:
                continue
            strategy = {"type": GROUP_ROLLING, "maxUnavailable": mu, "maxSurge": surge}
            cand = Candidate(strategy, False, surge * per_group, key=_effective_key(manifest, strategy, settings))
            # Fewest batches first (likely fastest), then the least surge (borrows less), then the
            # most unavailability within the floor.
            pool.append(((-(-replicas // (mu + surge)), surge, -mu), cand))
    pool.sort(key=lambda item: item[0])
    out = [c for _, c in pool]
    if max_mu + 1 <= replicas:
        mu = max_mu + 1
        strategy = {"type": GROUP_ROLLING, "maxUnavailable": mu, "maxSurge": 0}
        out.append(
            Candidate(
                strategy,
                False,
                0,
                reason=(
                    f"maxUnavailable {mu} may take {_plural(mu, 'group')} of {replicas} down: "
                    f"below the floor of {floor.groups}"
                ),
                key=_effective_key(manifest, strategy, settings),
            )
        )
    if max_surge + 1 <= replicas:
        surge = max_surge + 1
        strategy = {"type": GROUP_ROLLING, "maxUnavailable": min(1, max_mu), "maxSurge": surge}
        out.append(
            Candidate(
                strategy,
                False,
                surge * per_group,
                reason=f"surge {surge} needs {surge * per_group} GPUs, {free_gpus} free",
                key=_effective_key(manifest, strategy, settings),
            )
        )
    return out


def _role_candidates(
    manifest: Mapping[str, Any], ms: ModelServing, settings, free_gpus: int, floor: Floor, *, surge: bool
) -> list[Candidate]:
    """The same budget on every role (each role capped at its instances per group), with surge 0
    or 1 when the type has surge, and maxSkew 25/50/100% when the roles are coordinated."""
    per = instance_gpus(ms)
    widest = max((r.replicas for r in ms.roles), default=1)
    skews: list[str | None] = [None]
    if ms.strategy.coordination is not None:
        skews = ["25%", "50%", "100%"]
    pool: list[tuple[tuple, Candidate]] = []
    for k in _ladder(widest):
        for s in (0, 1) if surge else (0,):
            if k == 0 and s == 0:
                continue
            roles = {r.name: {"maxUnavailable": min(k, r.replicas), "maxSurge": min(s, r.replicas)} for r in ms.roles}
            for skew in skews:
                strategy: dict[str, Any] = {"type": ms.strategy.type, "roles": dict(sorted(roles.items()))}
                if skew is not None:
                    strategy["maxSkew"] = skew
                need = sum(min(s, r.replicas) * per[r.name] * ms.replicas for r in ms.roles)
                keeps, words = role_keeps(ms, {n: b["maxUnavailable"] for n, b in roles.items()})
                reason = None
                if keeps < floor.groups:
                    reason = f"maxUnavailable {k} per role: {words}, below the floor of {floor.groups}"
                elif need > free_gpus:
                    reason = f"surge {s} needs {need} GPUs, {free_gpus} free"
                key = _effective_key(manifest, strategy, settings)
                cand = Candidate(strategy, False, need, reason, key=key, keeps=keeps)
                pool.append(((-(k + s), -int((skew or "0%").rstrip("%")), k), cand))
    pool.sort(key=lambda item: item[0])
    return [c for _, c in pool]


# --- applying a candidate --------------------------------------------------------------------------------
def strategy_patch(manifest: Mapping[str, Any], strategy: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch that gives ``manifest`` the budgets of ``strategy``; the canary steps,
    partitions and everything else stay as written. Group level: ``rollingUpdateConfiguration``'s
    ``maxUnavailable`` and ``maxSurge``. Role level: the roles (whole, as a merge patch replaces a
    list) with each role's budgets, and ``coordination.maxSkew``."""
    if "roles" not in strategy:
        return {
            "spec": {
                "rolloutStrategy": {
                    "rollingUpdateConfiguration": {
                        "maxUnavailable": strategy["maxUnavailable"],
                        "maxSurge": strategy["maxSurge"],
                    }
                }
            }
        }
    spec = manifest.get("spec") or {}
    roles = copy.deepcopy(((spec.get("template") or {}).get("roles")) or [])
    for role in roles:
        budgets = strategy["roles"].get(role.get("name"))
        if budgets:
            role["maxUnavailable"] = budgets["maxUnavailable"]
            role["maxSurge"] = budgets["maxSurge"]
    patch: dict[str, Any] = {"spec": {"template": {"roles": roles}}}
    if strategy.get("maxSkew") is not None:
        patch["spec"]["rolloutStrategy"] = {
            "roleRollingUpdateConfiguration": {"coordination": {"maxSkew": strategy["maxSkew"]}}
        }
    return patch


def apply_strategy(manifest: Mapping[str, Any], strategy: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` with the budgets of ``strategy`` (a new object; ``manifest`` is not changed)."""
    from .mergepatch import merge_patch

    return merge_patch(dict(manifest), strategy_patch(manifest, strategy))


# --- judging and ranking --------------------------------------------------------------------------------
def _minutes(seconds: float) -> str:
    """42 -> "42 s", 137 -> "2.3 min", 1500 -> "25 min"."""
    if seconds < 90:
        return f"{round(seconds)} s"
    if seconds < 600:
        return f"{seconds / 60:.1f} min"
    return f"{round(seconds / 60)} min"


def judge(candidate: Candidate, outcome: Outcome | None, floor: Floor) -> dict[str, Any]:
    """One candidate as the advice shows it: strategy, current, durationSeconds, minAvailable and
    when (minAvailableAt), gpusBorrowed, feasible, why."""
    row: dict[str, Any] = {
        "strategy": dict(candidate.strategy),
        "current": candidate.current,
        "durationSeconds": None,
        "minAvailable": None,
        "minAvailableAt": None,
        "gpusBorrowed": candidate.gpus_borrowed,
        "feasible": False,
        "simulated": False,
        "why": "",
    }
    if candidate.reason is not None:
        row["why"] = f"{candidate.reason} (not simulated)"
        return row
    if outcome is None or outcome.error is not None:
        row["why"] = f"not simulated: {outcome.error if outcome else 'no preview'}"
        return row
    row.update(
        simulated=True,
        durationSeconds=outcome.duration,
        minAvailable=outcome.min_available,
        minAvailableAt=outcome.min_at,
    )
    low = outcome.min_available if outcome.min_available is not None else outcome.desired
    if candidate.keeps is not None:
        # Role level: a group counts as available only when none of its instances updates, so the
        # groups' worth every role keeps serving (its budgets) is the capacity judged.
        low = candidate.keeps
        row["minAvailable"] = low
    if low < floor.groups:
        at = f" after {_minutes(outcome.min_at)}" if outcome.min_at is not None else ""
        row["why"] = f"went down to {low} of {outcome.desired} groups{at}: below the floor of {floor.groups}"
        return row
    if outcome.stopped is not None:
        row["durationSeconds"] = None
        row["why"] = outcome.stopped
        return row
    if not outcome.converged:
        row["why"] = "did not finish within the preview's limit (it waited: see the preview's blocked reasons)"
        return row
    row["feasible"] = True
    borrowed = (
        f", borrows {candidate.gpus_borrowed} GPUs for up to {_minutes(outcome.duration or 0)}"
        if candidate.gpus_borrowed
        else ", borrows no GPUs"
    )
    kept = "groups' worth of every role" if candidate.keeps is not None else "groups"
    row["why"] = f"done in {_minutes(outcome.duration or 0)}, never below {low} of {outcome.desired} {kept}{borrowed}"
    return row


def recommended_index(rows: Sequence[Mapping[str, Any]]) -> int | None:
    """The fastest feasible row; ties: fewer GPUs borrowed, then the earlier row (current first)."""
    best: tuple | None = None
    for i, row in enumerate(rows):
        if not row["feasible"] or row["durationSeconds"] is None:
            continue
        key = (row["durationSeconds"], row["gpusBorrowed"], i)
        if best is None or key < best:
            best = key
    return best[2] if best is not None else None


def summary(rows: Sequence[Mapping[str, Any]], recommended: int | None, floor: Floor) -> str:
    """The advice in one sentence: "3.1x faster than the current strategy, never below 3 of 4
    groups, borrows 18 GPUs for up to 2 min"."""
    if recommended is None:
        return (
            f"No candidate finished while keeping the floor of {floor.groups} groups: "
            "keep the current strategy or lower the floor."
        )
    rec = rows[recommended]
    current = next((r for r in rows if r["current"]), None)
    low = f"never below {rec['minAvailable']} groups"
    if rec.get("minAvailable") is not None and rec.get("desired"):
        low = f"never below {rec['minAvailable']} of {rec['desired']} groups"
    borrowed = (
        f"borrows {rec['gpusBorrowed']} GPUs for up to {_minutes(rec['durationSeconds'])}"
        if rec["gpusBorrowed"]
        else "borrows no GPUs"
    )
    took = _minutes(rec["durationSeconds"])
    if rec["current"]:
        return f"The current strategy is already the fastest safe one: {took}, {low}, {borrowed}."
    if current is not None and current["feasible"] and current["durationSeconds"]:
        speed = current["durationSeconds"] / rec["durationSeconds"] if rec["durationSeconds"] else None
        faster = f"{speed:.1f}x faster than the current strategy" if speed else "faster than the current strategy"
        return f"{faster} ({took} instead of {_minutes(current['durationSeconds'])}), {low}, {borrowed}."
    return f"{took}, {low}, {borrowed} (the current strategy does not keep the floor or did not finish)."


def advise(cands: Sequence[Candidate], outcomes: Sequence[Outcome | None], floor: Floor) -> dict[str, Any]:
    """The advice: ``{"floor", "candidates", "recommended", "summary"}`` from the candidates and the
    outcomes of their previews (same order; None for one not simulated)."""
    if len(cands) != len(outcomes):
        raise AdvisorError("one outcome per candidate", field="outcomes")
    rows = []
    for cand, outcome in zip(cands, outcomes, strict=True):
        row = judge(cand, outcome, floor)
        if outcome is not None:
            row["desired"] = outcome.desired
        rows.append(row)
    rec = recommended_index(rows)
    return {
        "floor": floor.to_json(),
        "candidates": rows,
        "recommended": rec,
        "summary": summary(rows, rec, floor),
    }


# --- the search: previews run by the caller ------------------------------------------------------------
def outcome_of(timeline: Any, desired: int) -> Outcome:
    """A preview's timeline (``converged``, ``converged_after``, ``samples`` of ``t`` and
    ``available``) as the search reads it: the fewest groups available and the first moment it was
    seen. ``available`` is the status' availableReplicas, the figure the live status and the state
    history show, so "never below the floor" here is what the operator then sees: a Ready surge
    group counts, as a surge pod does in a Deployment's availableReplicas."""
    low, at = None, None
    for sample in timeline.samples:
        if low is None or sample.available < low:
            low, at = sample.available, sample.t
    return Outcome(timeline.converged, timeline.converged_after, low, at, desired)


def _width(strategy: Mapping[str, Any]) -> int:
    return int(strategy.get("maxUnavailable") or 0) + int(strategy.get("maxSurge") or 0)


def _batch_words(n: int) -> str:
    return f"{n} batch{'es' if n != 1 else ''}"


def _batches(replicas: int, strategy: Mapping[str, Any]) -> int | None:
    """Group-level: the batches a rollout takes at most ``maxUnavailable + maxSurge`` groups at a time."""
    if "roles" in strategy:
        return None
    width = int(strategy.get("maxUnavailable") or 0) + int(strategy.get("maxSurge") or 0)
    return -(-replicas // width) if width > 0 else None


def search(
    manifest_after: Mapping[str, Any],
    run: Callable[[Candidate, float | None], Outcome],
    *,
    settings: ClusterSettings | None,
    free_gpus: int,
    load_groups: int | None,
    load_why: str,
    limit: int,
    seconds: float,
    clock: Callable[[], float],
    step: float,
    floor: int | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the candidates' previews (``run(candidate, rollout_limit)``: the caller's preview of the
    change with the candidate's strategy, stopped after ``rollout_limit`` virtual seconds when not
    None) and rank them (``advise``).

    The current strategy runs first and to completion: it is the comparison, and for role-level
    budgets its preview gives the strategy's floor. Then the others, likeliest fastest first:

    - at group level a candidate that takes no fewer batches (``ceil(replicas / (maxUnavailable +
      maxSurge))``) than the fastest feasible so far is not simulated: a batch waits for the slowest
      group in it, so more groups in fewer batches is what makes a rollout faster;
    - a simulated one is stopped ``step`` seconds after the fastest feasible so far finished;
    - past ``seconds`` of ``clock`` the rest are listed as not simulated.

    Deterministic for the same previews, except for the wall-time limit."""
    parsed = _parse(manifest_after, "manifest")
    started = clock()
    first_floor = floor_of(parsed, settings, load_groups=load_groups, load_why=load_why, override=floor)
    cands = candidates(manifest_after, settings=settings, free_gpus=free_gpus, floor=first_floor, limit=limit)
    total = sum(1 for c in cands if c.simulate)
    outcomes: list[Outcome | None] = [None] * len(cands)
    outcomes[0] = run(cands[0], None)
    if progress is not None:
        progress(1, total, cands[0].strategy)
    the_floor = first_floor
    best = outcomes[0].duration if judge(cands[0], outcomes[0], the_floor)["feasible"] else None
    best_batches = _batches(parsed.replicas, cands[0].strategy) if best is not None else None
    done = 1
    for i, cand in enumerate(cands[1:], start=1):
        if not cand.simulate:
            continue
        batches = _batches(parsed.replicas, cand.strategy)
        if best_batches is not None and batches is not None and batches >= best_batches:
            outcomes[i] = Outcome(
                False,
                None,
                None,
                None,
                parsed.replicas,
                error=(
                    f"{_batch_words(batches)} of up to {_plural(_width(cand.strategy), 'group')}: no fewer than "
                    f"the fastest safe candidate so far ({_batch_words(best_batches)}, {best:g} s)"
                ),
            )
            continue
        if clock() - started > seconds:
            outcomes[i] = Outcome(
                False, None, None, None, parsed.replicas, error=f"the advice's time limit of {seconds:g} s ran out"
            )
            continue
        cut = best + step if best is not None else None
        out = run(cand, cut)
        if cut is not None and not out.converged and out.error is None:
            slower = f"stopped after {cut:g} simulated s: slower than the fastest so far ({best:g} s)"
            out = Outcome(False, None, out.min_available, out.min_at, out.desired, stopped=slower)
        outcomes[i] = out
        if judge(cand, out, the_floor)["feasible"] and (best is None or (out.duration or 0) < best):
            best, best_batches = out.duration, batches
        done += 1
        if progress is not None:
            progress(done, total, cand.strategy)
    advice = advise(cands, outcomes, the_floor)
    advice["simulated"] = done
    advice["elapsedSeconds"] = round(clock() - started, 2)
    return advice
