"""The Paths panel in Chromium, served by Django in this process (``offline.OfflineSite``), its data
(GET .../paths/) answered with forged revision names and pairs: every one shows as text, Plotly's
legend included, and no script runs; a group without a consistent path says so."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from .offline import ORIGIN, OfflineSite
from .test_pages_offline import current_state, forged, no_script_ran


def paths_answer(now: float) -> dict:
    rev, other = forged("paths.revision"), forged("paths.other")
    series = []
    for k in range(5):
        t = now - 300 + 60 * k
        zero = {"consistent": 0, "mixed": 0, "noRoute": 0, "kvMismatch": 0}
        same = {"pair": f"{rev}/{rev}", "first": rev, "last": rev, "bucketStart": t, **zero, "consistent": 10}
        mixed = {"pair": f"{rev}/{other}", "first": rev, "last": other, "bucketStart": t, **zero, "mixed": 2}
        series += [same, {**mixed, "kvMismatch": 1}]
    return {
        "path": [forged("paths.role"), "decode"],
        "reason": None,
        "window": {"start": now - 900, "end": now, "seconds": 900},
        "bucketSeconds": 60,
        "totals": {"consistent": 50, "mixed": 10, "noRoute": 0, "kvMismatch": 5},
        "series": series,
        "groups": [{"group": 0, "consistent": [rev]}, {"group": 1, "consistent": []}],
        "warnings": [{"path": "spec.traffic.path", "message": forged("paths.kv")}],
    }


def test_forged_paths_render_as_text_and_a_group_without_a_consistent_path_says_so(ms, viewer_client, page: Page):
    state = current_state(ms)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    site = OfflineSite(page, viewer_client, full_state=lambda: state)
    body = json.dumps(paths_answer(state["time"]))
    page.route(
        ORIGIN + f"/api/modelservings/{ms['namespace']}/{ms['name']}/paths/**",
        lambda route: route.fulfill(status=200, content_type="application/json", body=body),
    )
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")

    expect(page.locator("#paths-sub")).to_have_text(forged("paths.role") + " → decode")
    expect(page.get_by_test_id("paths-totals")).to_have_text(
        re.compile(r"consistent 50 · mixed 10 · refused \(noRoute\) 0 · kvMismatch 5")
    )
    groups = page.get_by_test_id("paths-groups")
    expect(groups.locator("li[data-group='0']")).to_contain_text("consistent path: " + forged("paths.revision"))
    expect(groups.locator("li[data-group='1']")).to_have_text("group 1: no consistent path")
    # The same under the topology's canvas.
    topo = page.get_by_test_id("topo-paths")
    expect(topo).to_contain_text(forged("paths.role") + " → decode")
    expect(topo.locator("[data-group='0']")).to_contain_text(forged("paths.revision"))
    expect(topo.locator("[data-group='1']")).to_have_text("group 1 no consistent path")
    # The spec's path hands the KV cache between formats: said as text above the chart.
    expect(page.get_by_test_id("paths-kv-warning")).to_have_text("spec.traffic.path: " + forged("paths.kv"))
    # Its canary analysis does not check mixed paths: the panel suggests the check.
    expect(page.get_by_test_id("paths-suggestion")).to_contain_text("{metric: mixedPaths, max: 0}")
    page.wait_for_function("document.querySelectorAll('#paths-chart .barlayer .trace').length === 3")
    expect(page.locator("#paths-chart")).to_contain_text("paths.other")
    no_script_ran(page)
    assert not errors, errors


def test_without_a_path_the_panel_is_one_line(ms, viewer_client, page: Page):
    state = current_state(ms)
    site = OfflineSite(page, viewer_client, full_state=lambda: state)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("paths-none")).to_have_text(
        "No request path: this ModelServing has no request path (spec.traffic.path)."
    )
    expect(page.get_by_test_id("paths-body").locator("> *")).to_have_count(1)
    expect(page.get_by_test_id("topo-paths")).to_be_hidden()


def test_a_canary_analysis_that_checks_mixed_paths_gets_no_suggestion(ms, viewer_client, page: Page):
    state = current_state(ms)
    site = OfflineSite(page, viewer_client, full_state=lambda: state)
    body = json.dumps(paths_answer(state["time"]))
    base = ORIGIN + f"/api/modelservings/{ms['namespace']}/{ms['name']}"
    page.route(base + "/paths/**", lambda route: route.fulfill(status=200, content_type="application/json", body=body))
    manifest = viewer_client.get(f"/api/modelservings/{ms['namespace']}/{ms['name']}/manifest/").json()
    manifest["spec"]["rolloutStrategy"]["canary"] = {
        "steps": [{"setPartition": 0}],
        "analysis": {"metrics": [{"metric": "mixedPaths", "max": 0}]},
    }
    page.route(
        base + "/manifest/**",
        lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(manifest)),
    )
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("paths-totals")).to_be_visible()
    page.wait_for_function("document.querySelectorAll('#paths-chart .barlayer .trace').length === 3")
    expect(page.get_by_test_id("paths-suggestion")).to_have_count(0)
