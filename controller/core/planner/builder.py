"""The plan under construction: what one pass decides, collected in order.

The decision modules append actions and blocked reasons here (the trace and the status keep that
order), ask for a timed requeue, and record what they remove, so that later steps of the same pass
know it: a draining pod that nobody removes gets undrained at the end, and status records a group
whose replacement started on the update revision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..plan import KIND_REVISION, Action, Blocked
from .context import InstanceKey, PassContext

if TYPE_CHECKING:
    from .canary import CanaryRun

# A requeue is never sooner than this: a zero or negative wait would spin.
MIN_REQUEUE_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Removal:
    reason: str
    revision: str  # the revision the removed pods run (for the trace)


class PlanBuilder:
    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx
        self.actions: list[Action] = []
        self.blocked: list[Blocked] = []
        self.requeue_after: float | None = None
        # What makes the plan a function of the time (``holds_for``): the waits for a deadline
        # (``requeue_at_deadline``) and the soonest a decision changes without asking for a pass.
        self.deadline_waits: list[float] = []
        self.changes_by_itself_in: float | None = None
        # Pods that this pass deletes or keeps draining; any other draining pod gets undrained.
        self.removing_pods: set[str] = set()
        self.group_removals: dict[int, Removal] = {}
        self.instance_removals: dict[InstanceKey, Removal] = {}
        self.unreadable_reported: set[tuple[str, int | None]] = set()  # (revision, group)
        self.canary: CanaryRun | None = None  # the canary steps' and analysis' decisions
        # role -> role template hash -> revisions with that template (``labels``), once per pass.
        self.template_revisions: dict[str, dict[str, list[str]]] | None = None
        # The Ready instances per scope that keep request paths consistent (``paths.PathKeeper``),
        # made on first use when the ModelServing declares a path (typed loosely: ``paths``
        # imports this module).
        self.path_keeper: Any = None

    def act(self, action: Action) -> None:
        self.actions.append(action)

    def block(self, group: int | None, role: str | None, reason: str, kind: str) -> None:
        self.blocked.append(Blocked(group, role, reason, kind))

    def requeue(self, seconds: float) -> None:
        """Ask for a pass in ``seconds`` (the earliest request of the pass wins)."""
        seconds = max(seconds, MIN_REQUEUE_SECONDS)
        if self.requeue_after is None or seconds < self.requeue_after:
            self.requeue_after = seconds

    def requeue_at_deadline(self, seconds_left: float) -> None:
        """Ask for a pass when a deadline comes (a drain timeout, a canary pause's end, a
        verification retry): unlike a poll's, this wait shrinks as time passes, and a decision of
        the pass changes then."""
        self.requeue(seconds_left)
        self.deadline_waits.append(seconds_left)

    def changes_in(self, seconds: float) -> None:
        """A decision of this pass changes by itself in ``seconds``, with nothing asking for a
        pass then (the periodic resync covers it): the progress deadline's wake-up starts."""
        if self.changes_by_itself_in is None or seconds < self.changes_by_itself_in:
            self.changes_by_itself_in = seconds

    def holds_for(self) -> float | None:
        """How long from now the same inputs (spec, status, revisions, pods, the in-flight counts
        of the pods leaving routing) give this very plan, ``requeue_after`` included; None: for
        ever. A deadline wait holds while a poll still comes first: worked example, a drain with
        3.2 s left to its timeout and the 0.5 s drain poll: requeue 0.5 s, and the plan holds for
        3.2 - 0.5 = 2.7 s (a pass at +2.8 s would ask for 0.4 s, the time left). A deadline that
        is itself the soonest wait (or a clamped one) gives 0 or less: the plan holds only now."""
        held = self.changes_by_itself_in
        for wait in self.deadline_waits:
            margin = wait - (self.requeue_after or 0.0)
            held = margin if held is None else min(held, margin)
        return held

    def report_unreadable(self, rev: str, group: int | None, role: str | None, what: str) -> None:
        """A revision something needs cannot be read: say what waits and how to repair it."""
        ctx = self.ctx
        record = ctx.history.get(rev)
        why = record.error if record and record.error else "not found in the revision history"
        fix = (
            f"; deleting ControllerRevision {record.name} lets the controller store it again from the spec"
            if record and rev in ctx.equivalent
            else ""
        )
        self.block(
            group,
            role,
            f"revision {rev} is unreadable ({why}): {what} is paused until it is repaired or the reference "
            f"goes away{fix}",
            KIND_REVISION,
        )
        self.unreadable_reported.add((rev, group))

    def report_unreadable_once(self, rev: str, group: int | None, role: str | None, what: str) -> None:
        """The same, unless this revision was already reported for this group in this pass."""
        if (rev, group) not in self.unreadable_reported:
            self.report_unreadable(rev, group, role, what)
