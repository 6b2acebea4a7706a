"""KV cache format advice (``core.kvformats``, ``services.kv_advice``): a ModelServing whose request
path hands the KV cache between images that write different formats breaks every request of its
revision, whatever the routing. "Set image" on decode alone, to a release with a new cache layout,
does it in one click; the validate, apply and set-image answers and the Paths panel say so, and
nothing is refused (the change is made, the Paths panel counts what happens)."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from controller.core.kvformats import kv_break
from controller.models import SimClock
from rolloutui.services import controls
from tests.factories import modelserving, role

from .helpers import unique_name

pytestmark = pytest.mark.django_db

OLD, NEW, UNKNOWN = "engine:v1", "engine:v2", "engine:custom"
FORMATS = {OLD: "v1", NEW: "v2"}


def template(image: str) -> dict:
    return {"spec": {"containers": [{"name": "engine", "image": image}]}}


@pytest.mark.parametrize(
    "case, path, images, breaks",
    [
        ("hops on one format hand the cache on", ["prefill", "decode"], {"prefill": OLD, "decode": OLD}, False),
        (
            "a new decode format behind an old prefill breaks",
            ["prefill", "decode"],
            {"prefill": OLD, "decode": NEW},
            True,
        ),
        (
            "an image without a declared format agrees with any",
            ["prefill", "decode"],
            {"prefill": UNKNOWN, "decode": NEW},
            False,
        ),
        ("a break anywhere on a longer path counts", ["a", "b", "c"], {"a": OLD, "b": UNKNOWN, "c": NEW}, True),
        ("a one-hop path hands nothing on", ["decode"], {"decode": NEW}, False),
        ("a role without containers declares nothing", ["prefill", "decode"], {"prefill": None, "decode": NEW}, False),
    ],
)
def test_which_paths_break_the_kv_cache_handover(case, path, images, breaks):
    templates = {r: (template(i) if i else {"spec": {"containers": []}}) for r, i in images.items()}
    found = kv_break(path, templates, FORMATS.get)
    assert (found is not None) is breaks, case
    if found is not None:
        assert found.field == "spec.traffic.path"
        assert [hop.role for hop in found.hops] == path


def test_the_message_names_each_hop_its_image_and_format():
    found = kv_break(["prefill", "decode"], {"prefill": template(OLD), "decode": template(NEW)}, FORMATS.get)
    assert found is not None
    assert found.message() == (
        "the roles of the request path prefill -> decode write different KV cache formats: prefill runs "
        "engine:v1 (KV cache format v1), decode runs engine:v2 (KV cache format v2). Every request through this "
        "revision would fail with a KV format mismatch; change the images of the path's roles together."
    )


@pytest.fixture
def kv_profiles(db):
    """The simulated cluster's image profiles: engine:v1 writes KV format v1, engine:v2 format v2."""
    now = time.time()
    config = {"images": {image: {"kvFormat": fmt} for image, fmt in FORMATS.items()}}
    SimClock.objects.update_or_create(pk=1, defaults={"wall_base": now, "sim_base": now, "config": config})


def pd(name: str, prefill: str, decode: str) -> dict:
    return modelserving(
        name=name,
        replicas=1,
        roles=[role("prefill", image=prefill), role("decode", image=decode)],
        traffic={"path": ["prefill", "decode"]},
    )


def kv_warnings(answer: dict) -> list[dict]:
    return [w for w in answer["warnings"] if w["path"] == "spec.traffic.path"]


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def test_validate_warns_at_the_path_line_and_still_accepts_the_manifest(viewer_client, kv_profiles):
    text = yaml.safe_dump(pd(unique_name(), OLD, NEW), sort_keys=False)
    body = post(viewer_client, "/api/manifests/validate", {"manifest": text}).json()
    assert body["errors"] == []
    # (The probe advice warns too: the factory's containers have no readiness probe.)
    (warning,) = kv_warnings(body)
    line = next(i for i, text_line in enumerate(text.splitlines(), 1) if text_line.strip() == "path:")
    assert warning["path"] == "spec.traffic.path" and warning["line"] == line
    assert "prefill runs engine:v1 (KV cache format v1), decode runs engine:v2" in warning["message"]


def test_validate_says_nothing_when_the_path_keeps_one_format(viewer_client, kv_profiles):
    text = yaml.safe_dump(pd(unique_name(), NEW, NEW), sort_keys=False)
    assert kv_warnings(post(viewer_client, "/api/manifests/validate", {"manifest": text}).json()) == []


def test_set_image_on_one_role_of_the_path_is_made_and_its_answer_and_audit_carry_the_warning(operator, kv_profiles):
    from rolloutui.services import cluster

    name = unique_name()
    cluster.get_cluster().create_modelserving(pd(name, OLD, OLD))
    record = controls.set_image(operator, "default", name, role="decode", image=NEW, reason="new engine", source="api")
    assert record.result == "ok"
    (warning,) = record.details["warnings"]
    assert warning.startswith("spec.traffic.path: the roles of the request path prefill -> decode")
    spec = cluster.get_cluster().get_modelserving("default", name)["spec"]
    assert spec["template"]["roles"][1]["entryTemplate"]["spec"]["containers"][0]["image"] == NEW
    # Moving prefill too makes the path whole again: no warning.
    record = controls.set_image(operator, "default", name, role="prefill", image=NEW, reason="new engine", source="api")
    assert "warnings" not in record.details


def test_the_paths_panel_answer_carries_the_warning(viewer_client, kv_profiles):
    from rolloutui.services import cluster

    name = unique_name()
    cluster.get_cluster().create_modelserving(pd(name, OLD, NEW))
    body = viewer_client.get(f"/api/modelservings/default/{name}/paths/").json()
    (warning,) = body["warnings"]
    assert warning["path"] == "spec.traffic.path" and "KV format mismatch" in warning["message"]


def test_on_kubernetes_no_format_is_declared_and_nothing_is_said(viewer_client, kv_profiles, monkeypatch):
    from rolloutui.services import kv_advice

    monkeypatch.setattr(kv_advice, "get_simulator", lambda: None)
    text = yaml.safe_dump(pd(unique_name(), OLD, NEW), sort_keys=False)
    assert kv_warnings(post(viewer_client, "/api/manifests/validate", {"manifest": text}).json()) == []


def test_the_set_image_endpoint_answers_with_the_warning_the_page_shows(operator_client, kv_profiles):
    from rolloutui.services import cluster

    name = unique_name()
    cluster.get_cluster().create_modelserving(pd(name, OLD, OLD))
    resp = post(
        operator_client,
        f"/api/modelservings/default/{name}/set-image",
        {"role": "decode", "image": NEW, "reason": "new engine"},
    )
    assert resp.status_code == 200, resp.content
    (warning,) = resp.json()["audit"]["details"]["warnings"]
    assert "prefill runs engine:v1 (KV cache format v1), decode runs engine:v2" in warning
