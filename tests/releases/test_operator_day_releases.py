"""The release side of an operator's day (issue 31): where a promotion goes, what a refused deploy
leaves behind, what the release panel says once a rollout is over, and how revision numbers read
after a rollback renumbered them. Services on the database-backed simulated cluster driven by a
manual clock, and the pages in Chromium served by Django in this process
(``tests.dashboard.offline.OfflineSite``)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from controller.core.controls import ControlError
from rolloutui.releases.models import DeploymentRevision
from rolloutui.services.releases import deploy, records
from tests.dashboard.offline import OfflineSite

from .conftest import converged, manifest

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
