"""Rollback by layer in the real product: `manage.py runall` with its demo driven by Debian's
Chromium. With v2 live in staging on `default/demo` (r2, after v1 as r1), the operator opens
"Roll back a layer…" on the live release, sees per layer what going back to r1's value would
change, picks the image, gives a reason and confirms: the image goes back to v1's while the model
stays v2's, the release stays live with the layer noted, and the audit has who and why.

Screenshots go to test-artifacts/screenshots/.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import TEST_PASSWORD
from tests.live.procs import runall

from .conftest import SCREENSHOTS
from .test_browser import confirm, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def demo_stack(tmp_path_factory):
    with runall(tmp_path_factory.mktemp("layer-var"), speed=8, password=TEST_PASSWORD) as stack:
        yield stack


def test_an_operator_rolls_back_only_the_image_of_the_live_release_from_the_releases_page(demo_stack, page: Page):
    url = demo_stack["url"]
    page.set_viewport_size({"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    sign_in(page, url, "admin")

    page.goto(url + "/releases/")
    live = page.locator("[data-testid=env-staging] [data-target='default/demo'] [data-testid=rel-live]")
    expect(live).to_contain_text("r1 · v1", timeout=60000)
    page.get_by_test_id("btn-new-release").click()
    page.get_by_test_id("nr-environment").select_option("staging")
    page.get_by_test_id("nr-version").select_option("demo-llm:v2")
    confirm(page, "v2 to staging")
    row = page.locator("tr[data-release='default/demo/2']")
    expect(row).to_contain_text("Deploying", timeout=15000)

    # The live release offers its layers; r1 (not live) does not.
    expect(page.locator("tr[data-release='default/demo/1'] [data-action=rollback-layer]")).to_have_count(0)
    row.locator("[data-action=rollback-layer]").click()
    layers = page.get_by_test_id("layer-rollback")
    expect(layers).to_contain_text("Previous release: r1 · v1", timeout=15000)
    expect(layers.locator(".layer[data-layer=image]")).to_contain_text("vllm-openai@sha256")
    expect(layers.locator(".layer[data-layer=model]")).to_contain_text("demo-llm.v1")
    page.get_by_test_id("rollback-layer-image").click()
    expect(page.get_by_test_id("layer-picked")).to_contain_text("The image goes back")
    expect(page.get_by_test_id("dialog-confirm")).to_have_text("Roll back the image")
    page.screenshot(path=str(SCREENSHOTS / "releases-layer-rollback.png"))
    confirm(page, "the v2 image leaks memory; keep the v2 weights")

    expect(row).to_contain_text("image back to r1's", timeout=15000)
    expect(live).to_contain_text("r2 · v2")
    audit = json.loads(page.evaluate("() => fetch('/api/audit/?action=rollback_layer').then((r) => r.text())"))
    record = audit["results"][0]
    assert (record["who"], record["reason"], record["result"], record["source"]) == (
        "admin",
        "the v2 image leaks memory; keep the v2 weights",
        "ok",
        "page",
    )
    manifest = json.loads(
        page.evaluate("() => fetch('/api/modelservings/default/demo/manifest').then((r) => r.text())")
    )
    roles = manifest["spec"]["template"]["roles"]
    v1_image = {c["field"]: c for c in record["details"]["changes"]}["image"]["to"]
    for role in roles:
        container = role["entryTemplate"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in container.get("env") or []}
        assert container["image"] == v1_image and env["MODEL_VERSION"] == "demo-llm.v2"
    assert errors == []
