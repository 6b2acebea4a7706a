"""Release test fixtures: users, valid model versions, environments, and a simulated cluster on a
manual clock that the test moves (ticks of the database cluster's physics and controller passes, in
this process, through the same services the app uses)."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pytest

from controller.models import SimClock
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database.tick import tick
from tests.conftest import TEST_PASSWORD
from tests.factories import group_strategy, modelserving, role
from tests.live.helpers import ManualClock


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
IMAGE_V1 = "registry.example/vllm-openai@" + digest("engine v1")
IMAGE_V2 = "registry.example/vllm-openai@" + digest("engine v2")
IMAGE_CRASH = "registry.example/vllm-openai@" + digest("engine crash")


def version_values(version: str = "v1", *, image: str = IMAGE_V1, **over) -> dict:
    values = {
        "model": "chat-llm",
        "version": version,
        "artifactUri": f"s3://models/chat-llm/{version}/",
        "artifactChecksum": digest(f"weights {version}"),
        "format": "safetensors",
        "frameworkVersion": "vllm 0.9.1",
        "preprocessing": {"ref": f"hf://org/tokenizer@{version}", "checksum": digest(f"tokenizer {version}")},
        "inputSchemaVersion": f"chat-in-{version}",
        "outputSchemaVersion": f"chat-out-{version}",
        "runtimeImage": image,
        "resources": {"cpu": "4", "memory": "32Gi", "gpus": 1},
        "batching": {"maxBatchSize": 8, "maxConcurrentSequences": 64},
        "timeouts": {"requestSeconds": 60},
        "source": {"trainingJob": f"train-{version}", "dataVersion": "2025-06"},
        "evaluationId": f"eval-{version}",
        "labels": {"team": "chat"},
    }
    values.update(over)
    return values


def manifest(name: str, *, replicas: int = 2, image: str = IMAGE_V1, namespace: str = "default") -> dict:
    env = [{"name": "LOG_LEVEL", "value": "info"}]
    return modelserving(
        name=name,
        namespace=namespace,
        replicas=replicas,
        strategy=group_strategy(maxUnavailable=1),
        roles=[role("prefill", workers=1, image=image, gpus=2, env=env), role("decode", image=image, gpus=1, env=env)],
    )


PROFILES = {
    "pd-small": {"roles": {"prefill": {"resources": {"gpus": 2}}, "decode": {"resources": {"gpus": 1}}}},
    "pd-large": {
        "resources": {"cpu": "16", "memory": "128Gi"},
        "roles": {"prefill": {"resources": {"gpus": 2}}, "decode": {"resources": {"gpus": 2}, "replicas": 2}},
    },
}


class Sim:
    """The database-backed simulated cluster on a manual clock: ``run(seconds)`` moves time in steps,
    ticking the physics and running a controller pass (with its post-reconcile hooks) each step."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock

    @property
    def cluster(self):
        from rolloutui.services.cluster import get_cluster

        return get_cluster()

    def reconcile(self, name: str, namespace: str = "default") -> dict:
        return run_reconcile(namespace, name)

    def run(self, seconds: float, *names: str, step: float = 1.0, until=None, namespace: str = "default"):
        end = self.clock.t + seconds
        while self.clock.t < end:
            self.clock.t += step
            tick(self.cluster)
            for name in names:
                run_reconcile(namespace, name)
            if until is not None and until():
                return True
        return False

    def create(self, body: dict) -> None:
        self.cluster.create_modelserving(copy.deepcopy(body))
        meta = body["metadata"]
        run_reconcile(meta.get("namespace", "default"), meta["name"])


@pytest.fixture
def sim(db, monkeypatch):
    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    SimClock.objects.update_or_create(
        pk=1,
        defaults={
            "wall_base": clock.t,
            "sim_base": clock.t,
            "config": {
                "timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1},
                "images": {IMAGE_CRASH: {"crash": True}},
            },
        },
    )
    s = Sim(clock)
    for _ in range(4):
        s.cluster.add_node(8)
    return s


@pytest.fixture
def approver(db, django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="approver", password=TEST_PASSWORD)
    user.groups.add(Group.objects.get(name="approvers"))
    return user


@pytest.fixture
def approver_client(approver):
    from django.test import Client

    client = Client()
    client.force_login(approver)
    return client


@pytest.fixture
def chat(sim):
    """ModelServing default/chat (2 groups: prefill with a worker, decode), its first rollout done."""
    sim.create(manifest("chat"))
    assert sim.run(120, "chat", until=lambda: converged("chat")), "the first rollout of default/chat did not finish"
    return sim


def converged(name: str, namespace: str = "default") -> bool:
    from rolloutui.services import state

    s = state.get_state(namespace, name)
    return bool(s.get("converged")) and s.get("phase") == "Healthy"


@pytest.fixture
def world(chat, operator, approver):
    """chat-llm v1 (approved) and v2 (registered); staging -> default/chat, production (requires
    approval) -> prod/chat (not created on the cluster unless a test needs it)."""
    from rolloutui.services.releases import records

    v1, _ = records.register_model_version(operator, version_values("v1"), source="api")
    records.approve(approver, "chat-llm", "v1", reason="eval passed", source="api")
    v2, _ = records.register_model_version(operator, version_values("v2", image=IMAGE_V2), source="api")
    staging, _ = records.create_environment(
        operator,
        {
            "name": "staging",
            "rank": 1,
            "resourceProfiles": PROFILES,
            "targets": [{"namespace": "default", "name": "chat", "roles": ["prefill", "decode"]}],
        },
        source="api",
    )
    production, _ = records.create_environment(
        operator,
        {
            "name": "production",
            "rank": 2,
            "requiresApproval": True,
            "resourceProfiles": PROFILES,
            "targets": [{"namespace": "prod", "name": "chat", "roles": ["prefill", "decode"]}],
        },
        source="api",
    )
    return {"sim": chat, "v1": v1, "v2": v2, "staging": staging, "production": production}
