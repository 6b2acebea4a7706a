"""Canary steps and automatic analysis, run on every new update revision (``spec.rolloutStrategy.canary``).

The steps set the partition the group rolling update works with: ``setPartition: 75%`` of 4 groups
is 3, so group 3 gets the new revision; a ``pause`` waits its ``durationSeconds`` or for promote. A
``setPartition`` step is done when every group at or above its partition runs the update revision
and is available; then the next step starts. After the last step the partition is 0.

Worked example, 4 groups, steps [setPartition 75%, pause 300 s, setPartition 0]: at t=100 the new
revision appears -> partition 3; group 3 is replaced and Ready at t=160 -> the pause starts; at
t=460 it ends -> partition 0, groups 2, 1, 0 follow within the budget.

Promote (annotation ``serving.rolloutui.io/canary-promote``) skips the step it names, or every
remaining step with ``full``. Analysis judges a window every ``intervalSeconds`` from the canary's
start, comparing the canary revision with the stable one over the same window (the figures come
from the metrics port, fetched by the reconcile pass: ``windows_to_fetch``), a settle time after
the window ended. The rules of evidence (``core.evidence``):

- after ``failureLimit`` failed windows in total it pauses the ModelServing or rolls it back to
  the stable revision (condition ``AnalysisFailed``), and records why;
- after ``inconclusiveLimit`` Inconclusive (or Error) windows in a row it pauses the ModelServing
  (condition ``AnalysisInconclusive``, naming the shortfall);
- with an analysis, a timed pause is a minimum: it ends once its time is up, ``minPassWindows``
  windows that ended after it began passed, and the latest window did not fail. Worked example,
  pause 120 s from t=160, windows of 30 s judged 4 s after their end: at t=280 the time is up, but
  the windows [190, 220), [220, 250) were Inconclusive (too few requests) -> the pause holds; the
  window [250, 280), judged at t=284, passes -> the next step starts at t=284.

A pause the analysis set is the operator's to lift: resume (or promote) clears it and restarts the
count of Inconclusive windows (the audit of that control says it overrode the analysis).
Weights (``setWeight`` steps, ``canary.weight_at``): ``status.canary.weight`` is the percent of new
requests the router sends to the update revision's instances: the last ``setWeight`` reached, 0
once the canary is rolled back, aborted or failed, 100 once every step is done. A ``setWeight``
step is done as soon as it is reached (the router follows the status); ``weightSince`` is when the
weight took its value (the page's observed split counts the windows from then). While the weight is above 0
and no group of the update revision is available, ``weightMessage`` says that the weight sends
nothing there (the router keeps those requests on stable). A canary without any ``setWeight``
step has no ``weight`` key: requests follow load.

Everything it remembers is in ``status.canary``: ``failures`` (in total), ``inconclusive`` (in a
row), ``passed`` (since the step began), ``lastVerdict``, ``settleSeconds`` (the settle of the
next window) and ``analysisPause`` (``{reason, message}`` while a pause it set stands).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis import due_windows, judge_window
from ..canary import Analysis, Canary, weight_at
from ..evidence import count_window, pause_hold, settle_seconds, shortfall
from ..intorpercent import IntOrPercent
from ..revisions import rollback_fields
from .context import PassContext

RUNNING, PAUSED, SUCCEEDED, FAILED = "Running", "Paused", "Succeeded", "Failed"
# A canary whose revision stopped rolling out while it ran or waited (an operator rolled back).
ROLLED_BACK = "RolledBack"
# A canary an operator aborted (the abort control): back to stable, the rollout left paused.
ABORTED = "Aborted"
ACTIVE = (RUNNING, PAUSED)
KEEP_WINDOWS = 20  # windows kept in status (the trace and the metrics store keep all)


@dataclass(slots=True)
class CanaryRun:
    """What this pass decided about the canary."""

    status: dict[str, Any] | None
    partition: IntOrPercent | None  # the partition the steps set now (None: no canary running)
    windows: list[dict[str, Any]] = field(default_factory=list)  # judged in this pass
    spec_patch: dict[str, Any] | None = None  # pause or rollback decided by the analysis
    audit: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None  # the AnalysisFailed message, while the failure stands
    inconclusive: str | None = None  # the AnalysisInconclusive message, while the pause it set stands
    wake_in: float | None = None  # a timed pause or the next window ends then


def windows_to_fetch(ms_canary: Canary | None, status: dict[str, Any], now: float) -> list[tuple[float, float]]:
    """The analysis windows whose figures the reconcile pass should fetch before planning."""
    prev = status.get("canary") or {}
    if ms_canary is None or ms_canary.analysis is None or prev.get("phase") not in (RUNNING, PAUSED):
        return []
    return _due(ms_canary.analysis, prev, now)


def _settle(analysis: Analysis, state: dict[str, Any]) -> float:
    """The settle of the next window: set in the spec, else what the last judged window left."""
    if analysis.settle_seconds is not None:
        return analysis.settle_seconds
    remembered = state.get("settleSeconds")
    return settle_seconds(None, analysis.interval_seconds, None) if remembered is None else float(remembered)


def _due(analysis: Analysis, state: dict[str, Any], now: float) -> list[tuple[float, float]]:
    return due_windows(
        state["startedAt"], state.get("lastWindowEnd"), analysis.interval_seconds, now, _settle(analysis, state)
    )


def _partition_at(canary: Canary, index: int, replicas: int) -> IntOrPercent:
    """The partition step ``index`` runs with: the last setPartition at or before it; before any,
    all groups stay (partition = replicas); after the last step, 0."""
    if index >= len(canary.steps):
        return IntOrPercent(0, False)
    for step in reversed(canary.steps[: index + 1]):
        if step.set_partition is not None:
            return step.set_partition
    return IntOrPercent(replicas, False)


def _groups_done(ctx: PassContext, partition: int) -> bool:
    """Every group at or above ``partition`` runs the update revision and is available."""
    groups = ctx.observed.groups
    for o in range(partition, ctx.ms.replicas):
        group = groups.get(o)
        if group is None or group.being_removed or group.revision not in ctx.equivalent:
            return False
        if not ctx.group_is_available(group):
            return False
    return True


def run_canary(ctx: PassContext, figures: dict[tuple[float, float], dict[str, Any]]) -> CanaryRun:
    canary = ctx.ms.canary
    prev = ctx.prev_status.get("canary")
    if canary is None:
        return CanaryRun(None, None)
    rolling = ctx.update_hash != ctx.current_hash and ctx.current_hash not in ctx.equivalent
    continuing = bool(prev) and prev.get("revision") == ctx.update_hash
    if not continuing and not rolling:
        return _outcome_on_show(prev, len(canary.steps), ctx.ms.abort)  # nothing to roll: the outcome stays
    if not continuing and prev and ctx.update_hash == prev.get("stable"):
        # Back to the revision the last canary was compared with (a rollback): it is known good,
        # so it rolls out at once, without steps (Argo Rollouts' fast-track rollback).
        return _outcome_on_show(prev, len(canary.steps), ctx.ms.abort)
    if continuing and prev.get("phase") == SUCCEEDED:
        return CanaryRun(prev, None)
    now = ctx.now
    if not continuing:
        prev = {
            "revision": ctx.update_hash,
            "stable": ctx.current_hash,
            "startedAt": now,
            "stepIndex": 0,
            "stepStartedAt": now,
            "phase": RUNNING,
            "failures": 0,
            "windows": [],
        }
    state = dict(prev)
    run = CanaryRun(state, None)
    if state["phase"] == FAILED:
        if state.get("onFailure") == "Pause" and not ctx.ms.paused:
            # An operator resumed: the canary goes on, and its failures start from 0 again.
            state.update(phase=RUNNING, failures=0, lastVerdict=None)
        else:
            run.failure = state.get("message")
            run.partition = _partition_at(canary, state["stepIndex"], ctx.ms.replicas)
            _set_weight(ctx, canary, state)
            return run
    if state.get("analysisPause") and not ctx.ms.paused:
        # The operator lifted the pause the analysis set (resume or promote): their decision
        # overrides the analysis, and the count of Inconclusive windows starts again.
        state.pop("analysisPause")
        state["inconclusive"] = 0
    _apply_promote(ctx, canary, state)
    if canary.analysis is not None and state["phase"] in (RUNNING, PAUSED):
        # Judged before the steps move: a window that failed in this pass holds the step it ends.
        _analyse(ctx, canary, state, figures, run)
    if state["phase"] != FAILED:
        _advance(ctx, canary, state, run)
    if state.get("analysisPause"):
        run.inconclusive = state["analysisPause"].get("message")
    if state["phase"] != SUCCEEDED:
        # Once every step is done the partition is the spec's again: shown as the canary's
        # ("0 · canary") it outlived the canary until the next pass.
        run.partition = _partition_at(canary, state["stepIndex"], ctx.ms.replicas)
    _set_weight(ctx, canary, state)
    return run


def _set_weight(ctx: PassContext, canary: Canary, state: dict[str, Any]) -> None:
    """``weight`` (and ``weightMessage``) of a canary with ``setWeight`` steps; nothing otherwise."""
    weight = weight_at(canary, state["stepIndex"], state["phase"])
    if weight is None:
        return
    if state.get("weight") != weight:
        state["weightSince"] = ctx.now  # the observed split counts the windows from here
    state["weight"] = weight
    state.pop("weightMessage", None)
    if 0 < weight and state["phase"] in ACTIVE:
        serving = any(
            not g.being_removed and g.revision in ctx.equivalent and ctx.group_is_available(g)
            for g in ctx.observed.groups.values()
        )
        if not serving:
            state["weightMessage"] = (
                f"weight {weight}% but no instance of the update revision is Ready: "
                "the weight sends nothing there yet (new requests stay on stable)"
            )


def _outcome_on_show(prev: dict[str, Any] | None, steps: int, abort: dict[str, Any]) -> CanaryRun:
    """The last canary's status, kept as it ended. A canary the analysis failed keeps its
    AnalysisFailed condition after the rollback it caused (and after that rollback is done), until
    a new canary starts: the operator sees why the ModelServing is back on the stable revision. A
    canary still running or waiting at a step when its revision stopped rolling out (an operator
    rolled back) ended there: RolledBack, at the step it had reached, instead of waiting for ever;
    Aborted when the operator's abort (``abort``, the annotation) named its revision."""
    if prev and prev.get("phase") in ACTIVE:
        step = min(int(prev.get("stepIndex") or 0) + 1, steps)
        if abort.get("revision") == prev.get("revision"):
            message = f"aborted at step {step} of {steps}: every group is back on the stable revision"
            prev = {**prev, "phase": ABORTED, "message": message}
        else:
            message = f"rolled back at step {step} of {steps}: the canary's revision no longer rolls out"
            prev = {**prev, "phase": ROLLED_BACK, "message": message}
    if prev and prev.get("weight") not in (None, 0) and prev.get("phase") in (ROLLED_BACK, ABORTED, FAILED):
        prev = {**prev, "weight": 0}
        prev.pop("weightMessage", None)
    run = CanaryRun(prev, None)
    if prev and prev.get("phase") == FAILED:
        run.failure = prev.get("message")
    return run


def _apply_promote(ctx: PassContext, canary: Canary, state: dict[str, Any]) -> None:
    request = ctx.ms.canary_promote
    if request.get("revision") != state["revision"]:
        return
    if request.get("full"):
        if state["stepIndex"] < len(canary.steps):
            _next_step(state, len(canary.steps), ctx.now)
    elif request.get("step") == state["stepIndex"] and state["stepIndex"] < len(canary.steps):
        _next_step(state, state["stepIndex"] + 1, ctx.now)


def _next_step(state: dict[str, Any], index: int, now: float) -> None:
    """Step ``index`` begins now: only windows that end after this count as its evidence."""
    state.update(stepIndex=index, stepStartedAt=now, passed=0)


def _advance(ctx: PassContext, canary: Canary, state: dict[str, Any], run: CanaryRun) -> None:
    """Move through every step that is done now (a paused ModelServing moves through none, nor
    one the analysis pauses in this pass)."""
    steps = canary.steps
    paused = ctx.ms.paused or run.spec_patch is not None
    analysis = canary.analysis
    while state["stepIndex"] < len(steps) and not paused:
        step = steps[state["stepIndex"]]
        if step.set_partition is not None:
            if not _groups_done(ctx, step.set_partition.resolve(ctx.ms.replicas, round_up=True)):
                state["phase"] = RUNNING
                return
        elif step.set_weight is not None:
            pass  # done once reached: the router follows status.canary.weight from this pass on
        elif step.pause_seconds is None:
            state["phase"] = PAUSED  # waits for promote
            return
        else:
            ledger = state if analysis is not None else None
            min_pass = analysis.min_pass_windows if analysis is not None else 0
            hold = pause_hold(ctx.now, state["stepStartedAt"], step.pause_seconds, ledger, min_pass)
            if hold is not None:
                state["phase"] = PAUSED
                left = state["stepStartedAt"] + step.pause_seconds - ctx.now
                if left > 0:
                    run.wake_in = left if run.wake_in is None else min(run.wake_in, left)
                # Otherwise it waits on evidence: the next window's judgement wakes the pass.
                return
        _next_step(state, state["stepIndex"] + 1, ctx.now)
    if state["stepIndex"] >= len(steps):
        state["phase"] = SUCCEEDED if _groups_done(ctx, 0) else RUNNING


def _analyse(
    ctx: PassContext,
    canary: Canary,
    state: dict[str, Any],
    figures: dict[tuple[float, float], dict[str, Any]],
    run: CanaryRun,
) -> None:
    analysis = canary.analysis
    assert analysis is not None
    windows = list(state.get("windows") or [])
    keep = max(KEEP_WINDOWS, analysis.inconclusive_limit)
    for start, end in _due(analysis, state, ctx.now):
        got = figures.get((start, end))
        if got is None:
            break  # not fetched (no metrics source): judged in a later pass
        result = judge_window(
            analysis,
            start,
            end,
            state["stable"],
            state["revision"],
            got.get("stable") or {},
            got.get("canary") or {},
            error=got.get("error"),
        )
        record = result.to_json()
        windows.append(record)
        run.windows.append(record)
        state["windows"] = windows[-keep:]  # the failing window is in the audit's details
        state["lastWindowEnd"] = end
        state.update(count_window(state, result.verdict, end, state["stepStartedAt"]))
        if analysis.settle_seconds is None:
            duration = (got.get("stable") or {}).get("durationP99Ms")
            if duration is not None:
                state["settleSeconds"] = settle_seconds(None, analysis.interval_seconds, duration)
        if state["failures"] >= analysis.failure_limit:
            _fail(ctx, canary, state, result.reasons, run)
            break
        if state["inconclusive"] >= analysis.inconclusive_limit and not state.get("analysisPause"):
            _pause_inconclusive(ctx, analysis, state, windows[-state["inconclusive"] :], run)
    state["windows"] = windows[-keep:]
    if state["phase"] in (RUNNING, PAUSED):
        # The next window is judged once it has ended and settled.
        next_due = (
            (state.get("lastWindowEnd") or state["startedAt"]) + analysis.interval_seconds + _settle(analysis, state)
        )
        wait = next_due - ctx.now
        run.wake_in = wait if run.wake_in is None else min(run.wake_in, wait)


def _pause_inconclusive(
    ctx: PassContext, analysis: Analysis, state: dict[str, Any], windows: list[dict[str, Any]], run: CanaryRun
) -> None:
    """``inconclusiveLimit`` windows in a row without a verdict: no evidence, so no progress. The
    rollout is paused (``spec.paused``) with the shortfall in words, for an operator to decide."""
    message = shortfall(windows, analysis.min_requests)
    state["analysisPause"] = {"reason": "AnalysisInconclusive", "message": message}
    state["phase"] = PAUSED
    run.inconclusive = message
    if not ctx.ms.paused and run.spec_patch is None:
        run.spec_patch = {"spec": {"paused": True}}
    run.audit.append(
        {
            "source": "analysis",
            "action": "pause",
            "reason": message,
            "fromRevision": state["revision"],
            "toRevision": state["revision"],
            "details": {"window": windows[-1] if windows else None, "condition": "AnalysisInconclusive"},
        }
    )


def _fail(ctx: PassContext, canary: Canary, state: dict[str, Any], reasons: tuple[str, ...], run: CanaryRun) -> None:
    analysis = canary.analysis
    assert analysis is not None
    message = "; ".join(reasons) or "analysis failed"
    count = analysis.failure_limit
    message = f"{message} ({count} failed window{'s' if count > 1 else ''} since the canary started)"
    state.update(phase=FAILED, message=message, onFailure=analysis.on_failure)
    run.failure = message
    audit = {
        "source": "analysis",
        "reason": message,
        "fromRevision": state["revision"],
        "details": {"window": state["windows"][-1] if state.get("windows") else None},
    }
    if analysis.on_failure == "Pause":
        run.spec_patch = {"spec": {"paused": True}}
        run.audit.append({**audit, "action": "pause", "toRevision": state["revision"]})
        return
    data = ctx.history.data_of(state["stable"])
    if data is None:
        # The stable revision cannot be read: pausing is the safe fallback, and it is said.
        run.spec_patch = {"spec": {"paused": True}}
        run.audit.append(
            {**audit, "action": "pause", "toRevision": state["revision"], "reason": message + "; rollback impossible"}
        )
        return
    run.spec_patch = {"spec": rollback_fields(ctx.ms.manifest, data)}
    run.audit.append({**audit, "action": "rollback", "toRevision": state["stable"]})
