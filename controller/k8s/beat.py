"""``HeartbeatScheduler``: Celery beat's persistent scheduler that also proves it is ticking.

Used by the worker Deployment's ``beat`` container (``celery -A rolloutui beat --scheduler
controller.k8s.beat:HeartbeatScheduler --max-interval 30``): every tick touches the file named by
``ROLLOUTUI_BEAT_HEARTBEAT_FILE`` (no file when unset), and the container's liveness probe
(``python -m controller.k8s.liveness``) restarts a beat whose loop stopped. ``--max-interval`` bounds
the sleep between ticks, so a healthy beat touches the file at least that often.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery.beat import PersistentScheduler

from controller.k8s.liveness import Heartbeat

log = logging.getLogger(__name__)

HEARTBEAT_ENV = "ROLLOUTUI_BEAT_HEARTBEAT_FILE"


class HeartbeatScheduler(PersistentScheduler):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        path = os.environ.get(HEARTBEAT_ENV, "").strip()
        self.heartbeat = Heartbeat(path) if path else None

    def tick(self, *args: Any, **kwargs: Any) -> float:
        interval = super().tick(*args, **kwargs)
        if self.heartbeat is not None:
            try:
                self.heartbeat.beat()
            except OSError as exc:  # a full /tmp must not stop the schedule; the probe will notice
                log.warning("could not write the beat heartbeat %s: %s", self.heartbeat.path, exc)
        return interval
