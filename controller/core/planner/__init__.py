"""The planner: ``plan(ms, history, observed, now) -> Plan``. A pure function.

Given the spec, the revision history, what the cluster holds (pods, the previous status) and the
time, it returns the actions to take now, the status to write, and for every group and role that
cannot progress the reason in words. It remembers nothing: everything it needs is in its arguments,
so a restarted controller plans exactly as the old one would have.

Where each rule lives:

- ``context``: what the pass knows before deciding anything (revisions, availability), frozen;
- ``budgets``: the arithmetic of every budget (floor, group step, surge, skew quota), pure;
- ``group_rolling`` / ``role_rolling``: the two update units; ``coordination`` and ``inplace``
  refine role rolling; ``recovery``: lost pods; ``drain``: every delete; ``create``: every create;
- ``labels``: the revision compatibility labels of pods when a request path is declared;
- ``paths``: keeping a consistent request path possible during a coordinated update;
- ``builder``: collects actions, blocked reasons and the requeue time, in order;
- ``status``: the status written from the context and what the pass decided.
"""

from __future__ import annotations

from typing import Any

from ..observe import Observed
from ..passcache import PassCache
from ..plan import Plan
from ..revisions import History, gc_actions
from ..spec import GROUP_ROLLING, IN_PLACE, ModelServing
from ..strategy import ClusterSettings
from ..workqueue import RESYNC_SECONDS
from . import inplace
from .builder import PlanBuilder
from .canary import run_canary
from .context import PassContext, as_paused, build_context, returning_after_abort, with_partition
from .drain import undrain_cancelled
from .group_rolling import roll_groups
from .labels import sync_revision_labels
from .role_rolling import roll_roles
from .status import build_status
from .verification import request_verifications

__all__ = ["plan"]


def plan(
    ms: ModelServing,
    history: History,
    observed: Observed,
    now: float,
    *,
    status: dict[str, Any] | None = None,
    settings: ClusterSettings | None = None,
    analysis_figures: dict[tuple[float, float], dict[str, Any]] | None = None,
    cache: PassCache | None = None,
) -> Plan:
    """Plan one reconcile pass. ``status`` is the ModelServing's status as last written;
    ``analysis_figures`` the metrics of the canary analysis windows due (``canary.windows_to_fetch``):
    ``{(start, end): {"stable": figures, "canary": figures}}``. ``cache``: what the caller keeps
    from pass to pass (``passcache``); None computes everything. Either way, the same plan."""
    ctx = returning_after_abort(build_context(ms, history, observed, now, status or {}, settings, cache))
    canary = run_canary(ctx, analysis_figures or {})
    if canary.partition is not None:
        ctx = with_partition(ctx, canary.partition, "canary")
    if canary.spec_patch is not None:
        ctx = as_paused(ctx)  # the analysis stops the rollout in this very pass
    out = PlanBuilder(ctx)
    out.canary = canary
    if canary.wake_in is not None:
        out.requeue_at_deadline(canary.wake_in)
    report_unreadable_references(out)
    if ms.strategy.type == GROUP_ROLLING:
        roll_groups(out)
    else:
        roll_roles(out)
        if ms.strategy.type == IN_PLACE:
            inplace.init_gates(out)
    request_verifications(out)
    # Last: only now is every pod this pass removes known.
    undrain_cancelled(out)
    sync_revision_labels(out)  # after every removal: the pods leaving keep their labels
    new_status = build_status(ctx, out)
    _wake_at_progress_deadline(out, new_status)
    keep = set(new_status["referencedRevisions"]) | {ctx.update_hash}
    revision_actions = [*ctx.update.actions, *gc_actions(history, referenced=keep, limit=ms.revision_history_limit)]
    return Plan(
        out.actions,
        revision_actions,
        new_status,
        out.blocked,
        out.requeue_after,
        ctx.update_hash,
        new_status["currentRevision"],
        spec_patch=canary.spec_patch,
        audit=canary.audit,
        analysis=canary.windows,
        holds_for=out.holds_for(),
    )


def _wake_at_progress_deadline(out: PlanBuilder, status: dict[str, Any]) -> None:
    """A stalled rollout changes nothing in the cluster, so nothing would wake the controller when
    its progress deadline passes: ask for a pass then. Only once it is closer than the periodic
    resync, which covers longer waits (a rollout that moves every few seconds never asks)."""
    ctx = out.ctx
    if ctx.ms.paused or status["converged"]:
        return
    left = status["progress"]["lastProgressTime"] + ctx.ms.progress_deadline_seconds - ctx.now
    if 0 < left <= RESYNC_SECONDS:
        out.requeue_at_deadline(left)  # and the deadline is exceeded then (``status._progress``)
    elif left > RESYNC_SECONDS:
        out.changes_in(left - RESYNC_SECONDS)  # from then on the pass asks for one at the deadline


def report_unreadable_references(out: PlanBuilder) -> None:
    """Every referenced revision whose stored data cannot be read is reported once, by name, with
    what waits for it: the rollout itself when it is the update revision."""
    ctx: PassContext = out.ctx
    referenced = (
        {ctx.current_hash} | set(ctx.recorded.group_revision.values()) | set(ctx.recorded.instance_revision.values())
    )
    referenced.update(*[group.revision_counts for group in ctx.observed.groups.values()])
    for rev in sorted(referenced):
        record = ctx.history.get(rev)
        if record is None or record.readable:
            continue
        what = (
            "the rollout and every create that needs it"
            if rev in ctx.equivalent
            else "every create and recovery that needs it"
        )
        out.report_unreadable(rev, None, None, what)
