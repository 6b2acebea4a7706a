"""A weighted canary on the live product (``runall``: Daphne, Celery worker and beat, Redis, the
embedded cluster with its traffic), in Chromium: the step list shows ``Set weight 10%``, the weight
in force beside the current step and the split the request records actually observed, near 10%
although the canary runs one group of four."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.factories import group_strategy, modelserving, role, with_canary

from .test_browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAME = "weighted"
STEPS = [{"setPartition": "75%"}, {"setWeight": 10}, {"pause": {}}, {"setPartition": 0}]
ANALYSIS = {
    "intervalSeconds": 20,
    "settleSeconds": 3,
    "minRequests": 5,
    "inconclusiveLimit": 50,
    "metrics": [{"metric": "errorRate", "max": 0.5}],
}

SEED = """
from controller.core.ports import Conflict
from controller.models import SimTraffic
from controller.runtime.enqueue import send
from rolloutui.services import cluster
c = cluster.get_cluster()
try:
    c.create_modelserving({manifest!r})
except Conflict:
    pass
SimTraffic.objects.update_or_create(
    namespace="default", name={name!r}, defaults={{"rps": 60, "duration_low": 0.5, "duration_high": 1.5}}
)
send("default", {name!r})
print("seeded")
"""

NEW_IMAGE = """
from controller.runtime.enqueue import send
from rolloutui.services import cluster
c = cluster.get_cluster()
roles = c.get_modelserving("default", {name!r})["spec"]["template"]["roles"]
roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = "engine:v2"
c.patch_modelserving("default", {name!r}, {{"spec": {{"template": {{"roles": roles}}}}}})
send("default", {name!r})
print("patched")
"""


def weighted_manifest() -> dict:
    m = modelserving(name=NAME, replicas=4, roles=[role("decode", gpus=1)])
    m["spec"]["rolloutStrategy"] = with_canary(group_strategy(maxUnavailable=1), STEPS, ANALYSIS)
    return m


def test_a_weighted_canary_shows_its_weight_and_the_split_observed_beside_the_step(
    live_stack, own_room, page: Page, screenshot_dir
):
    own_room(8, ("ModelServing", NAME))  # four groups of one GPU, replaced in place
    page.set_viewport_size({"width": 1440, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    assert "seeded" in live_stack.manage("shell", "-c", SEED.format(manifest=weighted_manifest(), name=NAME))
    sign_in(page, live_stack.url, "operator")
    page.goto(f"{live_stack.url}/modelservings/default/{NAME}/")
    waits = page.locator("#waits")
    expect(page.get_by_test_id("phase")).to_have_text("Healthy", timeout=90_000), waits.inner_text()
    assert "patched" in live_stack.manage("shell", "-c", NEW_IMAGE.format(name=NAME))

    steps = page.get_by_test_id("canary-steps")
    expect(steps).to_contain_text("Set weight 10%", timeout=60_000)
    # The canary waits at the pause after setWeight: the weight in force beside it.
    beside = page.get_by_test_id("canary-step-weight")
    expect(beside).to_contain_text("weight 10%", timeout=90_000)
    expect(page.get_by_test_id("canary-weight")).to_contain_text("10% of new requests to the canary")
    # The split the request records observed in this step's windows, once one is judged.
    observed = page.get_by_test_id("canary-observed-weight")
    expect(observed).to_have_text(
        re.compile(r"observed \d+(\.\d)?% \(\d[\d,]* of \d[\d,]* requests, \d+ windows?\)"), timeout=120_000
    )
    percent = float(re.search(r"observed (\d+(?:\.\d)?)%", observed.inner_text()).group(1))
    assert 3.0 <= percent <= 20.0, observed.inner_text()  # by load alone one group of four gets ~25%
    expect(beside).to_contain_text("observed")
    page.get_by_test_id("canary-steps").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / "canary-weight.png"), full_page=True)
    assert errors == []
