"""The live app's traffic (``database.traffic``) applies a canary weight from the ModelServing's
status: the request records of the update revision are its share of the requests, whatever the
number of its pods."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.models import RequestRecord, SimObject, SimTraffic
from controller.simcluster.config import Span
from controller.simcluster.database.store import DatabaseCluster
from tests.live.helpers import ManualClock, config, is_ready, pod, run_for, state_traffic

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 14  # the controller's state Redis of this module (tests/conftest.py, state_redis)


def revision_pod(name, revision):
    p = pod(name, image="engine:v1")
    p["metadata"]["labels"][naming.LABEL_REVISION] = revision
    return p


def test_live_traffic_sends_the_weight_of_new_requests_to_the_update_revision(state_redis):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(
        clock, actor="kubelet", config=config({"engine:v1": {"latency_ms": Span(50, 60)}}), traffic=traffic
    )
    cluster.add_node(8)
    # Three stable pods and one canary pod: by load alone the canary would get about a quarter.
    names = ["demo-0-serve-0-0", "demo-1-serve-0-0", "demo-2-serve-0-0"]
    for name in names:
        cluster.create_pod(revision_pod(name, "stable1"))
    cluster.create_pod(revision_pod("demo-3-serve-0-0", "canary2"))
    run_for(cluster, 40)
    assert all(is_ready(cluster.get_pod("default", n)) for n in [*names, "demo-3-serve-0-0"])
    SimObject.objects.create(
        kind=SimObject.KIND_MODELSERVING,
        namespace="default",
        name="demo",
        ms_name="demo",
        uid="u1",
        resource_version=1,
        data={
            "metadata": {"name": "demo", "namespace": "default"},
            "status": {
                "canary": {"revision": "canary2", "stable": "stable1", "weight": 10, "phase": "Paused"},
                # Serving (its clients start once it is: database/traffic.py _serves_yet).
                "conditions": [{"type": "Available", "status": "True"}],
            },
        },
    )
    SimTraffic.objects.create(namespace="default", name="demo", rps=50, duration_low=0.5, duration_high=1.0)
    run_for(cluster, 60)
    counts = {rev: RequestRecord.objects.filter(revision=rev).count() for rev in ("stable1", "canary2")}
    total = sum(counts.values())
    assert total > 2000, counts
    assert 0.07 <= counts["canary2"] / total <= 0.13, counts
