"""The release pages' scripts in Chromium, served by Django in this process
(``tests.dashboard.offline.OfflineSite``): the Releases page plans and deploys a release, shows the
layered comparison before a rollback and posts it; the ModelServing page shows the release, the gate
funnel and Ready beside Serving; forged record values stay text."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from rolloutui.services.releases import deploy, records
from tests.dashboard.offline import OfflineSite
from tests.dashboard.test_pages_offline import forged, no_script_ran, shot

from .conftest import SCREENSHOTS, version_values


def errors_of(page: Page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def test_the_releases_page_plans_deploys_and_rolls_back_with_the_layers_shown(world, operator_client, page: Page):
    errors = errors_of(page)
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/releases/"))
    expect(page.get_by_test_id("env-staging")).to_contain_text("default/chat")
    expect(page.get_by_test_id("env-production")).to_contain_text("approval required")
    expect(page.locator("tr[data-version='chat-llm:v2']")).to_contain_text("Registered")

    # A new release of v2 to staging, deployed at once.
    page.get_by_test_id("btn-new-release").click()
    page.get_by_test_id("nr-environment").select_option("staging")
    page.get_by_test_id("nr-version").select_option("chat-llm:v2")
    page.get_by_test_id("nr-profile").select_option("pd-small")
    page.fill("[data-testid=dialog-reason]", "try v2 in staging")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    row = page.locator("tr[data-release='default/chat/1']")
    expect(row).to_contain_text("Deploying")
    expect(row).to_contain_text("try v2 in staging")
    # Planned and deployed in one request (a refused deploy leaves no Pending release behind).
    assert [(m, p, b.get("deploy")) for m, p, b in site.requests] == [("POST", "/api/deployment-revisions/", True)]

    # Production requires approval: the dialog warns, and the refused deploy says why.
    page.get_by_test_id("btn-new-release").click()
    page.get_by_test_id("nr-environment").select_option("production")
    page.get_by_test_id("nr-version").select_option("chat-llm:v2")
    expect(page.get_by_test_id("nr-warning")).to_contain_text("requires an approved version")
    page.fill("[data-testid=dialog-reason]", "ship it")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog-error")).to_contain_text("requires an approved model version")
    page.click("#dialog-cancel")

    # r2 (v1) replaces r1; rolling back to r1 shows what changes, layer by layer.
    dr, _ = records.create_release(
        world["v1"].created_by, {"environment": "staging", "modelVersion": "chat-llm:v1", "reason": "v1"}, source="api"
    )
    deploy.deploy(world["v1"].created_by, "default", "chat", dr.number, reason="back to v1", source="api")
    page.reload()
    back = page.locator("tr[data-release='default/chat/1'] [data-action=rollback-release]")
    back.click()
    layers = page.get_by_test_id("layers")
    expect(layers.locator(".layer[data-layer=model]")).to_contain_text("MODEL_URI")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "releases-rollback-dialog.png"))
    expect(layers.locator(".layer[data-layer=model]")).to_contain_text("MODEL_URI")
    expect(layers.locator(".layer[data-layer=image]")).to_contain_text("vllm-openai")
    expect(layers.locator(".layer[data-layer=schema]")).to_contain_text("chat-in-v2")
    expect(layers.locator(".layer[data-layer=config]")).to_contain_text("unchanged")
    page.fill("[data-testid=dialog-reason]", "v1 answers wrongly")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog")).not_to_be_visible()
    expect(page.locator("tr[data-release='default/chat/3']")).to_contain_text("rollback to r1")
    expect(page.locator("tr[data-release='default/chat/2']")).to_contain_text("RolledBack")
    page.set_viewport_size({"width": 1440, "height": 1000})
    shot(page, SCREENSHOTS / "releases.png")
    assert site.requests[-1][1:] == (
        "/api/deployment-revisions/default/chat/1/rollback-release",
        {"reason": "v1 answers wrongly"},
    )
    assert errors == []


def test_an_approver_approves_from_the_releases_page(world, approver_client, page: Page):
    errors = errors_of(page)
    site = OfflineSite(page, approver_client)
    page.goto(site.url("/releases/"))
    expect(page.get_by_test_id("btn-new-release")).to_be_disabled()
    page.locator("tr[data-version='chat-llm:v2'] [data-action=approve]").click()
    page.fill("[data-testid=dialog-reason]", "eval 4711 passed")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("tr[data-version='chat-llm:v2']")).to_contain_text("Approved")
    assert site.requests[-1][1:] == ("/api/model-versions/chat-llm/v2/approve", {"reason": "eval 4711 passed"})
    assert errors == []


def test_the_modelserving_page_shows_the_release_the_gate_funnel_and_ready_beside_serving(
    world, operator, operator_client, page: Page
):
    from rolloutui.services import state

    dr, _ = records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v2", "reason": "v2"}, source="api"
    )
    deploy.deploy(operator, "default", "chat", dr.number, reason="v2 please", source="api")
    world["sim"].run(4, "chat")
    errors = errors_of(page)
    site = OfflineSite(page, operator_client, full_state=lambda: state.get_state("default", "chat"))
    page.goto(site.url("/modelservings/default/chat/"))
    expect(page.get_by_test_id("fact-release")).to_contain_text("r1 · v2")
    expect(page.get_by_test_id("release-summary")).to_contain_text("Deploying")
    expect(page.get_by_test_id("release-summary")).to_contain_text("v2 please")
    current = state.get_state("default", "chat")
    rows = page.locator("#gate-funnel .gate-row")
    expect(rows).to_have_count(7)
    for f in current["gateFunnel"]:
        expect(page.locator(f"#gate-funnel .gate-row[data-gate={f['gate']}] .gate-count")).to_have_text(str(f["count"]))
    ready = sum(1 for i in current["instances"] if i["state"] == "Ready")
    serving = sum(1 for i in current["instances"] if i["gate"] == "Serving")
    expect(page.get_by_test_id("fact-serving")).to_have_text(f"{ready} / {serving} of {len(current['instances'])}")
    # The topology's tooltip and the cell's pod panel show the instance's gate beside its state.
    first = current["instances"][0]
    # The panels above it (release, gates, probe advice) may push it below the fold.
    page.get_by_test_id("topology").scroll_into_view_if_needed()
    box = page.get_by_test_id("topology").bounding_box()
    layout = page.evaluate(
        "() => { const L = window.__rollout.topo.layout; return { labelW: L.labelW, cell: L.cell, gap: L.gap }; }"
    )
    x = box["x"] + layout["labelW"] + layout["cell"] / 2
    y = box["y"] + 14 + layout["cell"] / 2
    page.mouse.move(x, y)
    expect(page.locator("#tip")).to_contain_text(f"gate {first['gate']}")
    page.mouse.click(x, y)
    expect(page.get_by_test_id("cell-gate")).to_contain_text(first["gate"])
    for gate in first["gateTimes"]:
        expect(page.locator(f"[data-testid=cell-gates] [data-gate={gate}]")).to_contain_text(f"✓ {gate}")
    # The Revisions panel names the release beside the hash it produced.
    expect(page.get_by_test_id("rev-release")).to_have_text("r1 · v2")
    page.set_viewport_size({"width": 1440, "height": 1000})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot(page, SCREENSHOTS / "detail-release.png")
    assert errors == []


def test_forged_record_values_render_as_text_on_the_releases_page(world, operator, operator_client, page: Page):
    records.register_model_version(
        operator, version_values("v9", frameworkVersion=forged("fw")[:64], labels={"k": forged("label")}), source="api"
    )
    records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v9", "reason": forged("reason")}, source="api"
    )
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/releases/"))
    expect(page.locator("tr[data-release='default/chat/1']")).to_contain_text("onerror")
    no_script_ran(page)


pytestmark = [pytest.mark.django_db(transaction=False)]
