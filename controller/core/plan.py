"""The planner's output types: actions, blocked reasons and the plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .ports import Obj
from .revisions import RevisionAction

# Action verbs (the trace's vocabulary).
CREATE = "create"
DELETE = "delete"
DRAIN = "drain"
UNDRAIN = "undrain"
PATCH_IMAGE = "patchImage"
SET_GATE = "setGate"
RECREATE = "recreate"
PATCH_LABELS = "patchLabels"  # set or clear the revision compatibility labels of pods (spec.traffic.path)
VERIFY = "verify"  # send spec.verification to an instance's entry pod and record the answer on it

# Why an action is taken.
BECAUSE_UPDATE = "rolling update"
BECAUSE_SURGE = "surge"
BECAUSE_SURGE_DONE = "surge no longer needed"
BECAUSE_SCALE = "scale"
BECAUSE_RECOVERY = "recovery"
BECAUSE_REMOVED_ROLE = "role removed from spec"
BECAUSE_VERIFICATION = "verification"

# Kinds of blocked reasons; the phase is Blocked when one of STUCK_KINDS is present.
KIND_BUDGET = "budget"
KIND_PARTITION = "partition"
KIND_PAUSED = "paused"
KIND_SKEW = "skew"
KIND_DEPENDENCY = "dependency"
KIND_UNSCHEDULABLE = "unschedulable"
KIND_REVISION = "revision"
KIND_REFUSED = "refused"
KIND_FAILING = "failing"
KIND_DEADLOCK = "deadlock"
KIND_DRAIN = "drain"
STUCK_KINDS = frozenset({KIND_UNSCHEDULABLE, KIND_REVISION, KIND_REFUSED, KIND_FAILING, KIND_DEADLOCK})


@dataclass(slots=True)
class Action:
    verb: str
    group: int
    role: str | None
    ordinal: int | None
    revision: str
    reason: str
    pods: list[Obj] = field(default_factory=list)  # create: full manifests
    pod_names: list[str] = field(default_factory=list)  # every other verb: the pods it touches
    pod_uids: list[str] = field(default_factory=list)  # delete: UID preconditions
    patches: dict[str, Obj] = field(default_factory=dict)  # patchImage / drain / undrain: merge patch per pod
    condition: Obj | None = None  # setGate: the condition to set on each pod
    # delete: requests the router still reported in flight on a pod deleted at its drain timeout
    # (pod name -> count); they are interrupted. Not part of the trace.
    interrupted: dict[str, int] = field(default_factory=dict)

    def to_trace(self) -> dict[str, Any]:
        return {
            "verb": self.verb,
            "group": self.group,
            "role": self.role,
            "ordinal": self.ordinal,
            "revision": self.revision,
        }

    def describe(self) -> str:
        where = f"group {self.group}" if self.role is None else f"group {self.group} {self.role}-{self.ordinal}"
        return f"{self.verb} {where} ({self.reason}, revision {self.revision})"


class Blocked(NamedTuple):
    """Why a group (or one of its roles) waits. A tuple: a pass of a 1,000-group rollout makes one
    per waiting group (900 alike), and a frozen dataclass sets each field through
    ``object.__setattr__``."""

    group: int | None
    role: str | None
    reason: str
    kind: str

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "role": self.role, "reason": self.reason, "kind": self.kind}


@dataclass(slots=True)
class Plan:
    actions: list[Action]
    revision_actions: list[RevisionAction]
    status: dict[str, Any]
    blocked: list[Blocked]
    requeue_after: float | None
    update_revision: str
    current_revision: str
    # A change of the ModelServing's own spec the pass decided (the canary analysis pausing or
    # rolling back), with the audit entries that say why, and the analysis windows judged.
    spec_patch: dict[str, Any] | None = None
    audit: list[dict[str, Any]] = field(default_factory=list)
    analysis: list[dict[str, Any]] = field(default_factory=list)
    # How long from now the same inputs give this same plan (``PlanBuilder.holds_for``; None: for
    # ever): a caller whose inputs did not change may replay it instead of planning again.
    holds_for: float | None = None


# A replayed plan stops this much before the time it holds to: the times it is measured against
# are sums of floats (a drain's ``timeout - (now - since)``), exact to ~1e-13 s at the virtual
# times of a run, so a pass that close to the edge is planned again rather than replayed.
HOLD_MARGIN_SECONDS = 1e-6


def still_holds(holds_for: float | None, elapsed: float) -> bool:
    """Whether a plan made ``elapsed`` seconds ago, that ``holds_for`` seconds from then
    (``Plan.holds_for``), is still the plan for the same inputs. Examples: holds for 2.7 s ->
    after 0.5 s yes, after 2.7 s no; holds for 0 (its deadline is the next wake-up) -> never
    after it was made; None (no time-based decision) -> always."""
    return holds_for is None or elapsed < holds_for - HOLD_MARGIN_SECONDS
