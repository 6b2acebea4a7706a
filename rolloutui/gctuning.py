"""Garbage-collector settings of the web (Daphne) process, applied once by ``rolloutui.asgi``, and
of every Celery pool process (``rolloutui.celery``, on ``worker_process_init``).

The websocket hub keeps a few 1,000-group states (tens of thousands of dicts and lists each), and
every full (oldest-generation) collection walks every tracked object of the process: Django's,
the URLconf's, Twisted's and the hub's states. ``bench fanout`` traced them with ``gc.callbacks``:
255,000 tracked objects, one full collection every 4 to 7 seconds, each 100-370 ms on this 2-core
machine at load 3-4, during which the event loop sends nothing (its lag grew by the same amount).
With one publish a second, one publish in four or five waited for one, which was the whole
publish -> client tail (p50 ~80 ms, p95 ~300-350 ms). The states are trees of JSON values
(decoded by orjson or rebuilt by ``apply_delta``) with no reference cycles: reference counting
frees them, and the full collections found nothing to free (``collected`` 0 in most of them).

Two changes, both standard CPython tuning for long-running servers:

* ``gc.freeze()`` after start-up: what is alive once the app and its URLconf are loaded (about
  100,000 objects) moves to the permanent generation, which no collection walks. Frozen objects
  are still freed by reference counting; only a cycle among them would outlive its last use, and
  modules, classes and settings live as long as the process anyway.
* The oldest generation is collected after ``OLD_GENERATION_THRESHOLD`` collections of the
  middle one instead of CPython's 10. Worked example: the first threshold (700 net allocations)
  and the second (10) stay as they are, so the middle generation is collected every
  700 x 10 = 7,000 net allocations of tracked objects; a full collection then waits for
  7,000 x 100 = 700,000 of them instead of 70,000, i.e. about every 50 s instead of every 5 s at
  the ~14,000 a second of a 1,000-group rollout with 100 pages. Cycles that survive into the
  oldest generation (rare: requests' and exceptions' cycles die young) are freed that much later.

2026-12-02: the threshold went from 100 to 1,000. Logging every collection over 50 ms
(``SLOW_COLLECTION_SECONDS``) during ``bench fanout`` showed a full collection every ~26 s in the
web process (27,000 net allocations a second: the fan-out's messages) and every 15-30 s in each
worker process, each 120-350 ms, and one of them in a 20-second window was that window's slowest
publish. What they freed: 0-30 objects in the workers; 36,000-97,000 in the web process, almost
all the data of REST responses that Django's and DRF's reference cycles kept
(``rolloutui/httphandler.py`` now lets it go once sent), after which 1,853. So a full collection
finds next to nothing, and waiting 10x longer for it (about every 4 minutes in the web process
at that rate) holds at most some 20,000 small objects more, while nine in ten of the stalls go.
"""

from __future__ import annotations

import gc
import logging
import os
import time

OLD_GENERATION_THRESHOLD = 1_000
# A collection longer than this is logged (logger ``rolloutui.gc``, INFO: its generation, process,
# duration and what it freed): the process's event loop or reconcile pass stood still that long.
SLOW_COLLECTION_SECONDS = 0.05

log = logging.getLogger("rolloutui.gc")


def tune_web_process() -> None:
    """Load the URLconf (its views are imported on the first request otherwise), then freeze and
    raise the threshold (``_freeze_and_raise``). Called once per process, after the ASGI
    application is built."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (imports every view module)
    _freeze_and_raise("web")


def tune_worker_process() -> None:
    """The same for a Celery pool process, once it has forked: a reconcile pass of a 1,000-group
    ModelServing decodes its 2,000 pods (~100,000 objects alive for the pass) and builds a view of
    as many again, and each such pass pushed enough survivors into the oldest generation to start
    a full collection every few passes: traced in one worker process at load ~3, 8 full
    collections in 30 passes took 1.3-2.2 s in all (160-280 ms each, inside the pass, so before
    its publish: the observed -> client tail of ``bench fanout``); frozen and raised, 1 took 48 ms.
    The pass's objects are trees (pods, views) freed by reference counting when it ends."""
    _freeze_and_raise("worker")


class _SlowCollectionLog:
    """A ``gc.callbacks`` entry that logs every collection longer than SLOW_COLLECTION_SECONDS.

    The cost is two calls of perf_counter per collection (a young collection runs every 700 net
    allocations: a few hundred a second at most)."""

    def __init__(self, process: str) -> None:
        self.process = process
        self.started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        took = time.perf_counter() - self.started
        if took >= SLOW_COLLECTION_SECONDS:
            log.info(
                "garbage collection of generation %s in the %s process %s took %.0f ms (%s objects freed)",
                info.get("generation"),
                self.process,
                os.getpid(),
                took * 1000,
                info.get("collected"),
            )


def _freeze_and_raise(process: str) -> None:
    # Collect first so start-up garbage is not kept for good, freeze what is left, and make the
    # oldest generation wait for OLD_GENERATION_THRESHOLD middle collections.
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, OLD_GENERATION_THRESHOLD)
    if not any(isinstance(cb, _SlowCollectionLog) for cb in gc.callbacks):
        gc.callbacks.append(_SlowCollectionLog(process))
