"""The ModelServing page's progress charts (issue 31, "Looks and habits"): drawn from the state the
page opens with (a first sample shows as a dot; a line needs two, and the charts sat empty until
later states came), and the skew chart hidden, with one line saying why, when no roles are
coordinated. In Chromium against Django in this process (``offline.OfflineSite``)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .offline import OfflineSite

pytestmark = pytest.mark.django_db

TRACES = """(id) => { const el = document.getElementById(id);
  return el && el.data ? el.data.map((t) => ({ name: t.name, mode: t.mode, points: (t.x || []).length })) : null; }"""


def test_the_charts_draw_the_first_state_at_once_and_the_skew_chart_says_why_it_is_hidden(
    ms, operator_client, page: Page, screenshot_dir
):
    site = OfflineSite(page, operator_client, full_state=lambda: ms["state"])
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    # Plotly (4.6 MB, here through the test's route) is loaded after the page's first paint, so
    # after its load event too: the wait covers the download.
    expect(page.locator("#chart-progress .main-svg").first).to_be_attached(timeout=20000)
    progress = page.evaluate(TRACES, "chart-progress")
    capacity = page.evaluate(TRACES, "chart-capacity")
    assert progress and capacity, (progress, capacity)
    # One state so far: each trace's single point is drawn as a marker, so the chart shows it.
    for trace in progress + capacity:
        assert trace["points"] > 1 or "markers" in trace["mode"], trace

    expect(page.get_by_test_id("chart-skew")).to_be_hidden()
    note = page.get_by_test_id("chart-skew-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("no roles are coordinated")
    page.screenshot(path=str(screenshot_dir / "charts-first-draw.png"), full_page=True)
