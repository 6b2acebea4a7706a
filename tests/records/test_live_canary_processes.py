"""The canary analysis in the running product: a real Celery worker and beat (the physics tick, the
router's request records, the reconcile task with the database MetricsPort) on a shared file
database pause a canary of the flaky image and audit it with source ``analysis``."""

from __future__ import annotations

import pytest

from tests.live.procs import LiveEnv
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.database]

SETUP = """
import time
from controller.models import SimClock, SimTraffic
from controller.runtime.backend import sim_cluster
from controller.simcluster.database import demo
from tests.records.test_live_canary_analysis import manifest
SimClock.objects.update_or_create(pk=1, defaults={
    "wall_base": time.time(), "sim_base": time.time(), "speed": 10.0,
    "config": {"timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1},
               "images": demo.CONFIG["images"]}})
c = sim_cluster(actor="operator")
c.add_node(4); c.add_node(4)
c.create_modelserving(manifest())
SimTraffic.objects.create(namespace="default", name="chat", rps=20, duration_low=1, duration_high=4)
emit(True)
"""

SET_FLAKY = """
from controller.runtime.backend import sim_cluster
from tests.records.test_live_canary_analysis import FLAKY, manifest
role = manifest()["spec"]["template"]["roles"][0]
role["entryTemplate"]["spec"]["containers"][0]["image"] = FLAKY
sim_cluster(actor="operator").patch_modelserving("default", "chat", {"spec": {"template": {"roles": [role]}}})
emit(True)
"""

READ = """
from controller.models import RequestRecord
from controller.runtime.backend import sim_cluster
from rolloutui.models import AuditRecord
ms = sim_cluster().get_modelserving("default", "chat")
audit = [(a.action, a.reason, a.details.get("figures")) for a in AuditRecord.objects.filter(source="analysis")]
emit({"phase": (ms.get("status") or {}).get("phase"), "paused": bool(ms["spec"].get("paused")),
      "conditions": [c for c in (ms.get("status") or {}).get("conditions") or [] if c.get("type") == "AnalysisFailed"],
      "records": RequestRecord.objects.count(), "audit": audit})
"""


def wait_for(env, predicate, seconds, what="the canary state"):
    return wait_until(lambda: env.python(READ), until=predicate, what=what, timeout=seconds, interval=1.0)


def test_the_running_product_pauses_a_flaky_canary_from_its_own_request_records(tmp_path):
    env = LiveEnv(tmp_path, speed=10.0)
    try:
        env.python(SETUP)
        env.start_worker("worker", concurrency=2)
        env.start_beat()
        got = wait_for(env, lambda s: s["phase"] == "Healthy", 90, "the first rollout to be Healthy")
        assert got["phase"] == "Healthy", got
        env.python(SET_FLAKY)
        got = wait_for(env, lambda s: s["paused"] and s["audit"], 180, "the analysis to pause the canary")
        assert got["paused"], got
        assert got["conditions"] and got["conditions"][0]["status"] == "True"
        action, reason, figures = got["audit"][0]
        assert action == "pause" and "error rate" in reason
        assert figures["canary"]["errorRate"] > 0.05 and figures["stable"]["errorRate"] == 0.0
        assert got["records"] > 0
    finally:
        env.close()
