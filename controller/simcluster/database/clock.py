"""The simulated clock of the live simulated cluster: wall-clock time times a speed factor, kept in the database.

``sim_now = sim_base + (wall - wall_base) * speed`` (see ``controller.models.SimClock``). The base is
the wall time when the cluster was first created, so simulated times look like real dates, and at
speed 1 they are real time. Every process (web, worker, beat) reads the same row, so they agree on
"now"; a process started with another ``ROLLOUTUI_SIM_SPEED`` re-bases the row at its current
simulated time (time never jumps back), and the others pick the new speed up within
``REFRESH_SECONDS``.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db import transaction

from controller.models import SimClock

REFRESH_SECONDS = 5.0


def configured_speed() -> float:
    return float(getattr(settings, "ROLLOUTUI_SIM_SPEED", 1.0) or 1.0)


class LiveClock:
    """The ``Clock`` port over the ``SimClock`` row (cached; re-read every few seconds)."""

    def __init__(self, speed: float | None = None) -> None:
        self._speed_wanted = speed
        self._params: tuple[float, float, float] | None = None
        self._loaded_at = 0.0
        self._lock = threading.Lock()

    def _load(self) -> tuple[float, float, float]:
        wanted = self._speed_wanted if self._speed_wanted is not None else configured_speed()
        with transaction.atomic():
            row = SimClock.objects.filter(pk=1).first()
            wall = time.time()
            if row is None:
                row, _ = SimClock.objects.get_or_create(
                    pk=1, defaults={"wall_base": wall, "sim_base": wall, "speed": wanted}
                )
            elif abs(row.speed - wanted) > 1e-9:
                # Re-base: the simulated time right now stays, only its rate changes.
                now = row.sim_now(wall)
                SimClock.objects.filter(pk=1).update(wall_base=wall, sim_base=now, speed=wanted)
                row.wall_base, row.sim_base, row.speed = wall, now, wanted
        return row.wall_base, row.sim_base, row.speed

    def params(self) -> tuple[float, float, float]:
        mono = time.monotonic()
        if self._params is None or mono - self._loaded_at > REFRESH_SECONDS:
            with self._lock:
                if self._params is None or mono - self._loaded_at > REFRESH_SECONDS:
                    self._params = self._load()
                    self._loaded_at = mono
        return self._params

    @property
    def speed(self) -> float:
        return self.params()[2]

    def now(self) -> float:
        wall_base, sim_base, speed = self.params()
        return sim_base + (time.time() - wall_base) * speed

    def to_wall_seconds(self, sim_seconds: float) -> float:
        """How long ``sim_seconds`` of simulated time take on the wall clock (a 60 s drain timeout at
        speed 10 is 6 s)."""
        return sim_seconds / self.speed

    def forget(self) -> None:
        self._params = None


_shared: LiveClock | None = None


def live_clock() -> LiveClock:
    global _shared
    if _shared is None:
        _shared = LiveClock()
    return _shared
