"""The YAML editor page in Chromium, served by Django in this process (``offline.OfflineSite``):
errors are marked at their line and field as the operator types, a valid manifest is applied
through the registry's apply action (audited), and the stored manifest is edited in place."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from rolloutui.models import AuditRecord
from tests.paths import KTHENA_EXAMPLES

from .offline import OfflineSite


def fill(page: Page, text: str) -> None:
    page.get_by_test_id("editor-text").fill(text)


def test_a_kthena_example_is_checked_marked_at_the_bad_field_and_applied(operator_client, page: Page, screenshot_dir):
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/manifests/apply/"))
    example = (KTHENA_EXAMPLES / "model-serving__rollingupdate.yaml").read_text()
    broken = example.replace("replicas: 4", "replicas: -4", 1)
    fill(page, broken)
    error = page.get_by_test_id("editor-error")
    expect(error).to_contain_text("spec.replicas")
    line = 1 + broken.splitlines().index(next(ln for ln in broken.splitlines() if "replicas: -4" in ln))
    expect(error).to_have_attribute("data-line", str(line))
    expect(page.locator(f"#editor-gutter .bad[data-line='{line}']")).to_be_visible()
    expect(page.get_by_test_id("editor-apply")).to_be_disabled()
    page.screenshot(path=str(screenshot_dir / "editor-error-marked.png"))

    fill(page, example)
    expect(page.get_by_test_id("editor-summary")).to_contain_text("valid: default/sample (create)")
    page.get_by_test_id("editor-apply").click()
    page.fill("[data-testid=dialog-reason]", "try the Kthena example")
    page.click("[data-testid=dialog-confirm]")
    page.wait_for_url(site.url("/modelservings/default/sample/"))
    record = AuditRecord.objects.get(action="apply", name="sample")
    assert (record.source, record.details["outcome"], record.reason) == ("api", "created", "try the Kthena example")
    assert record.details["apiVersion"] == "workload.serving.volcano.sh/v1alpha1"


def test_the_stored_manifest_is_edited_and_a_concurrent_change_is_refused(ms, operator_client, page: Page):
    from rolloutui.services import cluster

    site = OfflineSite(page, operator_client)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/edit/"))
    text = page.get_by_test_id("editor-text")
    expect(page.get_by_test_id("editor-summary")).to_contain_text("(update)")
    edited = text.input_value().replace("image: engine:v1", "image: engine:v2")
    fill(page, edited)
    page.get_by_test_id("editor-apply").click()
    page.fill("[data-testid=dialog-reason]", "new engine")
    page.click("[data-testid=dialog-confirm]")
    page.wait_for_url(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    stored = cluster.get_cluster().get_modelserving(ms["namespace"], ms["name"])
    images = {c["image"] for r in stored["spec"]["template"]["roles"] for c in r["entryTemplate"]["spec"]["containers"]}
    assert images == {"engine:v2"}

    # The same text again (its resourceVersion is now stale): refused, nothing written.
    page.goto(site.url("/manifests/apply/"))
    fill(page, edited.replace("engine:v2", "engine:v3"))
    page.get_by_test_id("editor-apply").click()
    page.fill("[data-testid=dialog-reason]", "stale")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog-error")).to_contain_text("changed since it was read")


def test_the_strategy_panel_names_the_cores_sources_and_the_cluster_settings_in_force(ms, operator_client, page: Page):
    from rolloutui.services import state as state_service

    state = state_service.get_state(ms["namespace"], ms["name"])
    budgets = {
        "total": 4,
        "maxUnavailable": {"value": 0, "count": 0, "source": "multiNodeOverride"},
        "maxSurge": {"value": 1, "count": 1, "source": "cluster"},
        "partition": {"value": 0, "count": 0, "source": "builtin"},
    }
    state["strategy"] = {**state["strategy"], "group": budgets}
    site = OfflineSite(page, operator_client, full_state=lambda: state)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    expect(page.get_by_test_id("conn")).to_have_text("live")
    panel = page.get_by_test_id("strategy")
    expect(panel).to_contain_text("multi-node override")
    expect(panel).to_contain_text("cluster default")
    expect(panel.locator(".src-multiNodeOverride").first).to_be_visible()
    expect(page.get_by_test_id("cluster-settings")).to_contain_text("Standard mode")
    expect(page.get_by_test_id("cluster-settings")).to_contain_text("(from environment)")


def test_a_viewer_gets_the_stored_manifest_masked_and_read_only_and_nothing_is_checked_or_applied(
    ms, viewer_client, page: Page
):
    from rolloutui.services import cluster

    c = cluster.get_cluster()
    roles = c.get_modelserving(ms["namespace"], ms["name"])["spec"]["template"]["roles"]
    for role in roles:
        role["entryTemplate"]["spec"]["containers"][0]["env"] = [{"name": "HF_TOKEN", "value": "hf_live_secret"}]
    c.patch_modelserving(ms["namespace"], ms["name"], {"spec": {"template": {"roles": roles}}})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    site = OfflineSite(page, viewer_client)
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/edit/"))
    text = page.get_by_test_id("editor-text")
    expect(text).to_have_js_property("readOnly", True)
    expect(text).to_have_value(re.compile(r"name: HF_TOKEN\n\s+value: <masked>"))
    expect(page.get_by_test_id("editor-masked")).to_contain_text("cannot be applied as it is")
    expect(page.get_by_test_id("editor-summary")).to_have_text("read-only")
    expect(page.get_by_test_id("editor-apply")).to_have_count(0)
    assert "hf_live_secret" not in text.input_value()
    assert errors == [] and site.requests == []  # no validate, no apply
