"""Browser test of the strategy advisor: the real product (`runall`: Daphne, the Celery workers with
the preview worker, Redis) driven by Debian's Chromium. An operator asks for advice on a set-image,
applies it from the page in one audited action, and the rollout keeps the floor the advice named,
checked from the ModelServing's state history (the progress points the charts draw)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from controller.core import advisor
from controller.core.spec import parse_modelserving
from tests.waiting import wait_until

from .helpers import manifest
from .test_browser import confirm, sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAME = "advised"
API = f"/api/modelservings/default/{NAME}/"

CREATE = """
from controller.core.ports import Conflict
from controller.runtime.enqueue import send
from rolloutui.services import cluster
try:
    cluster.get_cluster().create_modelserving({manifest!r})
except Conflict:
    pass
send("default", {name!r})
print("created")
"""


def counts(page: Page) -> dict:
    state = page.request.get(page.url.split("/modelservings/")[0] + API).json()
    return {**(state.get("counts") or {}), "updateRevision": state.get("updateRevision"), "phase": state.get("phase")}


def peak_gpus(body: dict) -> int:
    """The most GPUs the advised rollout may hold at once: its groups and as many surge groups as
    the advisor may pick (at most one per group, ``advisor.candidates``). Here 4 groups of prefill 1
    x (entry + worker) + decode 2 x 1 = 4 GPUs, with up to 4 surge groups: 32 GPUs."""
    ms = parse_modelserving(body)
    return 2 * ms.replicas * advisor.group_gpus(ms)


def test_an_operator_applies_the_advice_from_the_page_and_the_rollout_keeps_the_floor(live_stack, own_room, page: Page):
    body = manifest(NAME, replicas=4, partition=0, max_surge=0)  # maxUnavailable 1, maxSurge 0
    # Its own room on the shared stack, and its ModelServing deleted when it ends, pass or fail.
    own_room(peak_gpus(body), ("ModelServing", NAME))
    assert "created" in live_stack.manage("shell", "-c", CREATE.format(manifest=body, name=NAME))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sign_in(page, live_stack.url, "operator")
    page.goto(live_stack.url + f"/modelservings/default/{NAME}/")
    wait_until(lambda: counts(page).get("availableReplicas") == 4, what="4 groups available", timeout=120)
    before = counts(page)["updateRevision"]

    panel = page.locator("[data-testid=advisor-panel]")
    expect(panel).to_be_visible()
    panel.locator("#advisor-role").select_option("decode")
    panel.locator("#advisor-image").fill("engine:v2")
    panel.locator("#advisor-floor").fill("2")  # the operator accepts 2 of 4 groups: wider batches may win
    panel.locator("[data-testid=btn-advise]").click()
    summary = page.locator("[data-testid=advisor-summary]")
    expect(summary).to_be_visible(timeout=180_000)
    floor_text = page.locator("[data-testid=advisor-floor]").inner_text()
    floor = int(re.search(r"Floor: (\d+) groups", floor_text).group(1))
    assert floor == 2, floor_text
    rows = page.locator("[data-testid=advisor-row]")
    assert rows.count() >= 3
    assert "maxUnavailable 1, maxSurge 0" in rows.first.inner_text()  # the current strategy, listed first
    assert page.locator(".advisor-recommended").count() == 1
    recommended = page.locator(".advisor-recommended .mono").inner_text()
    assert recommended != "maxUnavailable 1, maxSurge 0", recommended  # faster than the current strategy
    shown = re.search(r"maxUnavailable (\d+), maxSurge (\d+)", recommended)

    page.locator("[data-testid=advisor-apply]").click()
    confirm(page, "the advisor's fastest safe strategy")

    def rolled_out() -> bool:
        c = counts(page)
        return c["updateRevision"] != before and c.get("updatedReplicas") == 4 and c.get("availableReplicas") == 4

    wait_until(rolled_out, what="the advised rollout to finish", timeout=240)
    history = page.request.get(live_stack.url + API + "history/?range=rollout").json()
    points = [p for p in history["points"] if p.get("updateRevision") != before]
    assert points, history
    assert min(p["available"] for p in points) >= floor, [p["available"] for p in points]
    audit = page.request.get(live_stack.url + f"/api/audit/?namespace=default&name={NAME}&action=apply_advice").json()
    records = audit["results"] if isinstance(audit, dict) else audit
    assert [r["result"] for r in records] == ["ok"]
    # The change and the strategy came in that one action.
    written = page.request.get(live_stack.url + API + "manifest/").json()
    budgets = written["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    assert (budgets["maxUnavailable"], budgets["maxSurge"]) == (int(shown.group(1)), int(shown.group(2)))
    assert not errors, errors
