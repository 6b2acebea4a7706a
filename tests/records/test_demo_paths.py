"""The demo ModelServing on the database-backed embedded cluster (as `make run` starts it): every
request goes prefill -> decode on one revision and leaves a record with its path and token
figures, so the Paths panel and the TTFT/TPOT comparison have data."""

from __future__ import annotations

import copy

import pytest

from controller.models import RequestRecord, SimClock, SimTraffic
from controller.runtime import enqueue
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database import demo
from controller.simcluster.database.tick import tick
from tests.live.helpers import ManualClock

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 9  # away from the broker (0), the channel layer (1), the live state (2) and the other tests


@pytest.fixture
def live(state_redis, monkeypatch, db):
    monkeypatch.setattr(enqueue, "publish", lambda *a, **k: None)
    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    monkeypatch.setattr("rolloutui.services.cluster.get_clock", lambda: clock)
    config = {**copy.deepcopy(demo.CONFIG), "timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1}}
    SimClock.objects.update_or_create(pk=1, defaults={"wall_base": clock.t, "sim_base": clock.t, "config": config})
    return clock


def test_the_demo_sends_every_request_prefill_then_decode_with_token_figures(live, viewer):
    from controller.runtime.backend import sim_cluster
    from rolloutui.services import records
    from rolloutui.services.cluster import get_cluster

    clock = live
    cluster = get_cluster()
    for _ in range(6):
        cluster.add_node(8)
    cluster.create_modelserving(demo.DEMO_MANIFEST)
    SimTraffic.objects.create(namespace="default", name="demo", **demo.TRAFFIC)

    def run(seconds):
        for _ in range(seconds):
            clock.t += 1
            tick(sim_cluster(actor="kubelet"))
            run_reconcile("default", "demo")

    for _ in range(12):  # its pods come up: Healthy within two minutes of simulated time
        run(10)
        if (cluster.get_modelserving("default", "demo").get("status") or {}).get("phase") == "Healthy":
            break
    run(120)
    done = RequestRecord.objects.filter(namespace="default", name="demo").exclude(status="running")
    assert done.count() >= 100
    record = done.filter(status="ok").first()
    assert [hop["role"] for hop in record.path] == ["prefill", "decode"]
    assert {hop["revision"] for hop in record.path} == {record.revision} and record.mixed is False
    assert 90 <= record.ttft_ms <= 260 and 15 <= record.tpot_ms <= 30 and 100 <= record.output_tokens <= 600

    # Once the demo serves, none refused and none mixed (before its pods came up, requests found no path).
    got = records.paths(viewer, "default", "demo", window=90, bucket=30)
    assert got["path"] == ["prefill", "decode"]
    assert got["totals"]["consistent"] >= 100, got["totals"]
    assert got["totals"]["mixed"] == got["totals"]["kvMismatch"] == got["totals"]["noRoute"] == 0
    assert [g["consistent"] for g in got["groups"]] == [[record.revision]] * 4
    figures = records.comparison(viewer, "default", "demo", window=900, bucket=60)["stable"]
    assert 90 <= figures["ttftP95Ms"] <= 265 and 15 <= figures["tpotP95Ms"] <= 30


def test_the_first_rollout_of_the_readme_moves_decode_alone_and_breaks_no_request(live, viewer, operator):
    """README's first rollout sets decode's image to v0.9.2 and leaves prefill on v0.9.1: a patch
    release that keeps the KV cache format, so every new group's prefill -> decode path still works
    (the demo's v0.10.0 is the image that changes it)."""
    from controller.runtime.backend import sim_cluster
    from rolloutui.services import controls, records
    from rolloutui.services.cluster import get_cluster

    clock = live
    cluster = get_cluster()
    for _ in range(6):
        cluster.add_node(8)
    cluster.create_modelserving(demo.DEMO_MANIFEST)
    SimTraffic.objects.create(namespace="default", name="demo", **demo.TRAFFIC)

    def run(seconds):
        for _ in range(seconds):
            clock.t += 1
            tick(sim_cluster(actor="kubelet"))
            run_reconcile("default", "demo")

    def phase():
        return (cluster.get_modelserving("default", "demo").get("status") or {}).get("phase")

    for _ in range(12):
        run(10)
        if phase() == "Healthy":
            break
    since = clock.t
    controls.set_image(
        operator, "default", "demo", role="decode", image="vllm/vllm-openai:v0.9.2", reason="first", source="cli"
    )
    for _ in range(60):  # four groups one at a time, each drained (at most 60 s) and reloaded
        run(10)
        if phase() == "Healthy" and clock.t - since > 60:
            break
    assert phase() == "Healthy"
    after = RequestRecord.objects.filter(namespace="default", name="demo", started__gte=since).exclude(status="running")
    assert after.count() >= 100
    assert len(set(after.values_list("revision", flat=True))) == 2  # served by both revisions on the way
    assert not after.filter(path_error__in=["kvMismatch", "noRoute"]).exists()
    assert not after.filter(mixed=True).exists()
    got = records.paths(viewer, "default", "demo", window=int(clock.t - since), bucket=60)
    assert got["totals"]["kvMismatch"] == got["totals"]["mixed"] == 0, got["totals"]
