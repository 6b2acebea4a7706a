"""The controller's work-queue policy: when the next reconcile pass of a ModelServing runs.

Pure decisions shared by both queues that run passes: the live app's Celery tasks
(``controller.runtime``: messages in Redis, deduplicated by a flag) and the simulator's controller
(``controller.simcluster.modelserving.SimController``: timers on the virtual clock). Each keeps its own
state where it must (Redis, memory); what to do with it is decided here, once:

- a change asks for a pass ``COALESCE_SECONDS`` later, and a pass already queued at or before that
  time covers it (``already_queued``): ten pod changes within 5 ms make one pass. (The Celery side
  sends at once, after the change commits, and coalesces by its "queued" flag instead: while one
  message waits in the broker, further changes queue nothing; a timed wake-up is covered by one
  already due no later, ``already_queued`` again);
- every ModelServing is queued again every ``RESYNC_SECONDS`` (the safety net for a lost wake-up);
- a pass's own ``requeue_after`` (a drain timeout, ...) is honoured, never sooner than the
  coalescing delay (``requeue_seconds``);
- a pass that failed is retried after ``backoff_seconds(failures)``: 0.1 s, 0.2 s, 0.4 s, ... at
  most 10 s;
- a chain of passes, each asked for by the one before, is bounded. A healthy chain is 2-3 passes
  long (a pass, the pass that observes its writes, maybe one more); a controller that changes the
  cluster on every pass wakes itself every few milliseconds forever (a hot loop, e.g. rewriting an
  annotation with the current time). Each queue bounds it where its chain runs:

  - the live app's worker runs passes asked for while it holds a ModelServing in the same turn, at
    most ``PASSES_PER_TURN``; then it hands the ModelServing back to the broker (``turn_is_over``),
    so one busy ModelServing cannot keep a worker from the others in the queue;
  - the simulator's chain runs on timers: after ``HOT_LOOP_PASSES`` back-to-back passes (each within
    ``2 * COALESCE_SECONDS`` of the last) the object is slowed to one pass per
    ``HOT_LOOP_INTERVAL`` (``PassHistory``), so a run still ends and its trace shows the bug.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

COALESCE_SECONDS = 0.005
RESYNC_SECONDS = 30.0
BACKOFF_START_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 10.0
PASSES_PER_TURN = 20
HOT_LOOP_PASSES = 200
HOT_LOOP_INTERVAL = 1.0


def already_queued(pending_at: float | None, wanted_at: float) -> bool:
    """A pass queued at ``pending_at`` covers a request for one at ``wanted_at`` if it runs no later.

    Example: a pass is queued for t=10.005; a change at t=10.003 wants one at 10.008: covered. A
    drain timeout wanting one at 10.001 is not (the queued pass would be late): queue that instead.
    """
    return pending_at is not None and pending_at <= wanted_at


def requeue_seconds(requeue_after: float) -> float:
    """The delay of the wake-up a pass asked for: ``requeue_after``, at least the coalescing delay
    (a pass asking for 0 must not run again at the same instant, in a loop)."""
    return max(float(requeue_after), COALESCE_SECONDS)


def backoff_seconds(failures: int) -> float:
    """The delay before the next pass after ``failures`` consecutive failed passes (1: the first).

    0.1 s doubling, at most 10 s: failures 1, 2, 3, ... 7, 8 -> 0.1, 0.2, 0.4, ... 6.4, 10. The
    exponent stops growing once the cap is reached (2 ** 1100 would not fit in a float: a pass
    failing for hours must keep retrying every 10 s, not crash the queue).
    """
    doublings = min(max(failures - 1, 0), math.ceil(math.log2(BACKOFF_MAX_SECONDS / BACKOFF_START_SECONDS)))
    return min(BACKOFF_MAX_SECONDS, BACKOFF_START_SECONDS * 2**doublings)


def turn_is_over(passes: int) -> bool:
    """After ``passes`` passes in one worker's turn with a ModelServing, it goes back to the queue
    (``PASSES_PER_TURN``) rather than running the next pass asked for.

    Example: a pass whose writes ask for another runs again in the same turn, 19 times at most; the
    20th pass's request is sent to the broker behind the other ModelServings' messages.
    """
    return passes >= PASSES_PER_TURN


@dataclass(frozen=True)
class PassHistory:
    """What the hot-loop guard remembers about one ModelServing's passes."""

    last_at: float | None = None  # when the last pass ran
    streak: int = 0  # how many passes in a row ran back to back before the last one
    throttled: bool = False  # slowed to one pass per HOT_LOOP_INTERVAL

    def wait_before_pass(self, now: float) -> float | None:
        """``None``: run the pass now. Else the object is throttled and must wait this long."""
        if not self.throttled or self.last_at is None or now - self.last_at >= HOT_LOOP_INTERVAL - 1e-6:
            # The 1e-6: float rounding (0.9999999999 < 1) must not make it wait again at one instant.
            return None
        return max(HOT_LOOP_INTERVAL - (now - self.last_at), COALESCE_SECONDS)

    def after_pass(self, now: float) -> PassHistory:
        """The history once a pass runs at ``now``; ``throttled`` turns on at the ``HOT_LOOP_PASSES``-th
        back-to-back pass and stays on."""
        back_to_back = self.last_at is not None and now - self.last_at <= 2 * COALESCE_SECONDS
        streak = self.streak + 1 if back_to_back else 0
        return PassHistory(last_at=now, streak=streak, throttled=self.throttled or streak >= HOT_LOOP_PASSES)
