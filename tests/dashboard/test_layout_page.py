"""Every page of the dashboard at 1280, 1440 and 1920 px wide, with digest images
(``image@sha256:...``, the longest names an operator meets) and the topology's pod panel open: no
element reaches past the edge of its panel and no clickable control is covered by another (issue 31,
bug 2: "Roll back to #N" sat under the next panel). Served by Django in this process
(``offline.OfflineSite``) from a ModelServing on the database-backed simulated cluster, and the
demo InferenceService (tests/dashboard/test_isvc_page.py) pinned to a digest for its page.

How it is judged, in the page: an element's bounding rectangle must lie within its panel's unless an
element between them scrolls or clips it (a table that scrolls inside its panel is fine; one that
spills over the next is not); and for every visible button, link, input and select, scrolled into
view, ``document.elementFromPoint`` at its centre must be the control or inside it.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from .offline import OfflineSite
from .test_isvc_page import demo_isvc, settle  # noqa: F401  (the fixture)
from .test_operator_day_page import LiveSim, click_cell, live_sim  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db

WIDTHS = (1280, 1440, 1920)
DIGEST_V1 = "registry.example.com/inference/vllm-openai@sha256:" + "3f" * 32
DIGEST_V2 = "registry.example.com/inference/vllm-openai@sha256:" + "a7" * 32

# Containers an element must fit in: the panels, the page header, the controls bar and an open dialog.
PANELS = ".panel, .ms-head, .controls, .topbar, dialog[open]"
CONTROLS = "button, a[href], input:not([type=hidden]), select, textarea, summary, [role=button]"

# In the page: what spills past its panel and which controls another element covers.
FIND_PROBLEMS = """([panelSelector, controlSelector, scope]) => {
  const root = scope ? document.querySelector(scope) : document;
  const shown = (el) => {
    if (el.closest('[hidden], .js-plotly-plot')) return false;
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none' && cs.opacity !== '0';
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.dataset && el.dataset.testid ? '[' + el.dataset.testid + ']' : '') +
    ' "' + (el.textContent || el.value || '').trim().slice(0, 40) + '"';
  const scrolls = (el) => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(el).overflowX);
  const problems = [];
  const panels = scope ? [root] : [...document.querySelectorAll(panelSelector)].filter(shown);
  for (const panel of panels) {
    const box = panel.getBoundingClientRect();
    for (const el of panel.querySelectorAll('*')) {
      if (!shown(el)) continue;
      // Inside a scroller or clipper between it and the panel: that box is what must fit.
      let clipped = false;
      for (let up = el.parentElement; up && up !== panel; up = up.parentElement) {
        if (scrolls(up)) { clipped = true; break; }
      }
      if (clipped) continue;
      const r = el.getBoundingClientRect();
      if (r.right > box.right + 1 || r.left < box.left - 1) {
        problems.push('past its panel: ' + name(el) + ' spans ' + Math.round(r.left) + '..' +
          Math.round(r.right) + ', panel ' + name(panel).slice(0, 60) + ' ' + Math.round(box.left) + '..' +
          Math.round(box.right));
      }
    }
  }
  if (!scope && document.documentElement.scrollWidth > window.innerWidth + 1) {
    problems.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  }
  for (const el of root.querySelectorAll(controlSelector)) {
    if (!shown(el)) continue;
    el.scrollIntoView({ block: 'center', inline: 'center' });
    const r = el.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) {
      problems.push('out of reach: ' + name(el));
      continue;
    }
    const hit = document.elementFromPoint(x, y);
    const label = el.labels && el.labels.length ? [...el.labels] : [];
    if (!(hit === el || el.contains(hit) || label.some((l) => l.contains(hit)))) {
      problems.push('covered: ' + name(el) + ' by ' + (hit ? name(hit) : 'nothing'));
    }
  }
  window.scrollTo(0, 0);
  return problems;
}"""


def problems(page: Page, scope: str | None = None) -> list[str]:
    return page.evaluate(FIND_PROBLEMS, [PANELS, CONTROLS, scope])


@pytest.fixture
def digest_sim(live_sim):  # noqa: F811  (the fixture imported above)
    """The operator's day ModelServing, rolled to one digest image and then another: three
    revisions, every pod on a digest."""
    for image in (DIGEST_V1, DIGEST_V2):
        live_sim.set_image(image)
        live_sim.run(
            until=lambda s: s["converged"] and all(i["revision"] == s["updateRevision"] for i in s["instances"])
        )
    return live_sim


def pages_of(sim: LiveSim) -> list[tuple[str, str]]:
    ns, name = sim.ms["namespace"], sim.ms["name"]
    return [
        ("list", "/"),
        ("detail", f"/modelservings/{ns}/{name}/"),
        ("edit", f"/modelservings/{ns}/{name}/edit/"),
        ("apply", "/manifests/apply/"),
        ("releases", "/releases/"),
        ("notifications", "/notifications/"),
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_no_element_leaves_its_panel_and_no_control_is_covered_on_any_page_with_digest_images(
    digest_sim, operator_client, page: Page, width, screenshot_dir
):
    site = OfflineSite(page, operator_client, full_state=digest_sim.state)
    page.set_viewport_size({"width": width, "height": 1000})
    found = {}
    for label, path in pages_of(digest_sim):
        page.goto(site.url(path))
        page.wait_for_load_state("networkidle")
        if label == "detail":
            expect(page.get_by_test_id("conn")).to_have_text("live")
            expect(page.get_by_test_id("revisions").locator("tbody tr")).to_have_count(3)
            click_cell(page, 0)
            expect(page.get_by_test_id("cell-detail")).to_contain_text("@sha256:")
            page.screenshot(path=str(screenshot_dir / f"layout-detail-{width}.png"), full_page=True)
        found[label] = problems(page)
        if label == "detail":
            page.get_by_test_id("btn-set-image").click()
            expect(page.locator("#dialog")).to_contain_text("Now: " + DIGEST_V2)
            found["set-image dialog"] = problems(page, "dialog[open]")
    bad = [f"{label}: {problem}" for label, found_there in found.items() for problem in found_there]
    assert not bad, f"at {width} px:\n" + "\n".join(bad)


def test_the_sign_in_page_keeps_its_form_inside_its_panel_at_every_width(page: Page, client):
    site = OfflineSite(page, client)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.goto(site.url("/accounts/login/"))
        assert problems(page) == [], width


def test_the_inferenceservice_page_and_the_list_hold_a_digest_image_inside_their_panels_at_every_width(
    demo_isvc,  # noqa: F811  (the fixture imported above)
    operator_client,
    page: Page,
):
    resp = operator_client.post(
        "/api/inferenceservices/default/llm/isvc-set-image",
        json.dumps({"image": DIGEST_V2, "reason": "pin the digest"}),
        content_type="application/json",
    )
    assert resp.status_code == 200, resp.content
    settle(demo_isvc, 30)
    from rolloutui.services.kserve import controls as kserve_controls

    # The InferenceService page's websocket answers with its state, as the consumer does.
    site = OfflineSite(page, operator_client, full_state=lambda: kserve_controls.get_state("default", "llm"))
    found = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        for path in ("/inferenceservices/default/llm/", "/"):
            page.goto(site.url(path))
            page.wait_for_load_state("networkidle")
            if path != "/":
                expect(page.locator("#fact-image")).to_have_text(DIGEST_V2)
            found[f"{path} at {width} px"] = problems(page)
    bad = [f"{where}: {problem}" for where, found_there in found.items() for problem in found_there]
    assert not bad, "\n".join(bad)
