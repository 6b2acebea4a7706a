"""Revision colours follow the revision's hash, not its number (issue 31, "Looks and habits"): a
rollback gives the restored template the next number, and the same pods used to turn from blue to
teal to pink as the numbers moved. Now the same hash keeps its colour in the revisions table, the
topology's legend and its cells, whatever number it has; and the topology's cells say their state
in words (never by colour alone), with a label over every group column.

In Chromium against Django in this process (``offline.OfflineSite``), with the states of a
ModelServing on the database-backed simulated cluster rolled from engine:v1 to engine:v2 and back.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .offline import OfflineSite
from .test_operator_day_page import live_sim  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db

# Per hash: the colour of its dot in the revisions table and of its swatch in the legend, and the
# pixel colour of a Ready cell of that revision on the canvas (read next to the cell's corner).
COLOURS = """() => {
  const rgb = (c) => getComputedStyle(c).backgroundColor;
  const out = { table: {}, legend: {}, cells: {} };
  for (const row of document.querySelectorAll('#revisions tbody tr')) {
    const hash = row.querySelector('td:nth-child(4) .mono').textContent;
    out.table[hash] = { number: Number(row.dataset.rev), colour: rgb(row.querySelector('.rev-dot')) };
  }
  const state = window.__rollout.state;
  const numbers = new Map(state.revisions.map((r) => [r.number, r.hash]));
  for (const lg of document.querySelectorAll('#legend .lg')) {
    const m = /^#(\\d+)/.exec(lg.textContent);
    if (m) out.legend[numbers.get(Number(m[1]))] = rgb(lg.querySelector('.sw'));
  }
  const topo = window.__rollout.topo;
  const ctx = topo.canvas.getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  for (const inst of state.instances) {
    if (inst.state !== 'Ready') continue;
    const slot = topo.layout.slots.findIndex((s) => s.role === inst.role && s.ordinal === inst.ordinal);
    const [x, y] = topo.cellXY(inst.group, slot);
    const [r, g, b] = ctx.getImageData(Math.round((x + 3) * dpr), Math.round((y + 3) * dpr), 1, 1).data;
    out.cells[inst.revision] = `rgb(${r}, ${g}, ${b})`;
  }
  out.layout = { cellW: topo.layout.cellW, cell: topo.layout.cell, groups: topo.layout.groups,
                 width: topo.layout.width, canvasW: topo.canvas.getBoundingClientRect().width };
  return out;
}"""


def test_a_revision_keeps_its_colour_when_a_rollback_renumbers_it_in_the_table_the_legend_and_the_cells(
    live_sim,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
    screenshot_dir,
):
    first = live_sim.state()
    (v1,) = [r["hash"] for r in first["revisions"]]
    live_sim.set_image("engine:v2")
    live_sim.run(until=lambda s: s["converged"] and all(i["revision"] == s["updateRevision"] for i in s["instances"]))
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url("/modelservings/default/day/"))
    expect(page.get_by_test_id("revisions").locator("tbody tr")).to_have_count(2)
    before = page.evaluate(COLOURS)
    v2 = live_sim.state()["updateRevision"]
    assert before["table"][v1]["number"] == 1 and before["table"][v2]["number"] == 2
    assert before["table"][v1]["colour"] != before["table"][v2]["colour"]
    assert before["legend"][v2] == before["table"][v2]["colour"] == before["cells"][v2]

    # Back to engine:v1: the same template (hash) returns under the next number.
    live_sim.set_image("engine:v1")
    after_state = live_sim.run(
        until=lambda s: s["converged"] and all(i["revision"] == s["updateRevision"] for i in s["instances"])
    )
    assert after_state["updateRevision"] == v1
    site.socket.send(after_state)
    expect(page.get_by_test_id("revisions").locator("tbody tr")).to_have_count(2)
    expect(page.locator("#revisions tbody tr", has_text=v1)).to_have_attribute("data-rev", "3")
    after = page.evaluate(COLOURS)
    assert after["table"][v1]["number"] == 3
    assert after["table"][v1]["colour"] == before["table"][v1]["colour"]
    assert after["table"][v2]["colour"] == before["table"][v2]["colour"]
    assert after["legend"][v1] == after["table"][v1]["colour"] == after["cells"][v1]
    page.screenshot(path=str(screenshot_dir / "revision-colours-after-rollback.png"), full_page=True)


def test_the_topology_of_a_small_workload_fills_its_panel_labels_every_column_and_says_each_cells_state(
    live_sim,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
):
    site = OfflineSite(page, operator_client, full_state=live_sim.state)
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(site.url("/modelservings/default/day/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    layout = page.evaluate(COLOURS)["layout"]
    # Two groups of one role instance: the cells take a good share of the panel's width.
    assert layout["groups"] == 2 and layout["cell"] >= 30
    assert 2 * layout["cellW"] >= 0.2 * layout["width"], layout
    name = page.get_by_test_id("topology").get_attribute("aria-label")
    assert "2 Ready" in name, name

    # A failed instance: its state in the cell's words, the accessible name and the hidden list.
    state = live_sim.state()
    state["instances"][0] = {**state["instances"][0], "state": "Failed", "surge": True}
    site.socket.send(state)
    topology = page.get_by_test_id("topology")
    expect(topology).to_have_attribute(
        "aria-label", "Topology: 2 role instances in 2 ServingGroups. 1 Failed, 1 Ready, 1 surge."
    )
    cells = page.locator(".topo-cells li")
    expect(cells).to_have_count(1)
    expect(cells).to_have_text(f"group {state['instances'][0]['group']} · decode 0: Failed, surge, revision #1")
    drawn = page.evaluate(
        """() => { const t = window.__rollout.topo; const texts = [];
                   const ctx = t.canvas.getContext('2d'); const orig = ctx.fillText.bind(ctx);
                   ctx.fillText = (s, ...rest) => { texts.push(String(s)); return orig(s, ...rest); };
                   t.draw(); ctx.fillText = orig; return texts; }"""
    )
    assert {"Failed", "Ready", "S", "group 0", "group 1", "decode"} <= set(drawn), drawn
