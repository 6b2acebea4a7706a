"""The wall clock: the ``Clock`` port on a real cluster (epoch seconds).

On the simulated cluster the clock is the cluster's own simulated time
(``controller.simcluster.database.clock``); ``controller.runtime.backend.get_clock`` picks one.
"""

from __future__ import annotations

import time


class WallClock:
    """Epoch seconds: the clock of a real cluster."""

    speed = 1.0

    def now(self) -> float:
        return time.time()

    def to_wall_seconds(self, seconds: float) -> float:
        return seconds
