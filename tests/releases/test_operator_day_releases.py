"""The release side of an operator's day (issue 31): where a promotion goes, what a refused deploy
leaves behind, what the release panel says once a rollout is over, and how revision numbers read
after a rollback renumbered them. Services on the database-backed simulated cluster driven by a
manual clock, and the pages in Chromium served by Django in this process
(``tests.dashboard.offline.OfflineSite``)."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from playwright.sync_api import Page, expect

from controller.core.controls import ControlError
from rolloutui.models import AuditRecord
from rolloutui.releases.models import DeploymentRevision
from rolloutui.services import audit, controls, state
from rolloutui.services.releases import deploy, records
from tests.dashboard.offline import OfflineSite

from .conftest import IMAGE_CRASH, IMAGE_V1, IMAGE_V2, converged, manifest, version_values

pytestmark = pytest.mark.django_db


def plan(user, version="chat-llm:v1", environment="staging", **extra):
    dr, _ = records.create_release(
        user,
        {"environment": environment, "modelVersion": version, "reason": f"release {version}", **extra},
        source="api",
    )
    return dr


def fresh(dr) -> DeploymentRevision:
    return DeploymentRevision.objects.get(pk=dr.pk)


def roll(sim, dr, name="chat", seconds=400, namespace="default") -> DeploymentRevision:
    """Run the cluster until ``dr`` leaves Deploying (or ``seconds`` pass)."""
    sim.run(seconds, name, namespace=namespace, until=lambda: fresh(dr).status != "Deploying")
    return fresh(dr)


@pytest.fixture
def prod(world):
    """world with prod/chat (production's target) running on the cluster."""
    world["sim"].create(manifest("chat", namespace="prod"))
    assert world["sim"].run(120, "chat", namespace="prod", until=lambda: converged("chat", "prod"))
    return world


@pytest.fixture
def promoted(prod, operator):
    """v1 Serving in staging (default/chat r1) and promoted to production (prod/chat r1), Serving there."""
    staged = plan(operator)
    deploy.deploy(operator, "default", "chat", staged.number, reason="v1 to staging", source="api")
    assert roll(prod["sim"], staged).status == "Serving"
    deploy.promote_release(operator, "default", "chat", staged.number, reason="green in staging", source="api")
    shipped = DeploymentRevision.objects.get(environment__name="production")
    assert roll(prod["sim"], shipped, namespace="prod").status == "Serving"
    return {**prod, "staged": staged, "shipped": shipped}


# -- Item 4: a promotion goes up the environments' ranks ---------------------------------------------------


def test_promoting_a_production_release_down_to_staging_is_refused_naming_the_environment(promoted, operator):
    before = DeploymentRevision.objects.filter(environment__name="staging").count()
    with pytest.raises(ControlError) as err:
        deploy.promote_release(
            operator, "prod", "chat", promoted["shipped"].number, environment="staging", reason="oops", source="api"
        )
    assert err.value.field == "environment"
    assert "staging" in str(err.value) and "production" in str(err.value)
    assert DeploymentRevision.objects.filter(environment__name="staging").count() == before
    assert fresh(promoted["staged"]).status == "Serving"


def test_the_promote_dialog_names_the_environment_it_deploys_to_and_offers_only_higher_ones(
    promoted, operator_client, page: Page
):
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/releases/"))
    # Production is the highest environment: its release has nowhere to be promoted to.
    shipped = page.locator("tr[data-release='prod/chat/1']")
    expect(shipped).to_contain_text("Serving")
    expect(shipped.locator("[data-action=promote-release]")).to_have_count(0)

    page.locator("tr[data-release='default/chat/1'] [data-action=promote-release]").click()
    expect(page.locator("#dialog-title")).to_have_text("Promote to production")
    expect(page.get_by_test_id("pr-environment")).to_have_value("production")
    expect(page.locator("[data-testid=pr-environment] option")).to_have_text(["production"])
    expect(page.get_by_test_id("dialog-confirm")).to_have_text("Promote to production")


# -- Item 5: a refused deploy leaves no debris -------------------------------------------------------------


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        # production requires approval and v2 is Registered
        ({"environment": "production", "modelVersion": "chat-llm:v2"}, "modelVersion"),
        # a profile the environment does not have
        ({"environment": "staging", "modelVersion": "chat-llm:v1", "resourceProfile": "huge"}, "resourceProfile"),
        ({"environment": "staging", "modelVersion": "chat-llm:v1", "deploy": "yes"}, "deploy"),
    ],
)
def test_a_release_planned_and_deployed_at_once_leaves_nothing_pending_when_the_deploy_is_refused(
    prod, operator_client, body, field
):
    answer = post(operator_client, "/api/deployment-revisions/", {"deploy": True, "reason": "ship it", **body})
    assert answer.status_code == 400, answer.content
    assert field in answer.json(), answer.json()
    assert not DeploymentRevision.objects.exists()
    refusal = AuditRecord.objects.order_by("-id").first()
    assert refusal.result == "error" and refusal.reason == "ship it"


def test_a_release_planned_and_deployed_at_once_is_deploying_with_one_audit_of_the_deploy(prod, operator_client):
    answer = post(
        operator_client,
        "/api/deployment-revisions/",
        {"environment": "staging", "modelVersion": "chat-llm:v1", "deploy": True, "reason": "v1 to staging"},
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["deploymentRevision"]["status"] == "Deploying"
    assert answer.json()["audit"]["action"] == "deploy"
    dr = DeploymentRevision.objects.get()
    assert (dr.number, dr.status, dr.environment.name) == (1, "Deploying", "staging")


def test_new_release_with_deploy_now_refused_for_approval_leaves_no_pending_release_with_a_deploy_button(
    prod, operator_client, page: Page
):
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/releases/"))
    page.get_by_test_id("btn-new-release").click()
    page.get_by_test_id("nr-environment").select_option("production")
    page.get_by_test_id("nr-version").select_option("chat-llm:v2")
    page.fill("[data-testid=dialog-reason]", "ship it")
    page.click("[data-testid=dialog-confirm]")
    expect(page.locator("#dialog-error")).to_contain_text("requires an approved model version")
    page.click("#dialog-cancel")
    page.reload()
    expect(page.locator("#rel-history tbody")).to_contain_text("No releases yet.")
    expect(page.locator("[data-action=deploy]")).to_have_count(0)
    assert not DeploymentRevision.objects.exists()


def test_a_pending_release_the_environment_would_refuse_shows_deploy_disabled_with_the_reason(
    prod, operator, operator_client, page: Page
):
    plan(operator, "chat-llm:v2", environment="production")  # a request for approval: it stays Pending
    site = OfflineSite(page, operator_client)
    page.goto(site.url("/releases/"))
    button = page.locator("tr[data-release='prod/chat/1'] [data-action=deploy]")
    expect(button).to_be_disabled()
    expect(button).to_have_attribute("title", re.compile("production requires an approved version"))


# -- Item 8: the release panel tells one story, and a failure stays a failure -------------------------------


@pytest.mark.parametrize("way_out", ["a new deploy", "a rollback"])
def test_a_failed_release_keeps_failed_and_its_reason_when_another_release_replaces_it(world, operator, way_out):
    sim = world["sim"]
    good = plan(operator, "chat-llm:v1")
    deploy.deploy(operator, "default", "chat", good.number, reason="v1", source="api")
    assert roll(sim, good).status == "Serving"
    records.register_model_version(operator, version_values("v3", image=IMAGE_CRASH), source="api")
    broken = plan(operator, "chat-llm:v3")
    deploy.deploy(operator, "default", "chat", broken.number, reason="try v3", source="api")
    broken = roll(sim, broken)
    assert broken.status == "Failed"
    failure = broken.status_reason

    if way_out == "a new deploy":
        fix = plan(operator, "chat-llm:v1")
        deploy.deploy(operator, "default", "chat", fix.number, reason="v1 again", source="api")
    else:
        deploy.rollback_release(operator, "default", "chat", good.number, reason="v3 crashes", source="api")
    after = fresh(broken)
    assert (after.status, after.status_reason) == ("Failed", failure)
    assert after.events[-1]["reason"].startswith(("replaced by r3", "rolled back to r1"))
    live = records.active_release(after.target)
    assert live is not None and live.number == 3


def test_a_superseded_release_says_what_replaced_it_in_the_past_tense(world, operator):
    dr = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", dr.number, reason="v2", source="api")
    assert roll(world["sim"], dr).status == "Serving"
    controls.set_image(operator, "default", "chat", role="decode", image=IMAGE_V1, reason="by hand", source="api")
    world["sim"].run(120, "chat", until=lambda: converged("chat"))
    dr = fresh(dr)
    assert dr.status == "Superseded"
    assert "now rolls out" not in dr.status_reason
    assert re.fullmatch(r"replaced by revision #3 \(hash \S+\), which no release wrote", dr.status_reason), (
        dr.status_reason
    )


def test_the_release_panel_shows_the_last_release_when_none_is_live_instead_of_nothing_released(
    world, operator, operator_client, page: Page
):
    from rolloutui.services import state

    dr = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", dr.number, reason="v2", source="api")
    assert roll(world["sim"], dr).status == "Serving"
    controls.set_image(operator, "default", "chat", role="decode", image=IMAGE_V1, reason="by hand", source="api")
    world["sim"].run(120, "chat", until=lambda: converged("chat"))
    assert fresh(dr).status == "Superseded"

    site = OfflineSite(page, operator_client, full_state=lambda: state.get_state("default", "chat"))
    page.goto(site.url("/modelservings/default/chat/"))
    summary = page.get_by_test_id("release-summary")
    expect(summary).to_contain_text("r1 · v2")
    expect(summary).to_contain_text("Superseded")
    expect(summary).to_contain_text("No release is live here")
    expect(summary).not_to_contain_text("Nothing released")
    expect(summary).not_to_contain_text("now rolls out")
    expect(page.get_by_test_id("rev-release")).to_have_text("r1 · v2")

    # The Releases page's environment card says the same: not "nothing released yet".
    page.goto(site.url("/releases/"))
    live = page.locator('[data-target="default/chat"] [data-testid="rel-live"]')
    expect(live).to_contain_text("no release live: the last, r1 · v2, is superseded (replaced by revision #3")
    expect(live).not_to_contain_text("nothing released yet")


# -- Item 9: revision numbers as they were, and the hash, after a rollback renumbered them ------------------


@pytest.fixture
def renumbered(world, operator):
    """default/chat: revision 1 (v1 image), then a set-image to v2 (revision 2), then a rollback to
    revision 1. As a StatefulSet's ControllerRevisions (and Kthena's), the revision rolled back to
    is re-listed as the newest: number 3, the same hash."""
    sim = world["sim"]
    first = state.get_state("default", "chat")["updateRevision"]
    controls.set_image(operator, "default", "chat", role="decode", image=IMAGE_V2, reason="v2 by hand", source="api")
    assert sim.run(200, "chat", until=lambda: converged("chat"))
    controls.rollback(operator, "default", "chat", to_revision=1, reason="v2 is wrong", source="api")
    assert sim.run(200, "chat", until=lambda: converged("chat"))
    numbers = {r["hash"]: r["number"] for r in state.get_state("default", "chat")["revisions"]}
    assert numbers[first] == 3 and 1 not in numbers.values()
    return {**world, "first": first}


def test_rollout_diff_from_a_renumbered_revision_says_which_number_it_has_now(renumbered):
    # Kubernetes' ControllerRevision rule (StatefulSet, and Kthena after it): a rollback re-numbers
    # the revision rolled back to as the newest, so number 1 no longer exists.
    with pytest.raises(CommandError) as err:
        call_command("rollout", "diff", "default/chat", "--from", "1", "--to", "2", "--user", "operator")
    message = str(err.value)
    assert "revision 1 is now number 3" in message, message
    assert renumbered["first"] in message


def test_the_audit_shows_each_revision_as_numbered_then_with_its_hash_and_its_number_now(renumbered, operator_client):
    answer = operator_client.get("/api/audit/?namespace=default&name=chat&action=set_image")
    (record,) = answer.json()["results"]
    first = renumbered["first"]
    assert record["fromRevision"] == "1"
    assert record["revisions"]["from"] == {
        "number": 1,
        "hash": first,
        "now": 3,
        "text": f"revision #1 (hash {first}), now #3",
    }


def test_the_audit_panel_names_a_renumbered_revision_as_it_was_with_its_hash_and_its_number_now(
    renumbered, operator_client, page: Page
):
    site = OfflineSite(page, operator_client, full_state=lambda: state.get_state("default", "chat"))
    page.goto(site.url("/modelservings/default/chat/"))
    first = renumbered["first"]
    audit = page.locator("#audit")
    # The set-image went from revision 1, which the rollback re-listed as 3; the rollback went to it.
    expect(audit.locator("li", has_text="set image").get_by_test_id("audit-revision").first).to_have_text(
        f"revision #1 (hash {first}), now #3"
    )
    expect(audit.locator("li", has_text="rollback").get_by_test_id("audit-revision").last).to_have_text(
        f"revision #1 (hash {first}), now #3"
    )


def test_rollout_audit_lists_revisions_as_numbered_then_with_hash_and_number_now(renumbered):
    out = io.StringIO()
    call_command("rollout", "audit", "default/chat", "--action", "set_image", "--user", "operator", stdout=out)
    assert f"revision #1 (hash {renumbered['first']}), now #3 -> revision #2 (hash " in out.getvalue(), out.getvalue()


def test_the_release_panel_names_the_revision_as_the_audit_does_after_a_rollback_renumbered_it(
    world, operator, operator_client, page: Page
):
    sim = world["sim"]
    r1 = plan(operator, "chat-llm:v1")
    deploy.deploy(operator, "default", "chat", r1.number, reason="v1", source="api")
    assert roll(sim, r1).status == "Serving"
    r2 = plan(operator, "chat-llm:v2")
    deploy.deploy(operator, "default", "chat", r2.number, reason="v2", source="api")
    assert roll(sim, r2).status == "Serving"
    deploy.rollback_release(operator, "default", "chat", r1.number, reason="v2 is wrong", source="api")
    r3 = DeploymentRevision.objects.get(number=3)
    assert roll(sim, r3).status == "Serving"
    r1 = fresh(r1)
    # r1 produced revision #2; restoring it re-listed that revision as #4 (the same hash).
    assert (r1.controller_revision_number, r3.controller_revision, r3.controller_revision_number) == (
        2,
        r1.controller_revision,
        4,
    )

    site = OfflineSite(page, operator_client, full_state=lambda: state.get_state("default", "chat"))
    page.goto(site.url("/modelservings/default/chat/"))
    expect(page.get_by_test_id("release-revision")).to_have_text(f"revision #4 (hash {r1.controller_revision})")
    # The audit names the revision the rollback went to as it was numbered then, and its number now.
    expect(page.locator("#audit li", has_text="rollback release").get_by_test_id("audit-revision").last).to_have_text(
        f"revision #2 (hash {r1.controller_revision}), now #4"
    )


def test_release_plan_with_deploy_refused_for_approval_leaves_no_pending_release(prod):
    with pytest.raises(CommandError, match="requires an approved model version"):
        call_command(
            "release", "plan", "--environment", "production", "--version", "chat-llm:v2",
            "--reason", "ship it", "--deploy", "--user", "operator",
        )  # fmt: skip
    assert not DeploymentRevision.objects.exists()
    out = io.StringIO()
    call_command(
        "release", "plan", "--environment", "staging", "--version", "chat-llm:v1",
        "--reason", "v1", "--deploy", "--user", "operator", stdout=out,
    )  # fmt: skip
    assert "Deploying" in out.getvalue(), out.getvalue()
    assert DeploymentRevision.objects.get().status == "Deploying"


def test_an_analysis_pause_record_keeps_the_revision_number_beside_the_hash_it_names(renumbered):
    from rolloutui.services import audit

    numbers = {r["hash"]: r["number"] for r in state.get_state("default", "chat")["revisions"]}
    canary = next(h for h, n in numbers.items() if n == 2)
    entry = {"source": "analysis", "action": "pause", "reason": "errorRate 0.2 > 0.05",
             "fromRevision": canary, "toRevision": canary, "details": {}}  # fmt: skip
    audit.record_analysis(namespace="default", name="chat", entries=[entry])
    record = AuditRecord.objects.filter(source="analysis").latest("id")
    assert record.details["toRevision"] == {"number": 2, "hash": canary}
    shown = audit.record_json(record)["revisions"]["to"]
    assert shown["text"] == f"revision #2 (hash {canary})"


def test_a_change_before_the_first_pass_names_the_unrecorded_revision_by_its_hash_alone(sim, operator):
    """The demo's audit said "revision #1 (hash fcf215df8f) -> revision #1 (hash dad326ba5f)": its first
    spec was changed (by the release deploy) before the controller recorded it, so that spec never had
    a number; the revision made from the change became #1."""
    sim.cluster.create_modelserving(manifest("fresh"))  # no pass yet: no revision recorded
    controls.set_image(operator, "default", "fresh", role="decode", image=IMAGE_V2, reason="early", source="api")
    record = AuditRecord.objects.get(namespace="default", name="fresh", action="set_image")
    assert record.details["fromRevision"]["number"] is None and record.details["fromRevision"]["hash"]
    assert record.details["toRevision"]["number"] == 1
    assert audit.record_revisions(record, {})["from"]["text"].startswith("revision (hash ")
