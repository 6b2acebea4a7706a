"""The Capacity panel's figures survive a set-image or a rollback (issue 31).

Safe concurrency (and with it the simulated GPU utilisation and memory) comes from the batching of
the release whose model the ModelServing runs. A set-image or a rollback by hand supersedes the
release (it no longer describes what rolls out: release.md's status machine), but the model, and
so its batching, is still the one that release deployed: the figures must not turn into "—".
"""

from __future__ import annotations

import pytest

from rolloutui.releases.models import DeploymentRevision
from rolloutui.services import capacity, controls, state
from rolloutui.services.releases import deploy, records

from .conftest import IMAGE_V2

pytestmark = pytest.mark.django_db


def released(world, operator):
    """chat-llm v1 deployed to default/chat and Serving."""
    dr, _ = records.create_release(
        operator, {"environment": "staging", "modelVersion": "chat-llm:v1", "reason": "v1"}, source="api"
    )
    deploy.deploy(operator, "default", "chat", dr.number, reason="v1", source="api")
    world["sim"].run(400, "chat", until=lambda: DeploymentRevision.objects.get(pk=dr.pk).status != "Deploying")
    assert DeploymentRevision.objects.get(pk=dr.pk).status == "Serving"
    return dr


def set_image(world, operator):
    controls.set_image(operator, "default", "chat", role="decode", image=IMAGE_V2, reason="hotfix", source="api")


def roll_back(world, operator):
    first = min(r["number"] for r in state.get_state("default", "chat")["revisions"])
    controls.rollback(operator, "default", "chat", to_revision=first, reason="back", source="api")


@pytest.mark.parametrize("change", [set_image, roll_back], ids=["set-image", "rollback"])
def test_gpu_figures_and_safe_concurrency_stay_after_a_change_that_supersedes_the_release(world, operator, change):
    dr = released(world, operator)
    before = {r["name"]: r for r in capacity.capacity("default", "chat")["roles"]}
    assert before["decode"]["safeConcurrency"] == 8 and before["decode"]["gpuUtilisation"] is not None

    change(world, operator)
    world["sim"].run(400, "chat", until=lambda: state.get_state("default", "chat")["converged"])
    assert DeploymentRevision.objects.get(pk=dr.pk).status == "Superseded"
    after = capacity.capacity("default", "chat")
    roles = {r["name"]: r for r in after["roles"]}
    for role in ("prefill", "decode"):
        assert roles[role]["safeConcurrency"] == 8, role
        assert roles[role]["gpuUtilisation"] is not None and roles[role]["gpuMemory"] is not None, role
    assert after["release"].startswith(str(dr)) and "Superseded" in after["release"]
