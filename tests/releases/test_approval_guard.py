"""An environment that requires approval cannot be bypassed by a direct control: on its targets a
set-image, an applied manifest, a rollback to a controller revision or an InferenceService image
that would run an image no approved model version carries is refused (and audited with the
reason) unless the user holds ``releases.bypass_approval`` there (group ``release-admins``, or the
role ``release-admin`` in the namespace). Scale, pause and the like stay free. Four eyes: whoever
registered a version, or planned a release of it where approval is required, cannot approve it."""

from __future__ import annotations

import json

import pytest
import yaml
from django.contrib.auth.models import Group
from django.test import Client

from rolloutui.models import AuditRecord, NamespaceGrant
from rolloutui.releases.models import ModelVersion
from rolloutui.services import controls, manifests, state
from rolloutui.services.controls import ControlDenied
from rolloutui.services.releases import records
from tests.conftest import TEST_PASSWORD

from .conftest import IMAGE_V1, IMAGE_V2, converged, digest, manifest, version_values

pytestmark = pytest.mark.django_db

UNREGISTERED = "registry.example/vllm-openai@" + digest("built on a laptop")


@pytest.fixture
def prod(world):
    """world (production -> prod/chat, requires approval) with prod/chat running v1 (approved)."""
    world["sim"].create(manifest("chat", namespace="prod"))
    assert world["sim"].run(120, "chat", namespace="prod", until=lambda: converged("chat", "prod"))
    return world


def images(namespace="prod", name="chat") -> set[str]:
    ms = state.get_manifest(namespace, name)
    return {c["image"] for r in ms["spec"]["template"]["roles"] for c in r["entryTemplate"]["spec"]["containers"]}


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def last(action):
    return AuditRecord.objects.filter(action=action).latest("id")


@pytest.fixture
def release_admin(django_user_model):
    user = django_user_model.objects.create_user(username="release-admin", password=TEST_PASSWORD)
    user.groups.add(Group.objects.get(name="operators"), Group.objects.get(name="release-admins"))
    return user


def test_an_operator_cannot_set_an_unapproved_image_on_a_target_that_requires_approval(prod, operator_client):
    resp = post(
        operator_client,
        "/api/modelservings/prod/chat/set-image",
        {"role": "decode", "image": IMAGE_V2, "reason": "hot"},
    )
    assert resp.status_code == 403, resp.content
    detail = resp.json()["detail"]
    assert "environment production, which requires approval" in detail and "chat-llm:v2 is Registered" in detail
    assert "releases.bypass_approval" in detail
    assert images() == {IMAGE_V1}
    refused = last("set_image")
    assert (refused.result, refused.actor_name, refused.namespace, refused.reason) == (
        "error",
        "operator",
        "prod",
        "hot",
    )
    assert "requires approval" in refused.error and refused.details["refused"] == "approval"


def test_the_service_refuses_the_same_set_image_and_an_image_nobody_registered(prod, operator):
    for image in (IMAGE_V2, UNREGISTERED):
        with pytest.raises(ControlDenied, match="requires approval"):
            controls.set_image(operator, "prod", "chat", role="decode", image=image, reason="by hand", source="cli")
    assert images() == {IMAGE_V1}
    assert AuditRecord.objects.filter(action="set_image", result="error", source="cli").count() == 2


def test_the_image_of_an_approved_version_may_be_set_directly(prod, operator, approver):
    records.approve(approver, "chat-llm", "v2", reason="eval passed", source="api")
    controls.set_image(operator, "prod", "chat", role="decode", image=IMAGE_V2, reason="hotfix", source="api")
    assert IMAGE_V2 in images()


def test_scale_and_pause_of_a_target_that_requires_approval_stay_allowed(prod, operator):
    controls.scale(operator, "prod", "chat", replicas=3, reason="more traffic", source="api")
    controls.pause(operator, "prod", "chat", reason="hold", source="api")
    assert state.get_manifest("prod", "chat")["spec"]["replicas"] == 3


def test_a_staging_target_takes_any_image_directly(prod, operator):
    controls.set_image(operator, "default", "chat", role="decode", image=UNREGISTERED, reason="try", source="api")
    assert UNREGISTERED in images("default")


def test_applying_a_manifest_with_an_unapproved_image_to_such_a_target_is_refused(prod, operator_client):
    edited = yaml.safe_load(manifests.manifest_text("prod", "chat"))
    edited["spec"]["template"]["roles"][1]["entryTemplate"]["spec"]["containers"][0]["image"] = UNREGISTERED
    resp = post(operator_client, "/api/modelservings/apply", {"manifest": yaml.safe_dump(edited), "reason": "edit"})
    assert resp.status_code == 403, resp.content
    assert "requires approval" in resp.json()["detail"] and UNREGISTERED in resp.json()["detail"]
    assert images() == {IMAGE_V1}
    assert last("apply").result == "error"


def test_rolling_back_to_a_revision_whose_image_is_unapproved_is_refused(prod, operator, release_admin):
    sim = prod["sim"]
    controls.set_image(release_admin, "prod", "chat", role="decode", image=UNREGISTERED, reason="x", source="api")
    sim.run(200, "chat", namespace="prod", until=lambda: converged("chat", "prod"))
    controls.rollback(operator, "prod", "chat", to_revision=1, reason="back to v1", source="api")  # approved: fine
    sim.run(200, "chat", namespace="prod", until=lambda: converged("chat", "prod"))
    with pytest.raises(ControlDenied, match=f"requires approval.*{UNREGISTERED}"):
        controls.rollback(operator, "prod", "chat", to_revision=2, reason="forward again", source="api")
    assert images() == {IMAGE_V1}


def test_a_release_admin_may_change_directly_and_the_audit_says_approval_was_bypassed(prod, release_admin):
    record = controls.set_image(
        release_admin, "prod", "chat", role="decode", image=UNREGISTERED, reason="incident 42", source="api"
    )
    assert record.result == "ok" and UNREGISTERED in images()
    assert record.details["approvalBypassed"] == {"images": [UNREGISTERED], "permission": "releases.bypass_approval"}


def test_the_release_admin_role_granted_in_one_namespace_bypasses_there_only(prod, django_user_model):
    carol = django_user_model.objects.create_user(username="carol", password=TEST_PASSWORD)
    carol.groups.add(Group.objects.get(name="operators"))
    NamespaceGrant.objects.create(user=carol, namespace="prod", role="release-admin")
    controls.set_image(carol, "prod", "chat", role="decode", image=UNREGISTERED, reason="incident", source="api")
    assert UNREGISTERED in images()
    NamespaceGrant.objects.filter(user=carol).update(namespace="elsewhere")
    carol = django_user_model.objects.get(pk=carol.pk)
    with pytest.raises(ControlDenied, match="requires approval"):
        controls.set_image(carol, "prod", "chat", role="decode", image=IMAGE_V2, reason="again", source="api")


# -- Four eyes -----------------------------------------------------------------------------------------


@pytest.fixture
def both(django_user_model):
    """An operator who is also an approver."""
    user = django_user_model.objects.create_user(username="both", password=TEST_PASSWORD)
    user.groups.add(Group.objects.get(name="operators"), Group.objects.get(name="approvers"))
    client = Client()
    client.force_login(user)
    return user, client


def test_whoever_registered_a_version_cannot_approve_it(world, both, approver):
    user, client = both
    records.register_model_version(user, version_values("v3"), source="api")
    resp = post(client, "/api/model-versions/chat-llm/v3/approve", {"reason": "looks good to me"})
    assert resp.status_code == 403, resp.content
    assert "both registered chat-llm:v3" in resp.json()["detail"] and "four eyes" in resp.json()["detail"]
    refused = last("approve")
    assert (refused.result, refused.actor_name, refused.details["refused"]) == ("error", "both", "four-eyes")
    assert ModelVersion.objects.get(version="v3").status == "Registered"
    records.approve(approver, "chat-llm", "v3", reason="second pair of eyes", source="api")
    assert ModelVersion.objects.get(version="v3").status == "Approved"


def test_whoever_planned_a_release_of_a_version_where_approval_is_required_cannot_approve_it(world, both):
    user, _ = both
    records.create_release(
        user, {"environment": "production", "modelVersion": "chat-llm:v2", "reason": "please approve"}, source="api"
    )
    with pytest.raises(ControlDenied, match="both planned release r1 of chat-llm:v2 to production"):
        records.approve(user, "chat-llm", "v2", reason="mine", source="cli")
    assert last("approve").details["refused"] == "four-eyes"
    assert ModelVersion.objects.get(version="v2").status == "Registered"


def test_the_modelserving_page_shows_why_a_direct_set_image_is_refused(prod, operator_client, page):
    from playwright.sync_api import expect

    from tests.dashboard.offline import OfflineSite

    site = OfflineSite(page, operator_client, full_state=lambda: state.get_state("prod", "chat"))
    page.goto(site.url("/modelservings/prod/chat/"))
    page.get_by_test_id("btn-set-image").click()
    page.get_by_test_id("si-role").select_option("decode")
    page.get_by_test_id("si-image").fill(IMAGE_V2)
    page.fill("[data-testid=dialog-reason]", "quick fix")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog-error")).to_contain_text("environment production, which requires approval")
    expect(page.locator("#dialog-error")).to_contain_text("chat-llm:v2 is Registered")
    assert images() == {IMAGE_V1}


def test_an_inferenceservice_that_requires_approval_refuses_an_unapproved_image(operator, operator_client):
    from tests.dashboard.test_isvc_actions import make_cluster
    from tests.dashboard.test_isvc_actions import spec as isvc_spec

    cluster = make_cluster()
    records.create_environment(
        operator,
        {
            "name": "production",
            "requiresApproval": True,
            "targets": [{"kind": "InferenceService", "namespace": "default", "name": "llm", "component": "predictor"}],
        },
        source="api",
    )
    resp = post(
        operator_client, "/api/inferenceservices/default/llm/isvc-set-image", {"image": "engine:v3", "reason": "r"}
    )
    assert resp.status_code == 403, resp.content
    assert "image engine:v3 is not the runtime image of an approved model version" in resp.json()["detail"]
    assert isvc_spec(cluster)["predictor"]["model"]["image"] == "engine:v1"
    canary = post(
        operator_client,
        "/api/inferenceservices/default/llm/isvc-canary",
        {"percent": 10, "image": "engine:v4", "reason": "r"},
    )
    assert canary.status_code == 403 and "engine:v4" in canary.json()["detail"]
    assert last("isvc_canary").details["refused"] == "approval"


def test_a_manifest_refused_for_one_of_its_documents_applies_none_of_them(prod, operator):
    staging = yaml.safe_load(manifests.manifest_text("default", "chat"))
    staging["spec"]["replicas"] = 3
    production = yaml.safe_load(manifests.manifest_text("prod", "chat"))
    production["spec"]["template"]["roles"][1]["entryTemplate"]["spec"]["containers"][0]["image"] = UNREGISTERED
    text = yaml.safe_dump_all([staging, production])
    with pytest.raises(ControlDenied, match="requires approval"):
        manifests.apply(operator, manifest=text, reason="both at once", source="api")
    assert state.get_manifest("default", "chat")["spec"]["replicas"] == 2
    assert images() == {IMAGE_V1}
    refused = last("apply")
    assert (refused.result, refused.details["refused"]) == ("error", "approval")
