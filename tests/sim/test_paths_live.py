"""The live app's simulated traffic through request paths: each request passes prefill then decode,
leaves one record with its hops, token figures and whether its path was mixed; blind routing across
a KV format change leaves kvMismatch records, revision-affine routing none."""

from __future__ import annotations

import copy

import pytest

from controller.core import naming
from controller.models import RequestRecord, SimTraffic
from controller.simcluster.config import Span
from controller.simcluster.database.store import DatabaseCluster
from tests.factories import modelserving, role
from tests.live.helpers import ManualClock, config, is_ready, mark_available, pod, run_for, state_traffic

# transaction=True: on PostgreSQL under `--dist loadgroup` a plain rollback left one test's request
# records (mixed ones of the blind run) to the next; flushing the tables between tests does not.
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

STATE_REDIS_DB = 13  # away from the broker (0), the channel layer (1), the live state (2) and the other tests

IMAGES = {
    "engine:v1": {"kv_format": "a", "ttft_ms": Span(100, 200), "tpot_ms": Span(20, 30)},
    "engine:v2": {"kv_format": "b", "ttft_ms": Span(50, 60), "tpot_ms": Span(10, 12)},
}


def _pod(name, role_name, revision, image):
    p = pod(name, image=image)
    labels = p["metadata"]["labels"]
    labels[naming.LABEL_ROLE] = role_name
    labels[naming.LABEL_REVISION] = revision
    labels[naming.LABEL_GROUP_ORDINAL] = "0"
    return p


def _run(state_redis, routing_, tokens=True):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cfg = config(IMAGES)
    if tokens:
        cfg.input_tokens, cfg.output_tokens = Span(100, 200), Span(20, 40)
    cluster = DatabaseCluster(clock, actor="kubelet", config=cfg, traffic=traffic)
    cluster.add_node(8)
    ms = modelserving(name="demo", replicas=1, roles=[role("prefill"), role("decode")])
    ms["spec"]["traffic"] = {"path": ["prefill", "decode"], "routing": routing_}
    cluster.create_modelserving(copy.deepcopy(ms))
    # Prefill of revision "old" (KV a); decode of "old" (KV a) and of "new" (KV b).
    cluster.create_pod(_pod("demo-0-prefill-0-0", "prefill", "old", "engine:v1"))
    cluster.create_pod(_pod("demo-0-decode-0-0", "decode", "old", "engine:v1"))
    cluster.create_pod(_pod("demo-0-decode-1-0", "decode", "new", "engine:v2"))
    run_for(cluster, 40)
    assert all(is_ready(p) for p in cluster.list_pods("default", "demo"))
    mark_available(cluster, "demo")
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=0.5, duration_high=1.0)
    run_for(cluster, 30)
    return RequestRecord.objects.exclude(status="running"), SimTraffic.objects.get(name="demo"), traffic


def test_each_request_of_a_path_leaves_one_record_with_its_hops_and_token_figures(state_redis):
    finished, row, _ = _run(state_redis, "revisionAffine")
    assert finished.count() > 300
    assert finished.count() == row.completed  # one record and one completion per request, not per hop
    record = finished.filter(status="ok").first()
    assert [h["role"] for h in record.path] == ["prefill", "decode"]
    assert record.path[0]["pod"] == "demo-0-prefill-0-0"
    assert record.mixed is False
    assert 100 <= record.ttft_ms <= 200 and 20 <= record.tpot_ms <= 30
    assert 100 <= record.input_tokens <= 200 and 20 <= record.output_tokens <= 40
    # Affine routing never sends old prefill to the new decode pod.
    assert not finished.filter(mixed=True).exists()
    assert not finished.exclude(path_error="").exists()


def test_blind_routing_across_a_kv_format_change_leaves_kv_mismatch_records(state_redis):
    finished, _, _ = _run(state_redis, "blind")
    mismatched = finished.filter(path_error="kvMismatch")
    assert mismatched.exists()
    assert set(mismatched.values_list("status", flat=True)) == {"error"}
    assert all(r.mixed and r.path[1]["pod"] == "demo-0-decode-1-0" for r in mismatched)
    assert finished.filter(status="ok", mixed=False).exists()


def test_a_first_hop_that_stops_serving_interrupts_its_requests_and_frees_their_last_hop(state_redis):
    _, _, traffic = _run(state_redis, "revisionAffine")
    decode = "demo-0-decode-0-0"
    before = traffic.in_flight_counts("default", [decode]).get(decode, 0)
    # Requests that arrived in the last tick are still making their first token on prefill.
    count = traffic.interrupt("default", "demo-0-prefill-0-0", "test", ms_name="demo", now=2_000_000.0)
    assert count > 0
    interrupted = RequestRecord.objects.filter(status="interrupted")
    assert interrupted.count() == count
    assert all(r.path[1]["pod"] == decode for r in interrupted)
    after = traffic.in_flight_counts("default", [decode]).get(decode, 0)
    assert after == before - count
    assert state_redis.zcard(traffic.requests_key("default", decode)) == after
