"""The demo InferenceService in the running product: Celery beat's ``sim_tick`` runs the simulated
KServe, Deployment and ReplicaSet controllers, so ``default/llm`` comes up and rolls out a new
image with no reconcile worker involved (they are part of the simulated cluster, not of the
product's controller)."""

from __future__ import annotations

import pytest

from .procs import LiveEnv

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SETUP = """
from controller.runtime.backend import sim_cluster
from controller.simcluster.database.demo import load_demo
emit(load_demo(sim_cluster(actor="operator"), nodes=6, gpus=8))
"""

POLL = """
import time
from rolloutui.services.kserve import state as kserve_state
deadline = time.monotonic() + {timeout}
worst = None
while time.monotonic() < deadline:
    s = kserve_state.get_state("default", "llm")
    active = [i for i in s["instances"] if i["state"] != "Deleting"]
    ready = sum(1 for i in active if i["state"] == "Ready")
    if {track}:
        worst = {{"pods": max(len(active), (worst or {{}}).get("pods", 0)),
                  "available": min(ready, (worst or {{}}).get("available", 99))}}
    if s["converged"] and {done}:
        emit({{"ok": True, "worst": worst, "image": s["spec"]["components"]["predictor"]["image"],
               "revisions": sorted({{i["revision"] for i in s["instances"]}})}})
        break
    time.sleep(0.2)  # poll interval inside one subprocess
else:
    emit({{"ok": False, "state": s["blocked"]}})
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # Speed 20: a demo pod is Ready 0.4-1.2 s after it is created.
    env = LiveEnv(tmp_path_factory.mktemp("live-kserve"), speed=20.0)
    done = env.python(SETUP)
    assert any("InferenceService default/llm" in line for line in done), done
    env.start_beat()
    env.start_worker("worker", concurrency=1)
    yield env
    env.close()


def test_the_demo_inferenceservice_comes_up_and_rolls_out_within_its_budgets(live):
    up = live.python(POLL.format(timeout=60, track="False", done="True"), timeout=120)
    assert up["ok"], up
    first = up["revisions"]
    live.python(
        """
from controller.runtime.backend import sim_cluster
patch = {"spec": {"predictor": {"model": {"image": "vllm/vllm-openai:v0.9.2"}}}}
sim_cluster(actor="operator").patch_object("InferenceService", "default", "llm", patch)
emit(True)
"""
    )
    rolled = live.python(
        POLL.format(
            timeout=90,
            track="True",
            done=f"s['spec'] and sorted({{i['revision'] for i in s['instances']}}) != {first!r}",
        ),
        timeout=150,
    )
    assert rolled["ok"], rolled
    assert rolled["image"] == "vllm/vllm-openai:v0.9.2" and len(rolled["revisions"]) == 1
    # 4 replicas, maxSurge 50% (ConfigMap) = 2, maxUnavailable 25% = 1: at most 6 pods, at least 3 available.
    assert rolled["worst"]["pods"] <= 6 and rolled["worst"]["available"] >= 3, rolled
