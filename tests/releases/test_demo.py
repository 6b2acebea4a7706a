"""`make run`'s release demo: two versions of the demo model (v1 approved), staging and production,
and the demo ModelServings serving v1 on the simulated cluster, which knows every digest-pinned demo image."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database.demo import DIGESTS
from controller.simcluster.database.tick import tick
from rolloutui.releases.models import DeploymentRevision, ModelVersion
from rolloutui.services import cluster, state
from rolloutui.services.releases import templates
from tests.live.helpers import ManualClock

pytestmark = pytest.mark.django_db


class Clock(ManualClock):
    def forget(self) -> None:
        pass


@pytest.fixture
def demo(monkeypatch, django_user_model):
    from django.contrib.auth.models import Group

    clock = Clock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    admin = django_user_model.objects.create_user(username="admin")
    admin.groups.add(Group.objects.get(name="operators"))
    call_command("load_demo", stdout=io.StringIO())
    out = io.StringIO()
    call_command("load_release_demo", stdout=out)
    return clock, out.getvalue()


def test_the_demo_registers_two_versions_one_approved_with_digest_pinned_images(demo):
    _, said = demo
    versions = {mv.version: mv for mv in ModelVersion.objects.filter(model="demo-llm")}
    assert versions["v1"].status == "Approved" and versions["v2"].status == "Registered"
    assert versions["v1"].runtime_image == DIGESTS["vllm/vllm-openai:v0.9.1"]
    assert versions["v2"].runtime_image == DIGESTS["vllm/vllm-openai:v0.9.2"]
    assert "registered demo-llm:v1 (Approved) and demo-llm:v2 (Registered)" in said
    again = io.StringIO()
    call_command("load_release_demo", stdout=again)
    assert "nothing to do" in again.getvalue()


def test_the_simulated_cluster_knows_the_behaviour_of_every_digest_pinned_demo_image(demo):
    config = cluster.get_cluster().config
    assert config.image(DIGESTS["vllm/vllm-openai:v0.9.2-crash"]).crash is True
    assert config.image(DIGESTS["vllm/vllm-openai:v0.9.2-slow"]).load.low == 40
    assert config.image(DIGESTS["vllm/vllm-openai:v0.9.2-flaky"]).error_rate == 0.2
    assert config.image(DIGESTS["vllm/vllm-openai:v0.9.1"]).crash is False


def test_the_flaky_tag_a_user_types_in_set_image_is_as_flaky_as_its_digest_twin(demo):
    config = cluster.get_cluster().config
    assert config.image("vllm/vllm-openai:v0.9.2-flaky").error_rate == 0.2
    assert config.image("vllm/vllm-openai:v0.9.2").error_rate == 0.0


def test_the_demo_modelservings_serve_v1_in_staging_and_production(demo):
    clock, _ = demo
    staging = DeploymentRevision.objects.get(environment__name="staging")
    production = DeploymentRevision.objects.get(environment__name="production")
    assert (staging.target.ref, production.target.ref) == ("default/demo", "production/demo")
    for _ in range(240):
        clock.t += 1
        tick(cluster.get_cluster())
        run_reconcile("default", "demo")
        run_reconcile("production", "demo")
        if all(DeploymentRevision.objects.get(pk=dr.pk).status == "Serving" for dr in (staging, production)):
            break
    for dr in (staging, production):
        dr.refresh_from_db()
        assert dr.status == "Serving", (dr.target.ref, dr.status, dr.status_reason)
        view = state.get_state(dr.target.namespace, dr.target.name)
        assert view["updateRevision"] == dr.controller_revision and len(view["revisions"]) == 1
    layers = templates.read_layers(state.get_manifest("default", "demo"), roles=["prefill", "decode"])
    assert layers["decode"]["model"]["MODEL_VERSION"] == "demo-llm.v1"
    assert layers["prefill"]["resources"]["limits.nvidia.com/gpu"] == "2"


def test_a_cluster_stored_before_the_flaky_tag_existed_learns_it_and_keeps_what_an_operator_set(demo):
    from controller.models import SimClock

    row = SimClock.objects.get(pk=1)
    images = dict(row.config["images"])
    images.pop("vllm/vllm-openai:v0.9.2-flaky")
    images["engine:mine"] = {"errorRate": 0.5}
    row.config = {**row.config, "images": images}
    row.save(update_fields=["config"])
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "stored the behaviour of 1 demo image\n" in out.getvalue()
    learnt = SimClock.objects.get(pk=1).config["images"]
    assert learnt["vllm/vllm-openai:v0.9.2-flaky"]["errorRate"] == 0.2
    assert learnt["engine:mine"] == {"errorRate": 0.5}
