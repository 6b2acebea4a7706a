"""When a simulated run ends and when its traffic starts: the part of convergence every kind shares.

Each kind of workload decides *whether* its workload converged (a ModelServing after every reconcile
pass, ``convergence.is_converged``; an InferenceService from its state view's ``converged``) and
tells ``Settling.observe``. What follows is the same for every kind:

- traffic starts when the workload first converges (and again after ``forget``: a no-op for a
  router already running);
- ``convergedAt`` is the time of the first converged verdict of the current converged stretch;
- the run ends ``SETTLE`` seconds after that, once every event of the scenario ran:
  end = max(convergedAt, time of the last event) + 60. Worked example: converged at 412.3 s, last
  event at 300 s: the run ends at 472.3 s, unless a verdict in between says not converged.
"""

from __future__ import annotations

from collections.abc import Callable

from .memory.clock import EventLoop, Timer

SETTLE = 60.0


class Settling:
    def __init__(self, loop: EventLoop, event_times: list[float], start_traffic: Callable[[], None]) -> None:
        self.loop = loop
        self._start_traffic = start_traffic
        self.converged = False
        self.converged_at: float | None = None
        self.events_left = len(event_times)
        self.last_event_at = max(event_times, default=0.0)
        self._end_timer: Timer | None = None

    def observe(self, converged: bool) -> None:
        """A kind's verdict on its workload as it stands now."""
        if converged and not self.converged:
            self.converged_at = self.loop.now()
            self._start_traffic()  # traffic flows once the workload first stands
        if not converged:
            self.converged_at = None
        self.converged = converged
        self.maybe_schedule_end()

    def forget(self) -> None:
        """After a change made from outside the scenario (the preview's): the next verdict decides
        anew, and ``converged_at`` is the time of the first converged one after the change."""
        self.converged, self.converged_at = False, None

    def event_ran(self) -> None:
        self.events_left -= 1

    def maybe_schedule_end(self) -> None:
        if not self.converged or self.events_left > 0 or self.converged_at is None:
            return
        end_at = max(self.converged_at, self.last_event_at) + SETTLE
        if self._end_timer is not None and not self._end_timer.cancelled and self._end_timer.at == end_at:
            return
        if self._end_timer is not None:
            self._end_timer.cancel()
        since = self.converged_at
        self._end_timer = self.loop.call_at(end_at, lambda: self._end_if_settled(since))

    def _end_if_settled(self, since: float) -> None:
        if self.converged and self.converged_at == since:
            self.loop.stop()
