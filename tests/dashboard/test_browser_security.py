"""The hardened product in a real browser: the pages run under the Content-Security-Policy
without a single violation, a preview runs in the Celery worker while the page shows its progress
and then its result, and the page's own actions are audited with source "page"."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from .test_browser import DETAIL, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_pages_run_under_the_csp_and_a_preview_shows_progress_then_its_result(live_stack, page: Page):
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_stack.url, "operator")
    page.goto(live_stack.url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)

    page.fill("#preview-image", "engine:v9")
    page.click("[data-testid=btn-preview]")
    # The job is queued in the worker; the page polls it until the timeline is there.
    expect(page.get_by_test_id("preview-duration")).to_be_visible(timeout=90000)
    assert violations == [] and errors == [], (violations, errors)


def test_a_control_from_the_page_is_audited_as_page(live_stack, page: Page):
    sign_in(page, live_stack.url, "operator")
    page.goto(live_stack.url + DETAIL)
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=15000)
    # The page's own API helper (the one the buttons use) sends the source header.
    result = page.evaluate(
        """async () => {
            const {post} = await import('/static/js/lib/api.js');
            const r = await post('/api/modelservings/default/chat/pause', {reason: 'from the page helper'});
            await post('/api/modelservings/default/chat/resume', {reason: 'and back'});
            return r.audit;
        }"""
    )
    assert (result["source"], result["authMethod"], result["clientIp"]) == ("page", "session", "127.0.0.1")
