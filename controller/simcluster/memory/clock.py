"""A virtual clock and a deterministic discrete-event loop.

Every timed thing in the simulation (a pod finishing its image pull, a request arriving, a scenario
event, a reconcile) is a callback in one heap ordered by ``(time, seq)``. ``seq`` is a global counter,
so two callbacks at the same virtual time run in the order they were scheduled: the run depends on
nothing but the scenario and the seed, never on dict order, wall time or hash randomisation.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class VirtualClock:
    """The ``Clock`` port in simulation: seconds since the start of the scenario."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def _advance_to(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"time cannot go back: {t} < {self._now}")
        self._now = t


class Timer:
    """Handle of one scheduled callback; ``cancel()`` makes it a no-op (lazy deletion from the heap)."""

    __slots__ = ("at", "cancelled")

    def __init__(self, at: float) -> None:
        self.at = at
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    def __init__(self, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        self._heap: list[tuple[float, int, Timer, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._stopped = False
        self.steps = 0

    def now(self) -> float:
        return self.clock.now()

    def call_at(self, at: float, callback: Callable[[], None]) -> Timer:
        # A callback scheduled in the past runs "now": the clock never goes back.
        at = max(float(at), self.clock.now())
        timer = Timer(at)
        heapq.heappush(self._heap, (at, next(self._seq), timer, callback))
        return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self.clock.now() + max(0.0, float(delay)), callback)

    def stop(self) -> None:
        self._stopped = True

    def next_time(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def run_until(self, until: float) -> float:
        """Run callbacks in (time, seq) order up to and including ``until``; return the final time.

        Stops early when a callback calls ``stop()`` or nothing is left to do. The clock ends at
        the time of the last callback run (or ``until`` when the heap ran past it).
        """
        self._stopped = False
        heap = self._heap
        while heap and not self._stopped:
            at, _, timer, callback = heap[0]
            if at > until:
                self.clock._advance_to(until)
                break
            heapq.heappop(heap)
            if timer.cancelled:
                continue
            self.clock._advance_to(at)
            self.steps += 1
            callback()
        else:
            if not self._stopped and self.clock.now() < until:
                self.clock._advance_to(until)
        return self.clock.now()
