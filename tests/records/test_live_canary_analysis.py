"""On the database-backed embedded cluster, the canary analysis runs in the controller's pass over
the request records its router leaves: a canary of the demo's flaky image (one request in five
fails) is paused, with the AnalysisFailed condition and an audit record from the analysis that
carries the figures."""

from __future__ import annotations

import pytest

from controller.models import RequestRecord, SimClock, SimTraffic
from controller.runtime import enqueue
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database import demo
from controller.simcluster.database.tick import tick
from tests.factories import group_strategy, modelserving, role, with_canary
from tests.live.helpers import ManualClock

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 11  # away from the broker (0), the channel layer (1), the live state (2) and the other tests
GOOD = demo.DIGESTS["vllm/vllm-openai:v0.9.2"]
FLAKY = demo.DIGESTS["vllm/vllm-openai:v0.9.2-flaky"]


def manifest() -> dict:
    strategy = with_canary(
        group_strategy(maxUnavailable=1),
        steps=[{"setPartition": "75%"}, {"pause": {}}, {"setPartition": 0}],
        analysis={
            "intervalSeconds": 30,
            "minRequests": 20,
            "failureLimit": 1,
            "onFailure": "Pause",
            "metrics": [{"metric": "errorRate", "max": 0.05}],
        },
    )
    return modelserving(name="chat", replicas=4, strategy=strategy, roles=[role("decode", image=GOOD)])


@pytest.fixture
def live(state_redis, monkeypatch, db):
    # Passes are run by the test, not by a worker: nothing goes to the broker.
    monkeypatch.setattr(enqueue, "publish", lambda *a, **k: None)
    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    SimClock.objects.update_or_create(
        pk=1,
        defaults={
            "wall_base": clock.t,
            "sim_base": clock.t,
            "config": {
                "timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1},
                "images": demo.CONFIG["images"],
            },
        },
    )
    return clock


def run(clock, seconds, until):
    from controller.runtime.backend import sim_cluster

    end = clock.t + seconds
    while clock.t < end:
        clock.t += 1
        tick(sim_cluster(actor="kubelet"))
        run_reconcile("default", "chat")
        if until():
            return True
    return False


def test_a_canary_of_the_flaky_image_is_paused_by_the_analysis_with_the_figures_in_the_audit(live, operator):
    from rolloutui.models import AuditRecord
    from rolloutui.services import controls
    from rolloutui.services.cluster import get_cluster

    clock = live
    cluster = get_cluster()
    for _ in range(2):
        cluster.add_node(4)
    cluster.create_modelserving(manifest())
    SimTraffic.objects.create(namespace="default", name="chat", rps=20, duration_low=1, duration_high=4)

    def status():
        return cluster.get_modelserving("default", "chat").get("status") or {}

    assert run(clock, 120, lambda: status().get("phase") == "Healthy")
    controls.set_image(operator, "default", "chat", role="decode", image=FLAKY, reason="engine v0.9.2", source="api")
    paused = run(clock, 400, lambda: cluster.get_modelserving("default", "chat")["spec"].get("paused") is True)
    assert paused, status().get("canary")

    st = status()
    failed = [c for c in st.get("conditions") or [] if c.get("type") == "AnalysisFailed"]
    assert failed and failed[0]["status"] == "True" and "error rate" in failed[0]["message"]
    canary_rev = st["canary"]["revision"]
    assert RequestRecord.objects.filter(revision=canary_rev).exists()
    audit = AuditRecord.objects.get(source="analysis")
    assert audit.action == "pause" and audit.namespace == "default" and audit.name == "chat"
    assert "error rate" in audit.reason
    figures = audit.details["figures"]
    assert figures["canary"]["errorRate"] > 0.05 and figures["canary"]["requests"] >= 20
    assert figures["stable"]["errorRate"] == 0.0
