"""The Paths panel of the ModelServing page on the real product (`runall`: Daphne, Celery worker and
beat, Redis): a prefill -> decode ModelServing whose request records (consistent, mixed, refused and
kvMismatch requests, as a router's shipper stores them) are drawn per revision pair within a bounded
wait, with each group's consistent path once its instances are Ready; a ModelServing without a path
shows one line saying so."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .test_browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAME = "paths-pd"

# A two-role demo with one group, every request prefill -> decode; then records of the last 5
# minutes (cluster time) on its revision: 24 consistent, 6 mixed, 4 kvMismatch, 3 refused.
SEED = """
import copy, time
from controller.core.ports import Conflict
from controller.runtime.enqueue import send
from controller.simcluster.database.demo import DEMO_MANIFEST
from rolloutui.services import cluster
ms = copy.deepcopy(DEMO_MANIFEST)
ms["metadata"]["name"] = {name!r}
ms["spec"]["replicas"] = 1
c = cluster.get_cluster()
try:
    c.create_modelserving(ms)
except Conflict:
    pass
send("default", {name!r})
for _ in range(600):
    status = c.get_modelserving("default", {name!r}).get("status") or {{}}
    if status.get("updateRevision"):
        break
    time.sleep(0.1)
rev = status["updateRevision"]
now = cluster.get_clock().now()
from controller.records import store
rows = []
hop = lambda role, r: {{"role": role, "pod": "{name}-0-" + role + "-0", "revision": r}}
for i in range(37):
    began = now - 300 + i * 7
    kind = "consistent" if i < 24 else "mixed" if i < 30 else "kvMismatch" if i < 34 else "noRoute"
    path = [] if kind == "noRoute" else [hop("prefill", rev), hop("decode", rev if kind == "consistent" else "older1")]
    rows.append({{
        "request_id": "seed-%d" % i, "namespace": "default", "name": {name!r}, "revision": rev,
        "latency_ms": 150.0, "status": "ok" if kind in ("consistent", "mixed") else "error",
        "feedback": None, "started": began, "finished": began + 3.0, "ttft_ms": 150.0, "tpot_ms": 22.0,
        "input_tokens": 800, "output_tokens": 120, "path": path,
        "mixed": None if kind == "noRoute" else kind != "consistent",
        "path_error": kind if kind in ("kvMismatch", "noRoute") else None,
    }})
store.write_records(rows)
print("seeded", rev)
"""


def test_the_paths_panel_draws_requests_per_revision_pair_and_each_groups_consistent_path(
    live_stack, own_room, page: Page, screenshot_dir
):
    own_room(16, ("ModelServing", NAME))  # one group of the demo's prefill and decode instances
    out = live_stack.manage("shell", "-c", SEED.format(name=NAME))
    assert "seeded" in out, out
    revision = out.split("seeded", 1)[1].split()[0]
    page.set_viewport_size({"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_stack.url, "viewer")
    page.goto(f"{live_stack.url}/modelservings/default/{NAME}/")

    panel = page.get_by_test_id("paths-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("#paths-sub")).to_have_text("prefill → decode", timeout=30_000)
    totals = page.get_by_test_id("paths-totals")
    expect(totals).to_have_text(
        re.compile(r"consistent 24 · mixed 6 · refused \(noRoute\) 3 · kvMismatch 4"), timeout=30_000
    )
    expect(totals.locator("[data-outcome=mixed]")).to_have_class("paths-broken")
    expect(totals.locator("[data-outcome=consistent]")).not_to_have_class("paths-broken")
    page.wait_for_selector("#paths-chart .main-svg", timeout=30_000)
    # One stacked bar trace per pair and outcome: consistent a/a, mixed and kvMismatch a/older1, refused a/-.
    page.wait_for_function("document.querySelectorAll('#paths-chart .barlayer .trace').length === 4", timeout=30_000)
    chart = page.locator("#paths-chart")
    expect(chart).to_contain_text(re.compile(r"consistent: #\d+ " + revision + r" → #\d+ " + revision))
    expect(chart).to_contain_text(re.compile(r"kvMismatch: #\d+ " + revision + " → older1"))
    # The group's instances come up (4x simulated speed): its consistent path is the revision.
    groups = page.get_by_test_id("paths-groups")
    expect(groups.locator("li[data-group='0']")).to_contain_text(
        re.compile(r"group 0: consistent path: #\d+ " + revision), timeout=90_000
    )
    expect(page.get_by_test_id("topo-paths").locator("[data-group='0']")).to_contain_text(revision)
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(screenshot_dir / "detail-paths-panel.png"))

    # A ModelServing without spec.traffic.path: one line, no chart.
    page.goto(f"{live_stack.url}/modelservings/default/chat/")
    expect(page.get_by_test_id("paths-none")).to_have_text(
        "No request path: this ModelServing has no request path (spec.traffic.path).", timeout=30_000
    )
    expect(page.locator("#paths-chart")).to_have_count(0)
    assert not errors, errors
