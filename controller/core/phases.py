"""The phases of a ModelServing, in the one order every consumer uses (status, API, pages).

The controller writes one of them to ``status.phase``; the REST API's filter, the list page's
filter and its colours read this tuple, so a new phase is added here and nowhere else.
"""

from __future__ import annotations

PENDING = "Pending"  # not reconciled yet: no status written
HEALTHY = "Healthy"
PROGRESSING = "Progressing"
PAUSED = "Paused"
BLOCKED = "Blocked"
DEGRADED = "Degraded"
# An InferenceService RolloutUI lists but does not roll out (ModelMesh mode: ModelMesh Serving's
# controller serves it); never a ModelServing's phase.
UNMANAGED = "Unmanaged"

# Display order: not yet known, then from "nothing to do" to "needs an operator".
PHASES: tuple[str, ...] = (PENDING, HEALTHY, PROGRESSING, PAUSED, BLOCKED, DEGRADED, UNMANAGED)
