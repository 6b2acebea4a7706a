"""The web process's garbage-collector settings (rolloutui/gctuning.py), read in a fresh process:
freezing objects in the test process would keep them for the rest of the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rolloutui.gctuning import OLD_GENERATION_THRESHOLD

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json
import rolloutui.asgi
print(json.dumps({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold(), "default": [700, 10]}))
"""


@pytest.fixture(scope="module")
def after_asgi_import() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTUI_")}
    env["DJANGO_SETTINGS_MODULE"] = "rolloutui.settings"
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "sentence, holds",
    [
        (
            "loading the ASGI application freezes what start-up left alive",
            lambda r: r["frozen"] > 10_000,
        ),
        (
            "the oldest generation waits for OLD_GENERATION_THRESHOLD collections of the middle one",
            lambda r: r["threshold"][2] == OLD_GENERATION_THRESHOLD,
        ),
        (
            "the young and middle generations keep CPython's thresholds",
            lambda r: list(r["threshold"][:2]) == r["default"],
        ),
    ],
)
def test_web_process_gc(after_asgi_import, sentence, holds):
    assert holds(after_asgi_import), f"{sentence}: {after_asgi_import}"


WORKER_PROBE = """
import gc, json, django
django.setup()
from celery import signals
import rolloutui.celery
before = gc.get_freeze_count()
signals.worker_process_init.send(sender=None)
print(json.dumps({"before": before, "frozen": gc.get_freeze_count(), "threshold": gc.get_threshold()}))
"""


def test_a_celery_pool_process_freezes_and_raises_the_oldest_threshold_once_it_starts():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTUI_")}
    env["DJANGO_SETTINGS_MODULE"] = "rolloutui.settings"
    out = subprocess.run(
        [sys.executable, "-c", WORKER_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["frozen"] > result["before"] + 10_000
    assert result["threshold"][2] == OLD_GENERATION_THRESHOLD


def test_a_slow_collection_is_logged_with_its_generation_process_and_duration(caplog, monkeypatch):
    import gc

    from rolloutui import gctuning

    monkeypatch.setattr(gctuning, "SLOW_COLLECTION_SECONDS", 0.0)  # every collection counts as slow
    watch = gctuning._SlowCollectionLog("web")
    gc.callbacks.append(watch)
    try:
        with caplog.at_level("INFO", logger="rolloutui.gc"):
            gc.collect(2)
    finally:
        gc.callbacks.remove(watch)
    [record] = [r for r in caplog.records if r.name == "rolloutui.gc"]
    assert record.getMessage().startswith(f"garbage collection of generation 2 in the web process {os.getpid()} took ")
