"""The InferenceService page in Chromium, against the embedded cluster in this process:
the demo's InferenceService (default/llm, Standard mode, the ConfigMap's maxSurge 50%) run by the
simulated KServe and Deployment controllers. The operator sees its effective strategy with the
source of each value, starts a canary from the page and promotes it; the list shows both kinds.
Screenshots go to test-artifacts/screenshots/isvc-*.png."""

from __future__ import annotations

import copy

import pytest
from playwright.sync_api import Page, expect

from controller.runtime.kserve import passes as kserve_passes
from controller.simcluster.database.demo import DEMO_INFERENCESERVICE, KSERVE_DEPLOY
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.kserve import controller as kserve_controller

from .offline import OfflineSite
from .test_pages_offline import forged, no_script_ran, shot

pytestmark = pytest.mark.django_db
PAGE = "/inferenceservices/default/llm/"


class Clock:
    def __init__(self):
        self.t = 1_000_000.0

    def now(self):
        return self.t


@pytest.fixture
def demo_isvc(db):
    from tests.live.helpers import config

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(KSERVE_DEPLOY))
    cluster.create_object(copy.deepcopy(DEMO_INFERENCESERVICE))
    settle(cluster)
    return cluster


def settle(cluster: DatabaseCluster, seconds: int = 60, *, site: OfflineSite | None = None) -> None:
    """Ticks of the simulated cluster, each followed (as the live app's tick is) by the next step
    of a promote or rollback handed over in steps; with ``site``, then the state on the open page's
    websocket, as the worker's publish after a tick makes the consumer send it."""
    for _ in range(seconds):
        cluster.clock.t += 1
        tick(cluster)
        kserve_passes.advance_handovers(cluster=cluster)
    if site is not None:
        site.socket.send(site.socket.full_state())


def isvc_site(page: Page, client, name: str = "llm") -> OfflineSite:
    """The offline site, its websocket answering with the InferenceService's state as the consumer
    does (``kserve_controls.get_state``)."""
    from rolloutui.services.kserve import controls as kserve_controls

    return OfflineSite(page, client, full_state=lambda: kserve_controls.get_state("default", name))


def isvc_spec(cluster):
    return cluster.get_object("InferenceService", "default", "llm")["spec"]


def run_action(page: Page, label: str, fields: dict[str, str], reason: str) -> None:
    page.locator("#isvc-buttons button", has_text=label).click()
    for name, value in fields.items():
        page.locator(f"#dialog-body [data-field='{name}']").fill(value)
    page.get_by_test_id("dialog-reason").fill(reason)
    page.get_by_test_id("dialog-confirm").click()
    expect(page.locator("#dialog")).not_to_be_visible()


def test_the_operator_sees_the_strategy_with_sources_starts_a_canary_and_promotes_it(
    demo_isvc, operator_client, page: Page, screenshot_dir
):
    site = isvc_site(page, operator_client)
    page.goto(site.url(PAGE))
    strategy = page.get_by_test_id("strategy")
    row = strategy.locator("tr[data-deployment='llm-predictor']")
    # maxSurge 50% of 4 = 2 pods from the ConfigMap; maxUnavailable KServe's 25% of 4 = 1 pod.
    expect(row).to_contain_text("50% = 2 pods ConfigMap inferenceservice-config")
    expect(row).to_contain_text("25% = 1 pod KServe default")
    expect(page.get_by_test_id("fact-mode")).to_have_text("Standard")
    expect(page.get_by_test_id("phase")).to_have_text("Healthy")
    expect(page.locator("#isvc-buttons button[data-action='isvc-promote']")).to_be_disabled()
    expect(page.locator("[data-why='isvc-promote']")).to_contain_text("there is no canary")
    expect(page.locator("[data-why='isvc-resume']")).to_contain_text("no Deployment is paused")
    shot(page, screenshot_dir / "isvc-1-strategy.png")

    run_action(page, "Start canary", {"percent": "25", "image": "vllm/vllm-openai:v0.9.2"}, "try 0.9.2 on a quarter")
    (entry,) = isvc_spec(demo_isvc)["canary"]
    assert entry["trafficPercent"] == 25 and entry["predictor"]["model"]["image"] == "vllm/vllm-openai:v0.9.2"
    settle(demo_isvc, 5, site=site)
    expect(page.get_by_test_id("fact-canary")).to_contain_text("canary 25%")
    shot(page, screenshot_dir / "isvc-2-canary-starting.png")
    settle(demo_isvc, site=site)
    expect(page.get_by_test_id("fact-canary")).to_have_text("canary 25%")
    expect(page.get_by_test_id("traffic")).to_contain_text("25%")
    expect(page.get_by_test_id("traffic")).to_contain_text("75%")
    expect(page.get_by_test_id("components").locator("[data-deployment='llm-canary-predictor']")).to_be_visible()
    expect(page.get_by_test_id("history")).to_contain_text("try 0.9.2 on a quarter")
    shot(page, screenshot_dir / "isvc-3-canary-ready.png")

    run_action(page, "Promote canary", {}, "0.9.2 is as good")
    # Promoting goes in steps: first the canary is scaled to the predictor's 4 pods (issue 31).
    (entry,) = isvc_spec(demo_isvc)["canary"]
    assert entry["predictor"]["minReplicas"] == 4
    handover = page.get_by_test_id("handover")
    expect(handover).to_be_visible()
    expect(page.locator("#handover-title")).to_have_text("Promoting canary canary")
    expect(handover.locator("li[data-step='scale'][data-state='active']")).to_contain_text(
        "scale canary canary to 4 pods"
    )
    expect(handover.locator("li[data-step='switch'][data-state='pending']")).to_contain_text("becomes the predictor")
    settle(demo_isvc, 5, site=site)
    expect(handover.locator("li[data-step='scale']")).to_contain_text("of 4 pods available")
    shot(page, screenshot_dir / "isvc-4-promoting.png")
    settle(demo_isvc, site=site)
    spec = isvc_spec(demo_isvc)
    assert "canary" not in spec and spec["predictor"]["model"]["image"] == "vllm/vllm-openai:v0.9.2"
    settle(demo_isvc, site=site)
    expect(handover).to_be_hidden()
    expect(page.get_by_test_id("fact-canary")).to_have_text("none")
    expect(page.locator("#fact-image")).to_have_text("vllm/vllm-openai:v0.9.2")
    expect(page.get_by_test_id("phase")).to_have_text("Healthy")
    expect(page.get_by_test_id("history").locator("tr[data-action='isvc_promote']")).to_contain_text("0.9.2 is as good")
    shot(page, screenshot_dir / "isvc-5-promoted.png")
    sources = [(r[0], r[1]) for r in site.requests]
    assert ("POST", "/api/inferenceservices/default/llm/isvc-canary") in sources
    assert ("POST", "/api/inferenceservices/default/llm/isvc-promote") in sources
    no_script_ran(page)


def test_a_refused_control_shows_the_reason_in_the_dialog(demo_isvc, operator_client, page: Page):
    site = isvc_site(page, operator_client)
    page.goto(site.url(PAGE))
    page.locator("#isvc-buttons button", has_text="Start canary").click()
    page.locator("#dialog-body [data-field='percent']").fill("25")
    page.get_by_test_id("dialog-reason").fill("no image")
    page.get_by_test_id("dialog-confirm").click()
    expect(page.locator("#dialog-error")).to_contain_text("a Standard-mode canary runs a new image")
    assert "canary" not in isvc_spec(demo_isvc)


def test_a_viewer_sees_the_controls_disabled(demo_isvc, viewer_client, page: Page):
    site = isvc_site(page, viewer_client)
    page.goto(site.url(PAGE))
    expect(page.get_by_test_id("controls-why")).to_contain_text("Read only")
    for button in page.locator("#isvc-buttons button").all():
        expect(button).to_be_disabled()


def test_the_list_shows_both_kinds_with_a_kind_filter_and_escapes_names(
    demo_isvc, operator_client, page: Page, screenshot_dir
):
    from .helpers import create_modelserving

    create_modelserving("chat", partition=0)
    demo_isvc.patch_object(
        "InferenceService", "default", "llm", {"metadata": {"annotations": {"note": forged("annotation")}}}
    )
    site = isvc_site(page, operator_client)
    page.goto(site.url("/"))
    isvc_row = page.locator(".ms-row[data-key='default/llm#InferenceService']")
    expect(isvc_row).to_contain_text("InferenceService")
    expect(isvc_row).to_contain_text("Standard")
    expect(page.locator(".ms-row[data-key='default/chat']")).to_contain_text("ModelServing")
    page.get_by_test_id("kind-filter").select_option("InferenceService")
    expect(page.locator(".ms-row[data-key='default/chat']")).to_be_hidden()
    expect(isvc_row).to_be_visible()
    shot(page, screenshot_dir / "isvc-0-list.png")
    isvc_row.locator("a").click()
    expect(page.get_by_test_id("fact-mode")).to_have_text("Standard")
    no_script_ran(page)


def test_a_serverless_canary_from_the_page_splits_the_traffic_and_pause_says_why_it_is_disabled(
    db, operator_client, page: Page, screenshot_dir
):
    from tests.live.helpers import config

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(KSERVE_DEPLOY))
    body = copy.deepcopy(DEMO_INFERENCESERVICE)
    body["metadata"]["annotations"] = {"serving.kserve.io/deploymentMode": "Serverless"}
    body["spec"]["predictor"]["minReplicas"] = 2
    cluster.create_object(body)
    settle(cluster)
    site = isvc_site(page, operator_client)
    page.goto(site.url(PAGE))
    # The legacy annotation value is shown by the mode's current name (KServe 0.16 renamed it).
    expect(page.get_by_test_id("fact-mode")).to_have_text("Knative")
    expect(page.locator("#isvc-buttons button[data-action='isvc-pause']")).to_be_disabled()
    expect(page.locator("[data-why='isvc-pause']")).to_contain_text("pause applies to Standard mode only")
    run_action(page, "Start canary", {"percent": "20", "image": "vllm/vllm-openai:v0.9.2"}, "a fifth to 0.9.2")
    assert isvc_spec(cluster)["predictor"]["canaryTrafficPercent"] == 20
    settle(cluster, site=site)
    expect(page.get_by_test_id("fact-canary")).to_contain_text("20% to llm-predictor-00002")
    expect(page.get_by_test_id("traffic")).to_contain_text("80%")
    shot(page, screenshot_dir / "isvc-5-serverless-canary.png")
    run_action(page, "Roll back canary", {}, "errors up")
    assert isvc_spec(cluster)["predictor"]["canaryTrafficPercent"] == 0
    settle(cluster, site=site)
    expect(page.get_by_test_id("traffic").locator("tr[data-revision='llm-predictor-00001']")).to_contain_text("100%")
    no_script_ran(page)


def test_values_from_the_cluster_and_the_audit_stay_text_on_the_inferenceservice_page(
    demo_isvc, operator_client, page: Page
):
    import json

    image = forged("image")
    resp = operator_client.post(
        "/api/inferenceservices/default/llm/isvc-set-image",
        json.dumps({"image": image, "reason": forged("reason")}),
        content_type="application/json",
    )
    assert resp.status_code == 200, resp.content
    settle(demo_isvc, 5)
    site = isvc_site(page, operator_client)
    page.goto(site.url(PAGE))
    expect(page.locator("#fact-image")).to_have_text(image)
    expect(page.get_by_test_id("history")).to_contain_text("onerror")
    page.locator("#isvc-buttons button", has_text="Set image").click()
    expect(page.locator("#dialog-body [data-field='image']")).to_have_attribute("placeholder", "now " + image)
    no_script_ran(page)


def test_a_recreate_predictor_is_named_an_outage_before_applying_and_its_preview_shows_the_gap(
    db, operator_client, page: Page, screenshot_dir
):
    from tests.live.helpers import config

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(KSERVE_DEPLOY))
    body = copy.deepcopy(DEMO_INFERENCESERVICE)
    body["spec"]["predictor"]["deploymentStrategy"] = {"type": "Recreate"}
    cluster.create_object(body)
    settle(cluster)
    site = isvc_site(page, operator_client)
    page.goto(site.url(PAGE))
    row = page.get_by_test_id("strategy").locator("tr[data-deployment='llm-predictor']")
    expect(row).to_contain_text("Recreate")
    expect(page.locator("[data-outage='llm-predictor']")).to_contain_text("an outage by design")
    # Before applying: the set-image dialog says so.
    page.locator("#isvc-buttons button", has_text="Set image").click()
    expect(page.locator("#dialog-body [data-warning='recreate']")).to_contain_text("uses Recreate")
    page.keyboard.press("Escape")
    form = page.get_by_test_id("preview-form")
    form.locator("input[name='image']").fill("vllm/vllm-openai:v0.9.2")
    form.locator("button[type='submit']").click()
    result = page.get_by_test_id("preview-result")
    expect(result).to_contain_text("at least 0 of 4 predictor pods Ready")
    expect(result.locator("[data-gap]")).to_contain_text("none Ready for")
    shot(page, screenshot_dir / "isvc-6-recreate-preview.png")
    assert (
        "deploymentStrategy" in isvc_spec(cluster)["predictor"] and "image" in isvc_spec(cluster)["predictor"]["model"]
    )
    assert isvc_spec(cluster)["predictor"]["model"]["image"] != "vllm/vllm-openai:v0.9.2"  # nothing applied
