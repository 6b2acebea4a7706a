"""The workload list with 1,000 ModelServings (issue 27: also 10,000, ``--count 10000``): list API,
first render, frames while it updates; each target printed met or missed.

    python -m bench list [--json] [--count 1000] [--api-runs 15] [--loads 3] [--stream-seconds 12]

Seeds ``--count`` ModelServings (10 namespaces, each with a status: phase, ready and updated
groups, revisions) in a SQLite file database in a temporary directory, with a private embedded
Redis, and serves the product with Daphne (no Celery: nothing reconciles, so the figures are the
dashboard's alone). Then:

1. **list API**: ``GET /api/workloads/`` (what the list page polls) and ``GET /api/modelservings/``,
   signed in with an API token, timed by this client on the loopback; median and p95 of
   ``--api-runs`` requests, and the server's CPU per request (Daphne's CPU time over the runs: on a
   loaded host the wall time is mostly waiting for a core). Target: median < 200 ms.
2. **first render**: Chromium (Playwright, /usr/bin/chromium) opens ``/``; time from navigation
   start to the first contentful paint (the server-rendered rows), and to the list being live
   (``window.__listReadyMs``: the first refresh from the API applied to the rows, set by
   ``static/js/list.js``); median of ``--loads`` loads, and the row elements in the page (the list
   is windowed: the rows near the viewport, whatever ``--count``). Target: live < 1 s.
3. **frames while it updates**: with the page open, a writer process changes the status of 50
   ModelServings a second (phase, ready/updated counts, update revision), and the page
   refreshes every 2 s (``?refresh=2000``; 5 s by default) for ``--stream-seconds``. In the page a
   PerformanceObserver collects long tasks (> 50 ms on the main thread) and a
   requestAnimationFrame loop the gaps between frames. Target: no frame gap > 100 ms.

Figures measured so far, with their dates and the host's speed: bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench._server import CHROMIUM, REPO, BenchServer, in_run_directory

USER, PASSWORD = "bench-viewer", "bench-pw-not-secret-9Lq!"
TARGET_API_MS = 200.0
TARGET_RENDER_MS = 1000.0
TARGET_FRAME_MS = 100.0

SEED = """
import random
from django.contrib.auth.models import Group, User
from controller.simcluster.database.store import DatabaseCluster
u, _ = User.objects.get_or_create(username={user!r})
u.set_password({password!r}); u.save(); u.groups.add(Group.objects.get(name="viewers"))
c = DatabaseCluster(actor="controller")
rng = random.Random(15)
for i in range({count}):
    m = {manifest!r}
    m["metadata"] = {{"name": f"ms-{{i:04d}}", "namespace": f"team-{{i % 10}}"}}
    obj = c.create_modelserving(m)
    ready = rng.randint(0, 4)
    c.replace_modelserving_status(
        obj["metadata"]["namespace"], obj["metadata"]["name"],
        {{"phase": "Healthy" if ready == 4 else "Progressing", "availableReplicas": ready,
         "updatedReplicas": ready, "currentRevision": "1", "updateRevision": "1", "observedGeneration": 1}},
        resource_version=obj["metadata"]["resourceVersion"],
    )
print("seeded")
"""

# Changes the status of `per_second` ModelServings a second, round robin, as a controller
# rolling all of them would.
WRITER = """
import sys, time, django
django.setup()
from controller.core.ports import Conflict
from controller.simcluster.database.store import DatabaseCluster
count, per_second, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
c = DatabaseCluster(actor="controller")
end = time.monotonic() + seconds
i = step = 0
while time.monotonic() < end:
    tick = time.monotonic()
    for _ in range(per_second):
        ns, name = f"team-{i % 10}", f"ms-{i:04d}"
        obj = c.get_modelserving(ns, name)
        st = dict(obj.get("status") or {})
        st["updatedReplicas"] = (int(st.get("updatedReplicas") or 0) + 1) % 5
        st["availableReplicas"] = max(0, st["updatedReplicas"] - (step % 2))
        st["updateRevision"] = "2"
        st["phase"] = "Progressing" if st["updatedReplicas"] < 4 else "Healthy"
        try:
            c.replace_modelserving_status(ns, name, st, resource_version=obj["metadata"]["resourceVersion"])
        except Conflict:
            pass
        i = (i + 1) % count
    step += 1
    time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
"""

# Installed before any script of the page runs: long tasks and frame gaps, from `__mark` on.
OBSERVE = """
window.__perf = {longtasks: [], gaps: [], since: null};
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__perf.longtasks.push([e.startTime, e.duration]);
  }).observe({type: "longtask", buffered: true});
} catch (e) { window.__perf.noLongtask = String(e); }
let last = null;
const frame = (t) => {
  if (last !== null) window.__perf.gaps.push([last, t - last]);
  last = t;
  requestAnimationFrame(frame);
};
requestAnimationFrame(frame);
"""


# The rows the list holds: a windowed list (2026-12-05) says so in the table's aria-rowcount (the
# header is row 1) and draws only the rows near the viewport; before, every row was an element.
LIST_ROWS = """(() => {
  const total = document.getElementById('ms-table').getAttribute('aria-rowcount');
  return total ? Number(total) - 1 : document.querySelectorAll('#ms-rows .ms-row[data-key]').length;
})()"""
ROW_ELEMENTS = "document.querySelectorAll('#ms-rows .ms-row[data-key]').length"


def manifest() -> dict:
    template = {"spec": {"containers": [{"name": "engine", "image": "engine:v1"}]}}
    return {
        "apiVersion": "serving.rolloutui.io/v1alpha1",
        "kind": "ModelServing",
        "spec": {
            "replicas": 4,
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1},
            },
            "template": {
                "roles": [
                    {"name": "prefill", "replicas": 1, "workerReplicas": 0, "entryTemplate": template},
                    {"name": "decode", "replicas": 2, "workerReplicas": 0, "entryTemplate": template},
                ]
            },
        },
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    # Nearest rank: p95 of 20 samples is the 19th smallest.
    return ordered[max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 100)) - 1))]


class Server(BenchServer):
    """Daphne alone (no Celery: nothing reconciles), started by ``start`` once the database is
    migrated (here) and seeded (``main``)."""

    def __init__(self, var_dir: Path, log) -> None:
        super().__init__(var_dir, log, user=USER, password=PASSWORD, extra_env={})
        with self.stopped_on_failure():
            self.manage("migrate", "--verbosity", "0")

    def start(self) -> None:
        daphne = ["-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "rolloutui.asgi:application"]
        self.launch([sys.executable, *daphne], "daphne.log", within=60)


def server_cpu_seconds(server: Server) -> float:
    """CPU time (user + system) of the Daphne process so far."""
    import psutil

    t = psutil.Process(server.proc.pid).cpu_times()
    return t.user + t.system


def time_api(server: Server, token: str, path: str, runs: int, count: int) -> dict:
    times = []
    cpu_started = 0.0
    for i in range(runs + 1):
        if i == 1:
            cpu_started = server_cpu_seconds(server)
        req = urllib.request.Request(
            server.url + path, headers={"Authorization": f"Token {token}", "Accept": "application/json"}
        )
        started = time.perf_counter()
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = resp.read()
        elapsed = (time.perf_counter() - started) * 1000
        rows = json.loads(body)
        if len(rows) != count:
            raise RuntimeError(f"GET {path} returned {len(rows)} rows, expected {count}")
        if i:  # the first request warms the process (imports, connections)
            times.append(elapsed)
    return {
        "medianMs": round(statistics.median(times), 1),
        "p95Ms": round(pct(times, 95), 1),
        "serverCpuMsPerRequest": round((server_cpu_seconds(server) - cpu_started) * 1000 / runs, 1),
        "bytes": len(body),
        "runs": runs,
    }


def measure_page(server: Server, loads: int, stream_seconds: float, count: int, log) -> dict:
    from playwright.sync_api import sync_playwright

    fcp, ready, elements = [], [], []
    with sync_playwright() as p:
        browser, page = server.signed_in_page(p)
        page.wait_for_function("() => window.__listReadyMs !== undefined", timeout=30000)  # warm caches
        for _ in range(loads):
            page.goto(server.url + "/", wait_until="commit")
            page.wait_for_function("() => window.__listReadyMs !== undefined", timeout=30000)
            ready.append(page.evaluate("window.__listReadyMs"))
            fcp.append(
                page.evaluate(
                    "(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: null}).startTime"
                )
            )
            n = page.evaluate(LIST_ROWS)
            if n != count:
                raise RuntimeError(f"the list shows {n} rows, expected {count}")
            elements.append(page.evaluate(ROW_ELEMENTS))

        page.add_init_script(OBSERVE)
        page.goto(server.url + "/?refresh=2000", wait_until="commit")
        page.wait_for_function("() => window.__listReadyMs !== undefined", timeout=30000)
        page.wait_for_timeout(500)
        start = page.evaluate("performance.now()")
        refreshes_before = page.evaluate("window.__listRefreshes || 0")
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(count), "50", str(stream_seconds)], cwd=REPO, env=server.env
        )
        log(f"page open; a writer changes 50 ModelServings a second for {stream_seconds:.0f} s")
        writer.wait(timeout=stream_seconds + 60)
        page.wait_for_timeout(2500)  # the refresh after the last writes
        perf = page.evaluate("window.__perf")
        refreshes = page.evaluate("window.__listRefreshes || 0") - refreshes_before
        changed = page.evaluate(ROW_ELEMENTS)
        browser.close()
    gaps = [d for t, d in perf["gaps"] if t >= start]
    longtasks = [d for t, d in perf["longtasks"] if t + d >= start]
    return {
        "firstContentfulPaintMs": round(statistics.median(fcp), 1) if all(v is not None for v in fcp) else None,
        "liveMs": round(statistics.median(ready), 1),
        "liveAllMs": [round(v, 1) for v in ready],
        "rowElements": max(elements),
        "stream": {
            "seconds": stream_seconds,
            "refreshes": refreshes,
            "frames": len(gaps),
            "maxFrameGapMs": round(max(gaps), 1) if gaps else None,
            "p99FrameGapMs": round(pct(gaps, 99), 1) if gaps else None,
            "longTasks": len(longtasks),
            "maxLongTaskMs": round(max(longtasks), 1) if longtasks else 0.0,
            "longTaskObserver": perf.get("noLongtask") or "ok",
            "rows": changed,
        },
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench list", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--api-runs", type=int, default=15)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--stream-seconds", type=float, default=12.0)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    log = (lambda m: print(m, file=sys.stderr)) if args.json else print
    if not Path(CHROMIUM).exists():
        print(f"bench list needs {CHROMIUM} (Debian's chromium) for the page measurements", file=sys.stderr)
        return 2

    with in_run_directory(args, log, "rolloutui-list-", Server) as server:
        log(f"seeding {args.count} ModelServings in {server.var_dir / 'db.sqlite3'}")
        server.manage("shell", "-c", SEED.format(user=USER, password=PASSWORD, count=args.count, manifest=manifest()))
        server.start()
        token = server.token()
        api = {
            "workloads": time_api(server, token, "/api/workloads/", args.api_runs, args.count),
            "modelservings": time_api(server, token, "/api/modelservings/", args.api_runs, args.count),
        }
        page = measure_page(server, args.loads, args.stream_seconds, args.count, log)

    stream = page["stream"]
    result = {
        "benchmark": "list",
        "count": args.count,
        "load": os.getloadavg()[0],
        "api": api,
        "page": page,
        "targets": {"apiMs": TARGET_API_MS, "liveMs": TARGET_RENDER_MS, "frameGapMs": TARGET_FRAME_MS},
        "ok": {
            "api": api["workloads"]["medianMs"] < TARGET_API_MS,
            "render": page["liveMs"] < TARGET_RENDER_MS,
            "frames": stream["maxFrameGapMs"] is not None and stream["maxFrameGapMs"] < TARGET_FRAME_MS,
        },
    }
    w, m = api["workloads"], api["modelservings"]

    def verdict(key: str) -> str:
        return "met" if result["ok"][key] else "missed"

    rows = [
        ("ModelServings", args.count),
        (
            "GET /api/workloads/ median / p95 (ms)",
            f"{w['medianMs']} / {w['p95Ms']}  ({w['bytes']} bytes;"
            f" target median < {TARGET_API_MS:.0f}: {verdict('api')})",
        ),
        ("  server CPU per request (ms)", w["serverCpuMsPerRequest"]),
        ("GET /api/modelservings/ median / p95 (ms)", f"{m['medianMs']} / {m['p95Ms']}"),
        ("first contentful paint (ms)", page["firstContentfulPaintMs"]),
        ("row elements in the page", page["rowElements"]),
        (
            "list live (ms)",
            f"{page['liveMs']} {page['liveAllMs']}  (target < {TARGET_RENDER_MS:.0f}: {verdict('render')})",
        ),
        (f"while updating ({stream['seconds']:.0f} s, {stream['refreshes']} refreshes)", ""),
        (
            "  frames / max gap / p99 gap (ms)",
            f"{stream['frames']} / {stream['maxFrameGapMs']} / {stream['p99FrameGapMs']}"
            f"  (target max < {TARGET_FRAME_MS:.0f}: {verdict('frames')})",
        ),
        ("  long tasks / longest (ms)", f"{stream['longTasks']} / {stream['maxLongTaskMs']}"),
        ("load average (1 min)", f"{result['load']:.2f}"),
    ]
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        log(f"{k.ljust(width)}  {v}")
    log("PASS" if all(result["ok"].values()) else "FAIL")
    if args.json:
        print(json.dumps(result))
    return 0 if all(result["ok"].values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
