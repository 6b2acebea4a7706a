"""The Canary and Capacity panels of the ModelServing page in Chromium, served by Django in this
process (``offline.OfflineSite``). The canary's state comes over the (fake) websocket; the
comparison endpoint (request records, built elsewhere) is answered with a canned fixture of its
shape, or 404 as on a server without request records.
"""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from .offline import ORIGIN, OfflineSite
from .test_pages_offline import current_state, forged, no_script_ran, shot

STEPS = [
    {"setPartition": "75%"},
    {"pause": {"durationSeconds": 300}},
    {"setPartition": "50%"},
    {"pause": {}},
    {"setPartition": 0},
]
P99_REASON = "canary p99 1,840 ms is 1.9x stable 960 ms, limit 1.3x"


def canary_state(ms: dict, now: float, *, reason: str = P99_REASON) -> dict:
    """The state of a canary in its timed pause (step 2 of 5), started 100 s before ``now``,
    with a passed, an inconclusive and a failed analysis window."""
    state = current_state(ms)
    figures = {
        "stable": {"requests": 410, "errorRate": 0.004, "latencyP99Ms": 960.0},
        "canary": {"requests": 120, "errorRate": 0.006, "latencyP99Ms": 1840.0},
    }
    state["canary"] = {
        "revision": "canary-rev",
        "stable": "stable-rev",
        "stepIndex": 1,
        "stepStartedAt": now - 100,
        "steps": STEPS,
        "phase": "Paused",
        "pauseSecondsLeft": 200.0,
        "failures": 1,
        "message": None,
        "analysis": True,
        "windows": [
            {
                "start": now - 180,
                "end": now - 120,
                "stable": "stable-rev",
                "canary": "canary-rev",
                "figures": figures,
                "verdict": "Pass",
                "failed": [],
                "reasons": [],
            },
            {
                "start": now - 120,
                "end": now - 60,
                "stable": "stable-rev",
                "canary": "canary-rev",
                "figures": {"stable": {"requests": 300}, "canary": {"requests": 12}},
                "verdict": "Inconclusive",
                "failed": [],
                "reasons": ["12 canary requests, fewer than minRequests 50"],
            },
            {
                "start": now - 60,
                "end": now,
                "stable": "stable-rev",
                "canary": "canary-rev",
                "figures": figures,
                "verdict": "Fail",
                "failed": ["latencyP99Ms"],
                "reasons": [reason],
            },
        ],
    }
    return state


def comparison_fixture(now: float) -> dict:
    """An answer of GET .../comparison/ (the records part's contract): the window, each revision's
    figures and a series per one-minute bucket."""

    def figures(rev: str, requests: int, err: float, p99: float) -> dict:
        return {
            "revision": rev,
            "requests": requests,
            "errorRate": err,
            "timeoutRate": 0.001,
            "latencyP50Ms": p99 / 4,
            "latencyP95Ms": p99 * 0.8,
            "latencyP99Ms": p99,
            "feedbackMean": 4.2,
            "ttftP95Ms": p99 / 8,
            "tpotP95Ms": None if rev == "stable-rev" else 42.0,
            "mixedPaths": 0,
        }

    series = []
    for k in range(15):
        t = now - 900 + 60 * k
        series.append({"bucketStart": t, **figures("stable-rev", 400, 0.004 + 0.0002 * (k % 3), 950 + 5 * k)})
        if k >= 5:
            series.append({"bucketStart": t, **figures("canary-rev", 40, 0.006 + 0.001 * (k % 4), 1500 + 30 * k)})
    return {
        "window": {"start": now - 900, "end": now, "seconds": 900, "bucket": 60},
        "stable": figures("stable-rev", 6000, 0.0043, 960.0),
        "canary": figures("canary-rev", 400, 0.0071, 1840.0),
        "revisions": ["stable-rev", "canary-rev"],
        "series": series,
    }


def open_page(page: Page, ms: dict, client, state: dict, *, comparison: dict | None) -> OfflineSite:
    site = OfflineSite(page, client, full_state=lambda: state)
    path = f"/api/modelservings/{ms['namespace']}/{ms['name']}/comparison/**"
    if comparison is None:
        page.route(
            ORIGIN + path,
            lambda route: route.fulfill(status=404, content_type="application/json", body='{"detail": "Not found."}'),
        )
    else:
        page.route(
            ORIGIN + path,
            lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(comparison)),
        )
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    return site


def left_seconds(text: str) -> int:
    m = re.match(r"(\d+)m (\d+)s left in this pause", text)
    assert m, text
    return int(m.group(1)) * 60 + int(m.group(2))


def test_the_canary_panel_shows_steps_the_current_one_the_countdown_verdicts_and_stable_against_canary(
    ms, viewer_client, page: Page, screenshot_dir
):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_page(page, ms, viewer_client, canary_state(ms, now), comparison=comparison_fixture(now))
    panel = page.get_by_test_id("canary-panel")
    expect(panel).to_be_visible()
    steps = page.get_by_test_id("canary-steps").locator("li")
    expect(steps).to_have_text(
        [
            re.compile(r"^Set partition 75%\s*done$"),
            re.compile(r"^Pause 5m 0s\s*waiting here$"),
            "Set partition 50%",
            "Pause until promoted",
            "Set partition 0",
        ]
    )
    expect(steps.nth(1)).to_have_attribute("aria-current", "step")
    expect(page.get_by_test_id("canary-phase")).to_have_text("Paused")

    # 300 s pause started 100 s (cluster time) before the page loaded: about 200 s left, counting down.
    countdown = page.get_by_test_id("canary-countdown")
    expect(countdown).to_have_text(re.compile(r"left in this pause"))
    first = left_seconds(countdown.inner_text())
    # However long the page took to come up (a loaded machine: over 10 s), the countdown is what is
    # left of the pause on the cluster clock now, within a second of rounding.
    elapsed = capacity.clock()["now"] - now
    assert 200 - elapsed - 1 <= first <= 200, (first, elapsed)
    page.wait_for_function(
        "(first) => { const m = document.getElementById('canary-countdown').textContent.match(/(\\d+)m (\\d+)s/);"
        " return m && Number(m[1]) * 60 + Number(m[2]) < first; }",
        arg=first,
    )

    windows = page.get_by_test_id("canary-windows")
    expect(windows.locator("tbody tr")).to_have_count(3)
    # Newest first: the failed window with its reason in words.
    expect(windows.locator("tbody tr").first).to_contain_text("Fail")
    expect(windows.locator("tbody tr").first).to_contain_text(P99_REASON)
    expect(windows).to_contain_text("12 canary requests, fewer than minRequests 50")
    expect(windows.locator(".verdict")).to_have_text(["Fail", "Inconclusive", "Pass"])

    compare = page.get_by_test_id("canary-compare")
    expect(compare.locator("tr[data-figure=latencyP99Ms]")).to_have_text(re.compile(r"Latency p99\s*960 ms\s*1,840 ms"))
    expect(compare.locator("tr[data-figure=errorRate]")).to_have_text(re.compile(r"Error rate\s*0\.43%\s*0\.71%"))
    # Token figures beside latency; a revision without them shows a dash.
    expect(compare.locator("tr[data-figure=ttftP95Ms]")).to_have_text(re.compile(r"TTFT p95\s*120 ms\s*230 ms"))
    expect(compare.locator("tr[data-figure=tpotP95Ms]")).to_have_text(re.compile(r"TPOT p95\s*—\s*42 ms"))
    expect(compare.locator("thead")).to_contain_text("Last 15m 0s")
    page.wait_for_selector("#canary-chart-errors .main-svg")
    page.wait_for_selector("#canary-chart-p99 .main-svg")
    expect(page.locator("#canary-chart-p99")).to_contain_text("canary canary-rev")
    expect(page.locator("#canary-chart-errors")).to_contain_text("stable stable-rev")
    panel.scroll_into_view_if_needed()
    shot(page, screenshot_dir / "detail-canary.png")
    panel.screenshot(path=str(screenshot_dir / "detail-canary-panel.png"))
    assert not errors, errors


def test_without_request_records_the_canary_panel_says_the_figures_are_not_available_and_reasons_stay_text(
    ms, viewer_client, page: Page
):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    open_page(page, ms, viewer_client, canary_state(ms, now, reason=forged("reason")), comparison=None)
    expect(page.get_by_test_id("canary-compare-missing")).to_contain_text("not available yet")
    expect(page.get_by_test_id("canary-windows")).to_contain_text(forged("reason"))
    expect(page.locator("#canary-charts")).to_be_hidden()
    no_script_ran(page)


def test_a_modelserving_without_canary_steps_has_no_canary_panel(ms, viewer_client, page: Page):
    open_page(page, ms, viewer_client, current_state(ms), comparison=None)
    expect(page.get_by_test_id("canary-panel")).to_be_hidden()


# --- Capacity ----------------------------------------------------------------------------------------
def test_the_capacity_panel_shows_roles_the_recommendation_with_its_reason_and_charts(
    ms, viewer_client, page: Page, screenshot_dir
):
    from rolloutui.services import capacity

    # The real answer for this ModelServing, then the figures of a loaded one with a release
    # (batching 16 per instance), as the simulated traffic would give them.
    body = capacity.capacity(ms["namespace"], ms["name"])
    polls = {"n": 0}

    def answer(route):
        polls["n"] += 1
        data = json.loads(json.dumps(body))
        data["time"] = body["time"] + 5 * polls["n"]
        data["traffic"] = {
            "rps": 20.0,
            "durationSeconds": [2, 20],
            "sent": 1000 + 90 * polls["n"],
            "completed": 900,
            "interrupted": 0,
            "rejected": 0,
            "inFlight": 60,
        }
        data["release"] = "r3 (v2) on staging"
        data["requestSource"] = "simulated traffic"
        data["batching"] = {"maxBatchSize": 16, "maxConcurrentSequences": 128}
        for role in data["roles"]:
            role.update(
                inFlight=30 + polls["n"],
                safeConcurrency=16,
                safeTotal=16 * role["instances"],
                requestRate=10.0,
                queueSeconds=0.25,
                gpuUtilisation=0.62,
                gpuMemory=0.71,
                createToServing={"medianSeconds": 42.5, "count": 4, "maxSeconds": 60.0},
            )
        loads = [capacity.RoleLoad(r["name"], r["perGroup"], r["inFlight"], 110.0, 16) for r in data["roles"]]
        data["recommendation"] = capacity.recommend(data["replicas"], loads, create_to_serving=42.5).to_json()
        route.fulfill(status=200, content_type="application/json", body=json.dumps(data))

    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    site = OfflineSite(page, viewer_client, full_state=lambda: current_state(ms))
    page.route(ORIGIN + f"/api/modelservings/{ms['namespace']}/{ms['name']}/capacity/**", answer)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    rec = page.get_by_test_id("capacity-recommendation")
    expect(rec).to_contain_text("recommendation, nothing is scaled")
    expect(page.get_by_test_id("capacity-recommended")).to_have_text("9 ServingGroups")
    expect(page.get_by_test_id("capacity-reason")).to_contain_text("110 / (16 x 0.8) = 8.6, rounded up")
    expect(page.get_by_test_id("capacity-reason")).to_contain_text("about 42 s from Created to Serving")
    rows = page.get_by_test_id("capacity-roles").locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(1)).to_contain_text("decode")
    expect(rows.nth(1)).to_contain_text("62%")
    expect(rows.nth(1)).to_contain_text("16 / 128")
    expect(page.get_by_test_id("capacity-notes")).to_contain_text("GPU: simulated")
    # prefill (1 per group) sets the count: 9 instances -> 9 groups.
    expect(page.get_by_test_id("capacity-reason")).to_contain_text("prefill:")
    # Two polls make a measured rate: 90 sent in 5 s -> 18 requests/s.
    page.wait_for_selector("#capacity-chart-flight .main-svg")
    page.wait_for_selector("#capacity-chart-gpu .main-svg")
    expect(page.locator("#capacity-chart-flight")).to_contain_text("decode safe total")
    page.wait_for_function(
        "() => window.__rolloutCapacity && window.__rolloutCapacity.points.some((p) => p.rate === 18)", timeout=15000
    )
    page.get_by_test_id("capacity-panel").screenshot(path=str(screenshot_dir / "detail-capacity-panel.png"))
    assert not errors, errors


def test_the_capacity_panel_says_whether_autoscale_is_on_with_its_bounds_and_escapes_what_it_shows(
    ms, operator, viewer_client, page: Page
):
    from rolloutui.services import autoscale, controls

    controls.autoscale(operator, ms["namespace"], ms["name"], min_replicas=2, max_replicas=6, reason="on", source="api")
    body = autoscale.capacity(ms["namespace"], ms["name"])
    answers = [body]

    def answer(route):
        route.fulfill(status=200, content_type="application/json", body=json.dumps(answers[-1]))

    site = OfflineSite(page, viewer_client, full_state=lambda: current_state(ms))
    page.route(ORIGIN + f"/api/modelservings/{ms['namespace']}/{ms['name']}/capacity/**", answer)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    line = page.get_by_test_id("capacity-autoscale")
    expect(line).to_contain_text("Autoscale on: between 2 and 6 ServingGroups")
    expect(line).to_have_attribute("data-enabled", "true")
    rec = page.get_by_test_id("capacity-recommendation")
    expect(rec).to_contain_text("recommendation, applied by the autoscaler within 2..6")
    expect(rec).not_to_contain_text("nothing is scaled")

    # Off with a hand-written annotation it cannot read: said as text, never parsed as HTML.
    hostile = json.loads(json.dumps(body))
    hostile["autoscale"] = {"enabled": False, "error": forged("autoscale-error"), "cooldownSeconds": 300}
    hostile["recommendation"]["label"] = forged("label")
    answers.append(hostile)
    page.reload()
    expect(line).to_have_attribute("data-enabled", "false")
    expect(line).to_contain_text("Autoscale off: <img src=x")
    no_script_ran(page)


def test_the_capacity_panel_reads_the_real_endpoint_without_a_release(ms, viewer_client, page: Page):
    site = OfflineSite(page, viewer_client, full_state=lambda: current_state(ms))
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("capacity-reason")).to_contain_text("safe concurrency per instance is unknown")
    expect(page.get_by_test_id("capacity-roles").locator("tbody tr")).to_have_count(2)


def stepping(state: dict, *, phase: str = "Paused") -> dict:
    """``state`` with its canary on the update revision and the step's partition (3 of 4) in the
    effective strategy, as the server sends it while the steps run."""
    state["updateRevision"] = state["canary"]["revision"]
    state["canary"]["phase"] = phase
    strategy = dict(state.get("strategy") or {})
    strategy["group"] = {**(strategy.get("group") or {}), "partition": {"value": "75%", "count": 3, "source": "canary"}}
    state["strategy"] = strategy
    return state


def test_while_canary_steps_run_promote_skips_the_current_step_and_the_header_shows_the_steps_partition(
    ms, operator_client, page: Page
):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    open_page(page, ms, operator_client, stepping(canary_state(ms, now)), comparison=None)
    expect(page.locator("#fact-partition")).to_have_text("3 · canary")
    promote = page.get_by_test_id("btn-promote")
    expect(promote).to_be_enabled()
    expect(page.get_by_test_id("btn-promote-full")).to_be_enabled()
    promote.click()
    expect(page.locator("#dialog")).to_contain_text("Skips canary step 2 (Pause 5m 0s)")


def test_a_canary_the_analysis_paused_says_so_in_the_banner_and_shows_the_condition_escaped(
    ms, operator_client, page: Page, screenshot_dir
):
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    state = stepping(canary_state(ms, now), phase="Failed")
    message = "canary error rate 31.0% is above the limit 5.0% (1 failed window in a row) " + forged("message")
    state["canary"]["message"] = message
    state["spec"]["paused"] = True
    state["conditions"] = [
        *(state.get("conditions") or []),
        {"type": "AnalysisFailed", "status": "True", "reason": "AnalysisFailed", "message": message},
    ]
    open_page(page, ms, operator_client, state, comparison=None)
    cause = page.get_by_test_id("paused-cause")
    expect(cause).to_be_visible()
    expect(cause).to_contain_text("Paused by the canary analysis: canary error rate 31.0% is above the limit 5.0%")
    expect(page.get_by_test_id("canary-condition")).to_contain_text("AnalysisFailed")
    expect(page.get_by_test_id("canary-condition")).to_contain_text("the analysis paused the rollout")
    expect(page.get_by_test_id("btn-promote")).to_be_disabled()
    expect(page.get_by_test_id("controls-why")).to_contain_text("The canary analysis stopped this canary")
    shot(page, screenshot_dir / "detail-canary-analysis-paused.png")
    no_script_ran(page)


def test_a_canary_paused_for_want_of_evidence_shows_the_shortfall_escaped_and_promote_overrides_it(
    ms, operator_client, page: Page, screenshot_dir
):
    """The traffic contract's inconclusiveLimit: the analysis paused the rollout (condition
    AnalysisInconclusive); the banner and the Canary panel say the shortfall, and promote stays
    the operator's to press."""
    from rolloutui.services import capacity

    now = capacity.clock()["now"]
    state = stepping(canary_state(ms, now), phase="Paused")
    shortfall = "3 windows with 4-12 canary requests, fewer than minRequests 20 " + forged("shortfall")
    state["canary"].update(
        failures=0,
        inconclusive=3,
        limits={"failureLimit": 1, "inconclusiveLimit": 3, "minPassWindows": 1, "minRequests": 20},
        analysisPause={"reason": "AnalysisInconclusive", "message": shortfall},
    )
    state["spec"]["paused"] = True
    state["conditions"] = [
        *(state.get("conditions") or []),
        {"type": "AnalysisInconclusive", "status": "True", "reason": "AnalysisInconclusive", "message": shortfall},
    ]
    open_page(page, ms, operator_client, state, comparison=None)
    cause = page.get_by_test_id("paused-cause")
    expect(cause).to_contain_text("Paused by the canary analysis: 3 windows with 4-12 canary requests")
    note = page.get_by_test_id("canary-inconclusive")
    expect(note).to_contain_text("AnalysisInconclusive")
    expect(note).to_contain_text("fewer than minRequests 20")
    expect(note).to_contain_text("overrides the analysis")
    expect(page.get_by_test_id("canary-panel")).to_contain_text("3 inconclusive in a row (inconclusiveLimit 3)")
    expect(page.get_by_test_id("btn-promote")).to_be_enabled()
    shot(page, screenshot_dir / "detail-canary-inconclusive-paused.png")
    no_script_ran(page)


def test_without_an_analysis_failure_the_banner_says_only_paused(ms, operator_client, page: Page):
    state = current_state(ms)
    state["spec"]["paused"] = True
    open_page(page, ms, operator_client, state, comparison=None)
    expect(page.get_by_test_id("paused-banner")).to_be_visible()
    expect(page.get_by_test_id("paused-cause")).to_be_hidden()
