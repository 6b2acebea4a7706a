"""No internal names in the pages (issue 31, "Looks and habits"): the audit shows actions as words
("Promote release", not promote_release), a refused control's message without the exception's
class ("ControlError: ...", which the audit record keeps for API clients), and an API error without
the cluster error's kind."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from controller.core.controls import ControlError
from rolloutui.services import controls

from .offline import OfflineSite

pytestmark = pytest.mark.django_db


def test_the_audit_panel_shows_actions_in_words_and_refusals_without_class_names(
    ms, operator, operator_client, page: Page
):
    controls.audit(
        operator,
        action="promote_release",
        namespace=ms["namespace"],
        name=ms["name"],
        reason="ship r2",
        source="page",
    )
    controls.audit(
        operator,
        action="set_image",
        namespace=ms["namespace"],
        name=ms["name"],
        reason="try v9",
        source="page",
        error=ControlError("image: must name a registry"),
    )
    site = OfflineSite(page, operator_client, full_state=lambda: ms["state"])
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    audit = page.get_by_test_id("audit")
    expect(audit.locator("li", has_text="ship r2").locator(".tl-head b")).to_have_text("Promote release")
    refused = audit.locator("li", has_text="try v9")
    expect(refused.locator(".tl-head b")).to_have_text("Set image")
    expect(refused.locator(".field-error")).to_have_text("image: must name a registry")
    expect(refused.locator(".field-error")).to_have_attribute("title", "ControlError: image: must name a registry")
    expect(audit).not_to_contain_text("ControlError")
    texts = page.evaluate(
        """async () => { const { readableError } = await import('/static/js/lib/format.js');
             return ['ControlDenied: alice may not operate default', 'Forbidden: no', 'KeyError: spec']
               .map(readableError); }"""
    )
    assert texts == ["alice may not operate default", "Forbidden: no", "KeyError: spec"]
    expect(audit).not_to_contain_text("_")


def test_an_api_error_reads_as_its_detail_without_the_cluster_errors_kind(ms, operator_client, page: Page):
    site = OfflineSite(page, operator_client, full_state=lambda: ms["state"])
    page.goto(site.url(f"/modelservings/{ms['namespace']}/{ms['name']}/"))
    text = page.evaluate(
        """async () => { const { errorText } = await import('/static/js/lib/api.js');
             return errorText(409, { detail: 'it changed since it was read; read it again', cluster: 'Conflict' }); }"""
    )
    assert text == "it changed since it was read; read it again"
