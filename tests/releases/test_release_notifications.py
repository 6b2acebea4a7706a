"""Releases notify: a model version approved, a release that failed (once), a rollout that
completed. Sent to a real HTTP endpoint started by the test."""

from __future__ import annotations

import json

import pytest

from rolloutui.services.releases import deploy, records
from tests.notifications.receiver import Receiver

from .conftest import IMAGE_CRASH, version_values
from .test_deploy import plan, roll

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver(settings, celery_eager):
    celery_eager.conf.task_eager_propagates = False
    with Receiver() as r:
        settings.ROLLOUTUI_NOTIFICATIONS = json.dumps(
            {"destinations": [{"name": "releases", "type": "webhook", "url": r.url()}]}
        )
        yield r


def test_approving_a_model_version_notifies_release_approved(
    world, approver, receiver, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        records.approve(approver, "chat-llm", "v2", reason="eval passed", source="api")
    [body] = receiver.bodies()
    assert (body["kind"], body["namespace"], body["name"]) == ("release_approved", "", "chat-llm:v2")
    assert body["message"] == "chat-llm:v2: release approved by approver: eval passed"


def test_a_failed_release_is_notified_once_with_its_reason(
    world, operator, receiver, django_capture_on_commit_callbacks
):
    records.register_model_version(operator, version_values("v3", image=IMAGE_CRASH), source="api")
    dr = plan(operator, "chat-llm:v3")
    with django_capture_on_commit_callbacks(execute=True):
        deploy.deploy(operator, "default", "chat", dr.number, reason="try the broken build", source="api")
        dr = roll(world["sim"], dr)
        world["sim"].run(30, "chat")  # more passes see the same Failed release
    assert dr.status == "Failed"
    failed = [b for b in receiver.bodies() if b["kind"] == "release_failed"]
    assert len(failed) == 1
    assert failed[0]["message"] == f"default/chat: release r{dr.number} failed: {dr.status_reason}"
    assert failed[0]["revision"] == dr.controller_revision


def test_a_rollout_run_by_the_controller_notifies_completed_once(
    world, operator, receiver, django_capture_on_commit_callbacks
):
    dr = plan(operator, "chat-llm:v1")
    with django_capture_on_commit_callbacks(execute=True):
        deploy.deploy(operator, "default", "chat", dr.number, reason="v1 to staging", source="api")
        dr = roll(world["sim"], dr)
        world["sim"].run(30, "chat")  # later passes see the same converged revision
    assert dr.status == "Serving", dr.status_reason
    completed = [b for b in receiver.bodies() if b["kind"] == "completed"]
    assert [(b["namespace"], b["name"], b["revision"]) for b in completed] == [
        ("default", "chat", dr.controller_revision)
    ]
