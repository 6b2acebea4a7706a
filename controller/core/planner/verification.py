"""Verification: the request ``spec.verification`` sends to each instance once it is routed.

The planner only decides whom to verify (a ``verify`` action per entry pod); the reconcile pass sends
the request through the verifier port and records the answer on the entry pod (annotation
``serving.rolloutui.io/verification``: revision, passed, time, status, response), where the next
pass reads it. An instance whose verification failed counts as unavailable (``context``) and is
reported; it is verified again every ``RETRY_SECONDS``, so a transient failure heals by itself.
"""

from __future__ import annotations

from ..gates import LOADED, ROUTED, instance_gates, verification_passed
from ..plan import BECAUSE_VERIFICATION, KIND_FAILING, VERIFY, Action
from .builder import PlanBuilder

RETRY_SECONDS = 30.0
ROUTED_POLL_SECONDS = 2.0  # how soon to look again at a Ready entry the router does not list yet


def request_verifications(out: PlanBuilder) -> None:
    ctx = out.ctx
    if ctx.ms.verification is None:
        return
    for group in ctx.observed.groups.values():
        for (role, ordinal), inst in sorted(group.instances.items()):
            entry = inst.entry
            if entry is None or inst.being_removed or (group.ordinal, role, ordinal) in out.instance_removals:
                continue
            gates = instance_gates(
                inst,
                ctx.expected_pods(inst.revision, role),
                verification_required=True,
                routed=ctx.observed.routed,
                cache=ctx.cache,
            )
            if ROUTED not in gates.reached:
                if LOADED in gates.reached and entry.draining_since is None and not entry.deleting:
                    # Ready, but the router does not list it yet (an EndpointSlice lags the pod):
                    # nothing else wakes the controller when the slice changes, so look again soon.
                    out.requeue(ROUTED_POLL_SECONDS)
                continue
            passed = verification_passed(entry, inst.revision)
            if passed:
                continue
            if passed is False:
                result = entry.verification or {}
                detail = (
                    result.get("error")
                    or f"status {result.get('status')}, expected {ctx.ms.verification.expect_status}"
                )
                out.block(
                    group.ordinal,
                    role,
                    f"verification of {role}-{ordinal} failed ({detail}); it counts as unavailable and is "
                    f"retried every {RETRY_SECONDS:g} s",
                    KIND_FAILING,
                )
                last = result.get("at")
                wait = (float(last) + RETRY_SECONDS - ctx.now) if isinstance(last, (int, float)) else 0.0
                if wait > 0:
                    out.requeue_at_deadline(wait)  # retried then
                    continue
            out.act(
                Action(
                    VERIFY,
                    group.ordinal,
                    role,
                    ordinal,
                    inst.revision,
                    BECAUSE_VERIFICATION,
                    pod_names=[entry.name],
                )
            )
