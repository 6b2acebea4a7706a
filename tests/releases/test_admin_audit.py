"""Changes of release records through Django's admin are audited like any control: who, what
changed (each field from -> to, targets added, changed or removed), source ``admin``. Turning off
an environment's approval rule in the admin must never go unrecorded."""

from __future__ import annotations

import json
import re

import pytest

from rolloutui.models import AuditRecord
from rolloutui.releases.models import Environment, Target

pytestmark = pytest.mark.django_db


def errors_in(resp) -> list[str]:
    """The admin form's error messages (what a refused post says)."""
    return re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', resp.content.decode(), re.S)


def form_of(env: Environment, **changes) -> dict:
    """The admin's change form of ``env`` as a browser posts it, with ``changes`` applied."""
    targets = list(env.targets.order_by("pk"))
    data = {
        "name": env.name,
        "description": env.description,
        "resource_profiles": json.dumps(env.resource_profiles),
        "rank": env.rank,
        "created_at_0": env.created_at.strftime("%Y-%m-%d"),
        "created_at_1": env.created_at.strftime("%H:%M:%S"),
        "targets-TOTAL_FORMS": len(targets),
        "targets-INITIAL_FORMS": len(targets),
        "targets-MIN_NUM_FORMS": 0,
        "targets-MAX_NUM_FORMS": 1000,
    }
    if env.requires_approval:
        data["requires_approval"] = "on"
    for i, t in enumerate(targets):
        data.update(
            {
                f"targets-{i}-id": t.pk,
                f"targets-{i}-environment": env.pk,
                f"targets-{i}-kind": t.kind,
                f"targets-{i}-namespace": t.namespace,
                f"targets-{i}-name": t.name,
                f"targets-{i}-roles": json.dumps(t.roles),
                f"targets-{i}-container": t.container,
                f"targets-{i}-component": t.component,
            }
        )
    data.update(changes)
    if changes.get("requires_approval") is False:
        del data["requires_approval"]
    return data


def test_turning_off_approval_in_the_admin_is_audited_with_who_and_what_changed(world, admin_client, admin_user):
    production = Environment.objects.get(name="production")
    resp = admin_client.post(
        f"/admin/releases/environment/{production.pk}/change/",
        form_of(production, requires_approval=False, description="no approval for the weekend"),
    )
    assert resp.status_code == 302, errors_in(resp)
    assert Environment.objects.get(pk=production.pk).requires_approval is False
    record = AuditRecord.objects.get(action="admin_change", source="admin")
    assert (record.actor, record.name, record.result, record.auth_method) == (
        admin_user,
        "production",
        "ok",
        "session",
    )
    assert record.details["model"] == "releases.environment"
    assert record.details["changes"]["requires_approval"] == {"from": True, "to": False}
    assert record.details["changes"]["description"] == {"from": "", "to": "no approval for the weekend"}
    assert record.client_ip == "127.0.0.1"


def test_a_target_added_changed_or_removed_in_the_admin_is_audited(world, admin_client):
    staging = Environment.objects.get(name="staging")
    data = form_of(staging)
    data.update(
        {
            "targets-0-roles": json.dumps(["decode"]),
            "targets-TOTAL_FORMS": 2,
            "targets-1-environment": staging.pk,
            "targets-1-kind": "ModelServing",
            "targets-1-namespace": "default",
            "targets-1-name": "chat-canary",
            "targets-1-roles": json.dumps(["decode"]),
            "targets-1-container": "",
            "targets-1-component": "",
        }
    )
    resp = admin_client.post(f"/admin/releases/environment/{staging.pk}/change/", data)
    assert resp.status_code == 302, errors_in(resp)
    assert Target.objects.filter(name="chat-canary").exists()
    records = {
        r.action: r for r in AuditRecord.objects.filter(source="admin") if r.details["model"] == "releases.target"
    }
    added = records["admin_add"]
    assert added.details["model"] == "releases.target" and added.details["object"] == "ModelServing default/chat-canary"
    assert (added.namespace, added.name) == ("default", "chat-canary")
    changed = records["admin_change"]
    assert changed.details["model"] == "releases.target"
    assert changed.details["changes"]["roles"] == {"from": ["prefill", "decode"], "to": ["decode"]}

    canary = Target.objects.get(name="chat-canary")
    staging.refresh_from_db()
    data = form_of(staging)
    index = [t.pk for t in staging.targets.order_by("pk")].index(canary.pk)
    data[f"targets-{index}-DELETE"] = "on"
    assert admin_client.post(f"/admin/releases/environment/{staging.pk}/change/", data).status_code == 302
    removed = AuditRecord.objects.get(action="admin_delete", source="admin")
    assert removed.details["object"] == "ModelServing default/chat-canary"


def test_an_environment_created_in_the_admin_is_audited(db, admin_client):
    data = {
        "name": "qa",
        "description": "",
        "resource_profiles": "{}",
        "rank": 3,
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
        "requires_approval": "on",
        "targets-TOTAL_FORMS": 0,
        "targets-INITIAL_FORMS": 0,
        "targets-MIN_NUM_FORMS": 0,
        "targets-MAX_NUM_FORMS": 1000,
    }
    resp = admin_client.post("/admin/releases/environment/add/", data)
    assert resp.status_code == 302, errors_in(resp)
    record = AuditRecord.objects.get(action="admin_add", source="admin")
    assert record.name == "qa" and record.details["values"]["requires_approval"] is True
