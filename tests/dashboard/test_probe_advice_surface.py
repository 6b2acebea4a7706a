"""Probe advice where an operator meets it (``services.probe_advice``): the validate and apply answers
and the ModelServing page warn about a serving container whose probes cannot cover the model load,
and never refuse the manifest. The advice itself is tested in tests/core/test_probe_advice.py."""

from __future__ import annotations

import copy
import io
import json
import re
import time

import pytest
import yaml
from django.core.management import call_command
from playwright.sync_api import Page, expect

from controller.core import naming
from controller.models import SimClock
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database.tick import tick
from rolloutui.services import cluster, probe_advice, state
from tests.factories import modelserving, role
from tests.live.helpers import ManualClock

from .helpers import NAMESPACE, unique_name
from .offline import OfflineSite
from .test_pages_offline import current_state, no_script_ran

pytestmark = pytest.mark.django_db

VALIDATE = "/api/manifests/validate"
APPLY = "/api/modelservings/apply"
SLOW = "engine:v2-slow"
HTTP = {"httpGet": {"path": "/health", "port": 8000}}


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def with_probes(name: str, image: str = SLOW, **probes) -> dict:
    r = role("decode", image=image)
    # Copies: one dict under two keys would be written as a YAML anchor and alias.
    r["entryTemplate"]["spec"]["containers"][0].update({key: copy.deepcopy(value) for key, value in probes.items()})
    return modelserving(name=name, replicas=1, roles=[r])


@pytest.fixture
def slow_image_profile(db):
    """The simulated cluster loads ``engine:v2-slow`` in 40 to 60 s."""
    now = time.time()
    config = {"images": {SLOW: {"load": [40, 60]}}}
    SimClock.objects.update_or_create(pk=1, defaults={"wall_base": now, "sim_base": now, "config": config})


LIVENESS_60 = (
    "role decode: livenessProbe can restart a pod still loading the model: 0 s delay + 3 x 10 s = 30 s before the "
    f"first restart, but model load takes up to 60 s (the simulated image profile of {SLOW})"
)


def test_validate_warns_that_a_default_liveness_probe_restarts_a_slow_loading_pod_and_still_accepts_it(
    viewer_client, slow_image_profile
):
    text = yaml.safe_dump(with_probes(unique_name(), readinessProbe=HTTP, livenessProbe=HTTP), sort_keys=False)
    resp = post(viewer_client, VALIDATE, {"manifest": text})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["errors"] == []
    (warning,) = body["warnings"]
    path = "spec.template.roles[0].entryTemplate.spec.containers[0].livenessProbe"
    line = next(i for i, text_line in enumerate(text.splitlines(), 1) if text_line.strip() == "livenessProbe:")
    assert warning == {
        "document": 0,
        "line": line,
        "role": "decode",
        "template": "entryTemplate",
        "container": "engine",
        "probe": "livenessProbe",
        "path": path,
        "message": LIVENESS_60,
    }


def test_apply_answers_with_the_probe_warnings_and_applies_the_manifest_all_the_same(
    operator_client, slow_image_profile
):
    name = unique_name()
    text = yaml.safe_dump(with_probes(name, livenessProbe=HTTP))
    resp = post(operator_client, APPLY, {"manifest": text, "reason": "slow model"})
    assert resp.status_code == 200, resp.content
    (record,) = resp.json()["audit"]
    assert record["details"]["outcome"] == "created"
    assert record["details"]["warnings"] == [
        "role decode: container engine has no readinessProbe and no startupProbe: its pods are Ready (and take "
        "requests) as soon as the container runs, before the model is loaded",
        LIVENESS_60,
    ]
    assert cluster.get_cluster().get_modelserving(NAMESPACE, name)["spec"]["replicas"] == 1


def test_probes_that_cover_the_load_get_no_warning(viewer_client, slow_image_profile):
    liveness = {**HTTP, "initialDelaySeconds": 120}
    text = yaml.safe_dump(with_probes(unique_name(), readinessProbe=HTTP, livenessProbe=liveness))
    assert post(viewer_client, VALIDATE, {"manifest": text}).json()["warnings"] == []


def test_the_load_time_measured_on_the_pods_replaces_the_image_profiles(db, monkeypatch):
    """Before any pod is Ready the simulated cluster's load time (40 s, fixed) is expected; once a pod
    is Ready on the manual clock, its own start-to-Ready time is what the probe is judged against."""
    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    config = {"timing": {"schedule": 1, "pull": 1, "start": 1, "load": 40, "terminate": 1}}
    SimClock.objects.update_or_create(pk=1, defaults={"wall_base": clock.t, "sim_base": clock.t, "config": config})
    sim = cluster.get_cluster()
    sim.add_node(8)
    name = unique_name()
    sim.create_modelserving(with_probes(name, image="engine:v1", readinessProbe=HTTP, livenessProbe=HTTP))
    (before,) = [w["message"] for w in probe_advice.advice_of(NAMESPACE, name)]
    assert before.endswith("but model load takes up to 40 s (the simulated cluster's load time)")
    start = clock.t
    while not any(p["metadata"]["labels"].get(naming.LABEL_ROLE) == "decode" and _ready(p) for p in _pods(name)):
        assert clock.t < start + 300, "the pod never got Ready"
        clock.t += 1.0
        tick(sim)
        run_reconcile(NAMESPACE, name)
    (message,) = [w["message"] for w in probe_advice.advice_of(NAMESPACE, name)]
    assert re.search(
        r"but model load took 4[01] s \(measured container start -> Loaded, p50 of the last 1 pods\)$", message
    )
    # The page measures on the pods of its own state read (not listed again): the same advice.
    read = state.read_state(NAMESPACE, name)
    assert read.view == state.get_state(NAMESPACE, name)
    assert probe_advice.advice_of(NAMESPACE, name, read=read) == probe_advice.advice_of(NAMESPACE, name)


def _pods(name: str) -> list[dict]:
    return cluster.get_cluster().list_pods(NAMESPACE, name)


def _ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


# --- The ModelServing page ----------------------------------------------------------------------------
FORGED_CONTAINER = '<img src=x onerror="window.__xss=1">'


def stored_with_probes(name: str, *, container: str = "engine", **probes) -> None:
    body = with_probes(name, **probes)
    body["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["name"] = container
    cluster.get_cluster().create_modelserving(body)


def test_the_serving_gates_panel_shows_the_probe_advice_as_text(viewer_client, slow_image_profile):
    name = unique_name()
    stored_with_probes(name, container=FORGED_CONTAINER, livenessProbe=HTTP)
    html = viewer_client.get(f"/modelservings/{NAMESPACE}/{name}/").content.decode()
    panel = html[html.index('id="release-panel"') : html.index('id="canary-panel"')]
    assert 'data-testid="probe-advice"' in panel
    assert "role decode: container &lt;img src=x onerror=&quot;window.__xss=1&quot;&gt; has no readinessProbe" in panel
    assert LIVENESS_60 in panel
    assert FORGED_CONTAINER not in html


def test_a_modelserving_whose_probes_cover_the_load_has_no_probe_advice_on_its_page(viewer_client, slow_image_profile):
    name = unique_name()
    stored_with_probes(name, startupProbe={**HTTP, "failureThreshold": 30})
    html = viewer_client.get(f"/modelservings/{NAMESPACE}/{name}/").content.decode()
    assert 'data-testid="probe-advice"' not in html


def test_the_probe_advice_stays_beside_the_gate_funnel_the_page_script_draws_and_no_script_runs(
    viewer_client, slow_image_profile, page: Page
):
    name = unique_name()
    stored_with_probes(name, container=FORGED_CONTAINER, readinessProbe=HTTP, livenessProbe=HTTP)
    site = OfflineSite(page, viewer_client, full_state=lambda: current_state({"namespace": NAMESPACE, "name": name}))
    page.goto(site.url(f"/modelservings/{NAMESPACE}/{name}/"))
    panel = page.locator("#release-panel")
    # The funnel is drawn from the websocket's state; the advice next to it must survive that.
    expect(panel.get_by_test_id("gate-funnel").locator(".gate-row").first).to_be_visible()
    advice = panel.get_by_test_id("probe-advice")
    expect(advice).to_be_visible()
    expect(advice.locator("li")).to_have_text([LIVENESS_60])
    no_script_ran(page)


def test_the_cli_apply_prints_the_probe_warnings_under_the_applied_modelserving(operator, slow_image_profile, tmp_path):
    name = unique_name()
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(with_probes(name, readinessProbe=HTTP, livenessProbe=HTTP)))
    out = io.StringIO()
    call_command("rollout", "apply", "-f", str(path), "--reason", "slow model", "--user", "operator", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"apply {NAMESPACE}/{name}: created")
    assert lines[1:] == [f"  warning: {LIVENESS_60}"]


def test_the_yaml_editor_lists_the_probe_warnings_at_their_line_and_still_lets_the_manifest_be_applied(
    operator_client, slow_image_profile, page: Page
):
    text = yaml.safe_dump(with_probes(unique_name(), readinessProbe=HTTP, livenessProbe=HTTP), sort_keys=False)
    line = next(i for i, text_line in enumerate(text.splitlines(), 1) if text_line.strip() == "livenessProbe:")
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/manifests/apply/"))
    page.get_by_test_id("editor-text").fill(text)
    warning = page.get_by_test_id("editor-warning")
    expect(warning).to_have_count(1)
    expect(warning).to_contain_text(LIVENESS_60)
    expect(warning).to_have_attribute("data-line", str(line))
    expect(page.locator(f"#editor-gutter .warn[data-line='{line}']")).to_be_visible()
    expect(page.get_by_test_id("editor-summary")).to_contain_text("(create); 1 warning")
    expect(page.get_by_test_id("editor-error")).to_have_count(0)
    expect(page.get_by_test_id("editor-apply")).to_be_enabled()
