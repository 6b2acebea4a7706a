"""The InferenceService page on the real product (`runall`: Daphne, Celery worker and beat, Redis):
it is live over the websocket. A canary started from elsewhere (the services, as the CLI or
another page would) shows on an open page within seconds, while the page reads nothing from the
REST API: the state arrives over the socket only. Its capacity panel follows the same states."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from .helpers import unique_name
from .test_browser import sign_in

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SEED = """
import json
from controller.core.ports import Conflict
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.database.demo import KSERVE_DEPLOY
from rolloutui.services import cluster
c = cluster.get_cluster()
try:
    c.create_object(kserve_controller.config_map(KSERVE_DEPLOY))
except Conflict:
    pass
c.create_object(json.loads({manifest!r}))
print("seeded")
"""

CANARY = """
from django.contrib.auth.models import User
from rolloutui.services.kserve import controls as kserve_controls
kserve_controls.start_canary(User.objects.get(username="operator"), "default", {name!r}, percent=30,
    image="engine:v2", canary="v2", reason="try v2 from elsewhere", source="cli")
print("started")
"""


def isvc_manifest(name: str) -> dict:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "predictor": {
                "minReplicas": 2,
                "model": {
                    "modelFormat": {"name": "vLLM"},
                    "image": "engine:v1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                },
            }
        },
    }


def test_a_canary_started_elsewhere_shows_on_the_open_page_without_a_read_of_the_api(live_stack, own_room, page: Page):
    name = unique_name("isvc")
    own_room(8, ("InferenceService", name))  # two predictors and the canary's, one GPU each
    assert "seeded" in live_stack.manage("shell", "-c", SEED.format(manifest=json.dumps(isvc_manifest(name))))
    api_path = re.compile(rf"/api/inferenceservices/default/{name}/?$")
    reads: list[str] = []
    page.on("request", lambda request: reads.append(request.url) if api_path.search(request.url) else None)

    sign_in(page, live_stack.url, "operator")
    page.goto(f"{live_stack.url}/inferenceservices/default/{name}/")
    expect(page.get_by_test_id("conn")).to_have_text("live", timeout=20_000)
    expect(page.get_by_test_id("fact-canary")).to_have_text("none")

    assert "started" in live_stack.manage("shell", "-c", CANARY.format(name=name))
    # Well within the 10 s of the fallback poll, which does not run while the socket is live anyway.
    expect(page.get_by_test_id("fact-canary")).to_contain_text("30%", timeout=8_000)
    expect(page.get_by_test_id("conn")).to_have_text("live")
    assert reads == [], f"the page read the REST state while its socket was live: {reads}"

    # The simulated KServe then rolls the canary's pods out: they arrive over the socket as well.
    expect(page.locator("#components .deployment")).to_have_count(2, timeout=60_000)
    # The capacity panel counts each Deployment from the same states, and charts them.
    rows = page.get_by_test_id("isvc-capacity-rows").locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("predictor")
    expect(page.get_by_test_id("isvc-capacity-flight").locator(".main-svg").first).to_be_visible()
    assert reads == []
