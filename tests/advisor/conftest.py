"""The demo on the simulated cluster, brought to Ready by a manual clock: what the advisor advises on."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database import clock as sim_clock
from controller.simcluster.database.tick import tick
from rolloutui.services import cluster
from tests.live.helpers import ManualClock


class Clock(ManualClock):
    def forget(self) -> None:
        pass


def ready(namespace: str = "default", name: str = "demo") -> bool:
    ms = cluster.get_cluster().get_modelserving(namespace, name)
    status = ms.get("status") or {}
    return (
        status.get("availableReplicas") == ms["spec"]["replicas"]
        and status.get("updatedReplicas") == ms["spec"]["replicas"]
    )


@pytest.fixture
def demo(db, monkeypatch, operator):
    """default/demo loaded and Ready (4 groups, 6 GPUs each, 48 GPUs), the clock in the test's hands."""
    clock = Clock()
    monkeypatch.setattr(sim_clock, "_shared", clock)
    call_command("load_demo", stdout=io.StringIO())
    for _ in range(600):
        clock.t += 1
        tick(cluster.get_cluster())
        run_reconcile("default", "demo")
        if ready():
            break
    assert ready(), cluster.get_cluster().get_modelserving("default", "demo").get("status")
    return clock
