"""The dashboard's preview on the embedded cluster: a copy of the ModelServing as it runs.

``simulation.preview`` reads the ModelServing, its revisions and its pods from the database-backed
cluster at its clock's time and previews the change from there (``preview_from``): a workload that
is Ready rolls from Ready, one caught mid-rollout from where it is, and GPUs other workloads hold
stay taken in the copy. Nothing is applied to the live cluster.
"""

from __future__ import annotations

import pytest

from controller.models import SimClock
from controller.runtime import enqueue
from controller.runtime.backend import sim_cluster
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from rolloutui.services import controls, simulation
from tests.factories import group_strategy, modelserving, role

from .helpers import ManualClock, is_ready

pytestmark = pytest.mark.django_db

# terminate 1 + schedule 1 + pull 2 + start 1 + load 5: a group is replaced in 10 s.
TIMING = {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1}


@pytest.fixture
def live(monkeypatch):
    # Passes are run by the test, not by a worker: nothing goes to the broker.
    monkeypatch.setattr(enqueue, "publish", lambda *a, **k: None)
    clock = ManualClock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    SimClock.objects.update_or_create(
        pk=1, defaults={"wall_base": clock.t, "sim_base": clock.t, "config": {"timing": TIMING}}
    )
    return clock


def deploy(name, replicas, *, image="engine:v1"):
    sim_cluster(actor="operator").create_modelserving(
        modelserving(
            name=name, replicas=replicas, strategy=group_strategy(maxUnavailable=1), roles=[role("serve", image=image)]
        )
    )


def run(clock, seconds, names=("small",)):
    for _ in range(int(seconds)):
        clock.t += 1
        tick(sim_cluster(actor="kubelet"))
        for name in names:
            run_reconcile("default", name)


def all_ready(name):
    pods = sim_cluster().list_pods("default", name)
    return bool(pods) and all(is_ready(p) for p in pods)


def image_patch(image):
    return {"spec": {"template": {"roles": [role("serve", image=image)]}}}


def test_a_ready_modelserving_is_previewed_from_where_it_runs_and_nothing_is_applied(live):
    DatabaseCluster().add_node(8)
    deploy("small", 2)
    run(live, 12)
    assert all_ready("small")
    before = sim_cluster().get_modelserving("default", "small")
    out = simulation.preview("default", "small", image_patch("engine:v2"))
    assert out["baselineConverged"] and out["converged"]
    # Two groups, one at a time (maxUnavailable 1), 10 s each.
    assert 20 <= out["durationSeconds"] <= 21
    assert out["minAvailable"] == 1 == out["floor"] and out["desired"] == 2
    assert out["capacity"][0] == [0.005, 2] and any("maxUnavailable" in r for r in out["blockedReasons"])
    after = sim_cluster().get_modelserving("default", "small")
    assert (
        after["spec"] == before["spec"]
        and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    )


def test_a_modelserving_caught_mid_rollout_is_previewed_from_there(live, operator):
    DatabaseCluster().add_node(8)
    deploy("small", 2)
    run(live, 12)
    controls.set_image(operator, "default", "small", role="serve", image="engine:v2", reason="bump", source="api")
    run(live, 3)  # group 1 is being replaced: one group available
    out = simulation.preview("default", "small", image_patch("engine:v3"))
    assert not out["baselineConverged"] and out["converged"]
    # From the copy's first pass on, one group is available, never two until the end: the copy
    # did not start from a Ready workload (a bring-up from the manifest would have).
    assert out["capacity"][0][1] == 1 and out["capacity"][-1][1] == 2
    assert (
        sim_cluster().get_modelserving("default", "small")["spec"]["template"]["roles"][0]["entryTemplate"]["spec"][
            "containers"
        ][0]["image"]
        == "engine:v2"
    )


def test_gpus_other_workloads_hold_stay_taken_in_the_copy(live):
    DatabaseCluster().add_node(8)
    deploy("small", 2)
    deploy("other", 6)
    run(live, 12, names=("small", "other"))
    assert all_ready("small") and all_ready("other")
    # Two more groups need two GPUs: the node's 8 are all held (2 by small, 6 by other).
    out = simulation.preview("default", "small", {"spec": {"replicas": 4}})
    assert not out["converged"]
    assert any("unschedulable" in r for r in out["blockedReasons"]), out["blockedReasons"]
    # With the other workload gone the same change fits.
    sim_cluster(actor="operator").delete_modelserving("default", "other")
    run(live, 2, names=("small",))
    assert simulation.preview("default", "small", {"spec": {"replicas": 4}})["converged"]
