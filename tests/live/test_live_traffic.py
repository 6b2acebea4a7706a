"""The live app's simulated traffic (Redis) follows the shared routing rules."""

from __future__ import annotations

import pytest

from controller.models import SimTraffic
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick

from .helpers import ManualClock, config, is_ready, mark_available, pod, run_for, state_traffic

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

STATE_REDIS_DB = 13  # away from the broker (0), the channel layer (1) and the live state (2)


def test_losing_a_worker_pod_interrupts_the_requests_its_entry_was_serving(
    state_redis, django_capture_on_commit_callbacks
):
    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(), traffic=traffic)
    cluster.add_node(4)
    entry, worker = "g-0-serve-0-0", "g-0-serve-0-1"
    cluster.create_pod(pod(entry))
    cluster.create_pod(pod(worker, entry=False))
    run_for(cluster, 40)
    assert is_ready(cluster.get_pod("default", entry)) and is_ready(cluster.get_pod("default", worker))
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=60, duration_high=60)
    run_for(cluster, 3)  # the first tick only starts the clock of the arrivals
    busy = traffic.in_flight_counts("default", [entry, worker])
    assert set(busy) == {entry} and busy[entry] > 10  # only the entry takes requests
    with django_capture_on_commit_callbacks(execute=True):
        cluster.delete_pod("default", worker)
    assert traffic.in_flight_counts("default", [entry]) == {}
    assert SimTraffic.objects.get(name="demo").interrupted == busy[entry]


def test_requests_cut_off_at_a_drain_timeout_go_to_the_rollouts_audit(state_redis, django_capture_on_commit_callbacks):
    from controller.core import naming
    from controller.runtime import interruptions
    from rolloutui.models import AuditRecord

    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(
        clock, actor="kubelet", config=config(), traffic=traffic, on_interrupted=interruptions.report
    )
    cluster.add_node(4)
    entry = "g-0-serve-0-0"
    cluster.create_pod(pod(entry))
    run_for(cluster, 40)
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=60, duration_high=60)
    run_for(cluster, 3)
    busy = traffic.in_flight_counts("default", [entry])[entry]
    # The controller marked it draining, the timeout passed with requests in flight: it deletes it.
    cluster.patch_pod("default", entry, {"metadata": {"annotations": {naming.ANNOTATION_DRAINING: str(clock.t)}}})
    with django_capture_on_commit_callbacks(execute=True):
        cluster.delete_pod("default", entry)
    record = AuditRecord.objects.get(action="drain_timeout")
    assert (record.source, record.namespace, record.details) == (
        "system",
        "default",
        {"pod": entry, "interrupted": busy},
    )
    assert f"{busy} request(s) in flight on {entry}" in record.reason


def test_the_passes_view_shows_the_load_of_serving_pods_read_from_redis_in_one_round_trip(state_redis, settings):
    """The live router (Redis hash, ``in_flight_many``) gives the pass every pod's count: the
    controller's publishes show the load of pods that are not leaving routing, as the dashboard's
    read of the state does, so the page's figures do not flip between the two."""
    from controller.core.reconcile import reconcile
    from controller.runtime.backend import get_router, inflight_key
    from controller.runtime.state import current_state
    from controller.simcluster.database.traffic import field

    from .helpers import manifest

    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="controller", config=config())
    cluster.add_node(8)
    cluster.create_modelserving(manifest("small", replicas=2))
    router = get_router()
    assert type(router).__name__ == "RedisInFlightRouter"
    for _ in range(80):  # create the pods, let the kubelet bring them up
        reconcile(cluster, router, clock, "default", "small")
        clock.t += 1
        tick(cluster)
    pods = cluster.list_pods("default", "small")
    assert pods and all(is_ready(p) for p in pods)
    busy = pods[0]["metadata"]["name"]
    state_redis.hset(inflight_key(), field("default", busy), 3)
    view = reconcile(cluster, router, clock, "default", "small").view
    shown = {(i["group"], i["role"], i["ordinal"]): i["inFlight"] for i in view["instances"]}
    assert sorted(shown.values()) == [0, 3]
    dashboards = current_state("default", "small", cluster=cluster, router=router)
    assert shown == {(i["group"], i["role"], i["ordinal"]): i["inFlight"] for i in dashboards["instances"]}


def test_a_workloads_clients_start_once_it_serves_so_a_fresh_demo_refuses_nothing(state_redis):
    """As a scenario's traffic starts when its workload first converges: while the ModelServing is
    not Available (its groups coming up after `make run`) its clients send nothing, so nothing is
    refused for want of a consistent path; from the first tick it is Available they send."""
    from tests.factories import modelserving

    traffic = state_traffic(state_redis)
    clock = ManualClock()
    cluster = DatabaseCluster(clock, actor="kubelet", config=config(), traffic=traffic)
    cluster.add_node(4)
    cluster.create_modelserving(modelserving(name="demo", replicas=1))
    entry = "g-0-serve-0-0"
    cluster.create_pod(pod(entry))
    run_for(cluster, 40)
    assert is_ready(cluster.get_pod("default", entry))
    SimTraffic.objects.create(namespace="default", name="demo", rps=20, duration_low=1, duration_high=2)
    run_for(cluster, 5)  # no status yet: the controller has not said Available
    row = SimTraffic.objects.get(name="demo")
    assert (row.sent, row.rejected, row.generated_until) == (0, 0, None)

    mark_available(cluster, "demo")
    run_for(cluster, 3)  # the first tick starts the clock of the arrivals
    row.refresh_from_db()
    assert row.sent > 10 and row.rejected == 0
