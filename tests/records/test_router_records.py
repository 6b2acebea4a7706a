"""The embedded cluster's router leaves a request record per finished request, per revision, with
its answer drawn from the image profile (the flaky image fails one request in five)."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.models import RequestAggregate, RequestRecord, SimTraffic
from controller.records.figures import DatabaseMetrics
from controller.simcluster.config import Span
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.traffic import LABEL_MODEL_VERSION
from tests.live.helpers import ManualClock, config, is_ready, pod, run_for, state_traffic

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 10  # away from the broker (0), the channel layer (1), the live state (2) and the other tests


def revision_pod(name, revision, image, model_version=None):
    p = pod(name, image=image)
    p["metadata"]["labels"][naming.LABEL_REVISION] = revision
    if model_version:
        p["metadata"]["labels"][LABEL_MODEL_VERSION] = model_version
    return p


def test_each_finished_request_leaves_a_record_of_its_pods_revision_and_answer(state_redis):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    images = {
        "engine:flaky": {"error_rate": 0.2, "latency_ms": Span(100, 200)},
        "engine:v1": {"latency_ms": Span(50, 60)},
    }
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(images), traffic=traffic)
    cluster.add_node(4)
    cluster.create_pod(revision_pod("a-0-serve-0-0", "stable1", "engine:v1"))
    cluster.create_pod(revision_pod("b-0-serve-0-0", "canary2", "engine:flaky", model_version="chat-llm:v2"))
    run_for(cluster, 40)
    assert all(is_ready(cluster.get_pod("default", n)) for n in ("a-0-serve-0-0", "b-0-serve-0-0"))
    SimTraffic.objects.create(namespace="default", name="demo", rps=40, duration_low=0.5, duration_high=1.0)
    start = clock.t
    run_for(cluster, 60)
    finished = RequestRecord.objects.exclude(status="running")
    counts = {rev: finished.filter(revision=rev).count() for rev in ("stable1", "canary2")}
    assert counts["stable1"] > 500 and counts["canary2"] > 500, counts
    total = SimTraffic.objects.get(name="demo").completed
    assert sum(counts.values()) == total  # one record per finished request
    flaky = DatabaseMetrics().window("default", "demo", "canary2", start, clock.t - 5)
    good = DatabaseMetrics().window("default", "demo", "stable1", start, clock.t - 5)
    assert 0.13 < flaky["errorRate"] < 0.27, flaky
    assert good["errorRate"] == 0.0 and good["timeoutRate"] == 0.0
    assert 50 <= good["latencyP50Ms"] <= 60 and 100 <= flaky["latencyP99Ms"] <= 200
    assert set(RequestRecord.objects.filter(revision="canary2").values_list("model_version", flat=True)) == {
        "chat-llm:v2"
    }
    record = finished.filter(revision="stable1").first()
    assert record.namespace == "default" and record.name == "demo" and record.finished >= record.started
    assert RequestAggregate.objects.filter(revision="canary2").exists()


def test_requests_cut_off_by_a_stopping_pod_are_recorded_as_interrupted(
    state_redis, django_capture_on_commit_callbacks
):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(), traffic=traffic)
    cluster.add_node(4)
    cluster.create_pod(revision_pod("a-0-serve-0-0", "stable1", "engine:v1"))
    run_for(cluster, 40)
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=60, duration_high=60)
    run_for(cluster, 3)
    busy = traffic.in_flight_counts("default", ["a-0-serve-0-0"])["a-0-serve-0-0"]
    with django_capture_on_commit_callbacks(execute=True):
        cluster.delete_pod("default", "a-0-serve-0-0")
    interrupted = RequestRecord.objects.filter(status="interrupted")
    assert interrupted.count() == busy
    assert set(interrupted.values_list("latency_ms", flat=True)) == {None}
    assert all(r.finished == clock.t for r in interrupted)


def test_a_request_in_flight_has_a_running_record_that_the_analysis_counts_as_started(state_redis):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(), traffic=traffic)
    cluster.add_node(4)
    cluster.create_pod(revision_pod("a-0-serve-0-0", "stable1", "engine:v1"))
    run_for(cluster, 40)
    start = clock.t
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=60, duration_high=60)
    run_for(cluster, 5)
    busy = traffic.in_flight_counts("default", ["a-0-serve-0-0"])["a-0-serve-0-0"]
    running = RequestRecord.objects.filter(status="running")
    assert busy > 0 and running.count() == busy and not RequestRecord.objects.exclude(status="running").exists()
    assert set(running.values_list("finished", flat=True)) == {None}
    got = DatabaseMetrics().window("default", "demo", "stable1", start, clock.t + 1, at=clock.t)
    assert (got["started"], got["requests"]) == (busy, 0)
