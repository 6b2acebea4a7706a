"""How fast this host runs Python right now: a fixed workload of the standard library only.

The benches' figures move with the host: the same code, with nothing else running, can take half as
long again twenty minutes later (bench/README.md has the measurements). Every bench
prints this probe first, so a figure can be read against the speed of the host it was taken on.
The workload is what the controller does most (building dicts and lists of strings, encoding and
decoding JSON, sorting) and never changes with the product's code.
"""

from __future__ import annotations

import json
import statistics
import time


def _workload() -> int:
    pods = [
        {
            "metadata": {"name": f"ms-{i // 3}-serve-0-{i % 3}", "uid": f"u{i}", "labels": {"group": str(i // 3)}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for i in range(6_000)
    ]
    text = json.dumps(pods)
    back = json.loads(text)
    names = sorted(p["metadata"]["name"] for p in back)
    ready = sum(1 for p in back if p["status"]["conditions"][0]["status"] == "True")
    return len(names) + ready


def probe_ms(runs: int = 5) -> float:
    """The median wall time of the workload over ``runs`` runs, in ms."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        _workload()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)
