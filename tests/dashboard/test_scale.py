"""The scale and autoscale controls through the services, the API and the CLI: permission per
namespace, the audit record (who, source, replicas from -> to), errors naming the field, the
autoscaler's own source, and what the capacity endpoint says of autoscale."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controller.core import naming
from controller.core.controls import ControlError
from rolloutui.models import AuditRecord, NamespaceGrant
from rolloutui.services import autoscale, controls, state
from rolloutui.services.cluster import get_cluster

pytestmark = pytest.mark.django_db


def post(client, ms, action, body):
    return client.post(
        f"/api/modelservings/{ms['namespace']}/{ms['name']}/{action}", body, content_type="application/json"
    )


def replicas_of(ms) -> int:
    return state.get_manifest(ms["namespace"], ms["name"])["spec"]["replicas"]


def annotation(ms):
    return (state.get_manifest(ms["namespace"], ms["name"])["metadata"].get("annotations") or {}).get(
        naming.ANNOTATION_AUTOSCALE
    )


def last_record() -> AuditRecord:
    return AuditRecord.objects.exclude(action__in=AuditRecord.ACCOUNT_ACTIONS).latest("id")


# --- scale ---------------------------------------------------------------------------------------------
def test_an_operator_scales_through_the_api_and_the_audit_says_who_from_where_and_from_to(
    operator, operator_client, ms
):
    resp = post(operator_client, ms, "scale", {"replicas": 6, "reason": "more traffic tonight"})
    assert resp.status_code == 200, resp.content
    assert replicas_of(ms) == 6
    audit = resp.json()["audit"]
    assert (audit["action"], audit["source"], audit["who"], audit["result"]) == ("scale", "api", "operator", "ok")
    assert audit["details"]["replicas"] == {"from": 4, "to": 6}
    assert audit["reason"] == "more traffic tonight"
    # Replicas are not versioned: the revision stays the same.
    assert audit["fromRevision"] == audit["toRevision"] == "1"


def test_the_cli_scales_with_replicas(operator, ms):
    out = io.StringIO()
    call_command(
        "rollout", "scale", f"{ms['namespace']}/{ms['name']}", "--replicas", "2", "--reason", "quiet",
        "--user", "operator", stdout=out,
    )  # fmt: skip
    assert f"scale {ms['namespace']}/{ms['name']}: ok" in out.getvalue()
    assert replicas_of(ms) == 2
    record = last_record()
    assert (record.action, record.source, record.actor, record.details["replicas"]) == (
        "scale",
        "cli",
        operator,
        {"from": 4, "to": 2},
    )


BAD_SCALE = [
    ("no replicas", {}, "replicas is required: The number of ServingGroups, 1 to 1000 (0 only with allowZero)."),
    ("text", {"replicas": "three"}, "replicas must be an integer"),
    ("a fraction", {"replicas": 2.5}, "replicas must be an integer"),
    ("negative", {"replicas": -1}, "replicas must not be negative"),
    ("above the maximum", {"replicas": 1001}, "replicas must be 1000 or less"),
]


@pytest.mark.parametrize("body, message", [r[1:] for r in BAD_SCALE], ids=[r[0] for r in BAD_SCALE])
def test_bad_replicas_are_a_400_naming_the_field(operator_client, ms, body, message):
    resp = post(operator_client, ms, "scale", {**body, "reason": "r"})
    assert resp.status_code == 400
    assert resp.json() == {"replicas": [message]}
    assert replicas_of(ms) == 4


def test_scale_to_zero_is_refused_unless_allow_zero_is_given(operator_client, ms):
    refused = post(operator_client, ms, "scale", {"replicas": 0, "reason": "night"})
    assert refused.status_code == 400
    assert refused.json() == {
        "replicas": ["replicas 0 stops every ServingGroup (scale to zero): give allowZero to confirm"]
    }
    assert last_record().result == "error"  # the attempt is audited
    done = post(operator_client, ms, "scale", {"replicas": 0, "allowZero": True, "reason": "night"})
    assert done.status_code == 200, done.content
    assert replicas_of(ms) == 0 and done.json()["audit"]["details"]["replicas"] == {"from": 4, "to": 0}


def test_a_viewer_may_not_scale_and_the_refusal_is_audited(viewer, ms):
    with pytest.raises(controls.ControlDenied, match="rolloutui.operate_modelserving"):
        controls.scale(viewer, ms["namespace"], ms["name"], replicas=2, reason="try", source="api")
    record = last_record()
    assert (record.action, record.result, record.actor, record.source) == ("scale", "error", viewer, "api")
    assert "ControlDenied" in record.error
    assert replicas_of(ms) == 4


def test_an_operator_of_another_namespace_may_not_scale_here(django_user_model, ms):
    user = django_user_model.objects.create_user(username="elsewhere")
    NamespaceGrant.objects.create(user=user, namespace="team-b", role="operator")
    with pytest.raises(controls.ControlDenied, match="in namespace 'default'"):
        controls.scale(user, ms["namespace"], ms["name"], replicas=2, reason="try", source="api")


def test_scale_needs_a_reason(operator, ms):
    with pytest.raises(ControlError) as refused:
        controls.scale(operator, ms["namespace"], ms["name"], replicas=2, reason=" ", source="api")
    assert refused.value.field == "reason"


# --- autoscale -----------------------------------------------------------------------------------------
def test_an_operator_turns_autoscale_on_with_min_one_by_default_and_off_again(operator_client, ms):
    on = post(operator_client, ms, "autoscale", {"maxReplicas": 6, "reason": "let it follow the load"})
    assert on.status_code == 200, on.content
    assert json.loads(annotation(ms)) == {"minReplicas": 1, "maxReplicas": 6}
    assert on.json()["audit"]["details"]["autoscale"] == {"from": None, "to": {"minReplicas": 1, "maxReplicas": 6}}
    changed = post(operator_client, ms, "autoscale", {"minReplicas": 2, "maxReplicas": 8, "reason": "wider"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["audit"]["details"]["autoscale"]["from"] == {"minReplicas": 1, "maxReplicas": 6}
    off = post(operator_client, ms, "autoscale", {"disable": True, "reason": "by hand again"})
    assert off.status_code == 200, off.content
    assert annotation(ms) is None and replicas_of(ms) == 4
    assert off.json()["audit"]["details"]["autoscale"] == {"from": {"minReplicas": 2, "maxReplicas": 8}, "to": None}


BAD_AUTOSCALE = [
    ("no max to turn it on", {}, "maxReplicas", "maxReplicas is required to turn autoscale on"),
    ("min zero", {"minReplicas": 0, "maxReplicas": 3}, "minReplicas", "minReplicas must be 1 or more"),
    ("max below min", {"minReplicas": 4, "maxReplicas": 2}, "maxReplicas", "maxReplicas must be at least minReplicas"),
    ("max not a number", {"maxReplicas": "lots"}, "maxReplicas", "maxReplicas must be an integer"),
    ("bounds and disable", {"maxReplicas": 3, "disable": True}, "maxReplicas", "give either maxReplicas or disable"),
    ("off when it is off", {"disable": True}, "disable", "autoscale is not on"),
]


@pytest.mark.parametrize("body, field, words", [r[1:] for r in BAD_AUTOSCALE], ids=[r[0] for r in BAD_AUTOSCALE])
def test_bad_autoscale_bounds_are_a_400_naming_the_field(operator_client, ms, body, field, words):
    resp = post(operator_client, ms, "autoscale", {**body, "reason": "r"})
    assert resp.status_code == 400, resp.content
    assert list(resp.json()) == [field] and words in resp.json()[field][0]
    assert annotation(ms) is None


def test_a_viewer_may_not_turn_autoscale_on(viewer, viewer_client, ms):
    resp = post(viewer_client, ms, "autoscale", {"maxReplicas": 6, "reason": "r"})
    assert resp.status_code == 403 and "rolloutui.operate_modelserving" in resp.json()["detail"]
    assert annotation(ms) is None
    assert (last_record().action, last_record().result) == ("autoscale", "error")


# --- the autoscaler's source -----------------------------------------------------------------------------
def test_the_autoscaler_scales_only_where_autoscale_is_on_and_within_its_bounds(operator, ms):
    where = (ms["namespace"], ms["name"])
    with pytest.raises(ControlError, match="autoscale is off") as off:
        controls.scale(None, *where, replicas=5, reason="load", source="autoscaler")
    assert off.value.field == "autoscale"
    controls.autoscale(operator, *where, min_replicas=2, max_replicas=5, reason="on", source="api")
    with pytest.raises(ControlError, match="outside the autoscale bounds 2..5"):
        controls.scale(None, *where, replicas=6, reason="load", source="autoscaler")
    record = controls.scale(None, *where, replicas=5, reason="load", source="autoscaler", figures={"x": 1})
    assert (record.actor, record.actor_name, record.source, record.auth_method) == (
        None,
        "autoscaler",
        "autoscaler",
        "system",
    )
    assert record.details["replicas"] == {"from": 4, "to": 5} and record.details["figures"] == {"x": 1}
    assert replicas_of(ms) == 5


def test_no_user_can_act_as_the_autoscaler(operator, ms):
    with pytest.raises(controls.ControlDenied, match="autoscaler's own"):
        controls.scale(operator, ms["namespace"], ms["name"], replicas=5, reason="sneaky", source="autoscaler")
    with pytest.raises(controls.ControlDenied, match="only scales"):
        controls.pause(None, ms["namespace"], ms["name"], reason="sneaky", source="autoscaler")


def test_a_client_cannot_claim_the_autoscaler_source(operator_client, ms):
    resp = operator_client.post(
        f"/api/modelservings/{ms['namespace']}/{ms['name']}/scale",
        {"replicas": 5, "reason": "r"},
        content_type="application/json",
        HTTP_X_ROLLOUTUI_SOURCE="autoscaler",
    )
    assert resp.status_code == 200 and resp.json()["audit"]["source"] in ("api", "page")


# --- capacity ----------------------------------------------------------------------------------------------
def test_the_capacity_endpoint_says_whether_autoscale_is_on_and_labels_the_recommendation_by_it(
    operator, viewer_client, ms
):
    path = f"/api/modelservings/{ms['namespace']}/{ms['name']}/capacity/"
    off = viewer_client.get(path).json()
    assert off["autoscale"]["enabled"] is False and off["autoscale"]["error"] is None
    assert off["recommendation"]["label"] == "recommendation, nothing is scaled"
    controls.autoscale(operator, ms["namespace"], ms["name"], max_replicas=6, reason="on", source="api")
    on = viewer_client.get(path).json()
    assert on["autoscale"] | {"cooldownSeconds": None} == {
        "enabled": True,
        "minReplicas": 1,
        "maxReplicas": 6,
        "cooldownSeconds": None,
        "error": None,
    }
    assert on["recommendation"]["label"] == "recommendation, applied by the autoscaler within 1..6"
    assert "nothing is scaled" not in on["recommendation"]["label"]


def test_a_malformed_annotation_shows_autoscale_off_with_the_reason(viewer_client, ms):
    get_cluster().patch_modelserving(
        ms["namespace"], ms["name"], {"metadata": {"annotations": {naming.ANNOTATION_AUTOSCALE: "max 5"}}}
    )
    body = viewer_client.get(f"/api/modelservings/{ms['namespace']}/{ms['name']}/capacity/").json()
    assert body["autoscale"]["enabled"] is False and "must be a JSON object" in body["autoscale"]["error"]
    assert autoscale.run_once() == []  # skipped, and nothing scaled


def test_the_cli_refuses_bad_replicas_naming_the_flag(operator, ms):
    with pytest.raises(CommandError, match="^replicas: replicas 0 stops every ServingGroup"):
        call_command(
            "rollout", "scale", f"{ms['namespace']}/{ms['name']}", "--replicas", "0", "--reason", "r",
            "--user", "operator",
        )  # fmt: skip


def test_the_autoscaler_is_a_periodic_task_of_the_worker_on_the_beat_schedule(settings):
    from rolloutui.tasks import autoscale as task
    from rolloutui.tasks import register_periodic_tasks

    class App:
        class conf:
            beat_schedule = None

    register_periodic_tasks(App)
    entry = App.conf.beat_schedule["rolloutui-autoscale"]
    assert entry["task"] == task.name == "rolloutui.tasks.autoscale"
    assert entry["schedule"] == settings.ROLLOUTUI_AUTOSCALE_SECONDS == 30
    assert task.run() == []  # its body: one pass (no ModelServing has autoscale on)
