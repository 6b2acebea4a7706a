"""The running controller's analysis on the embedded cluster: a ModelServing whose ``simulated``
analysis checks a GPU metric gets the simulated GPU figures from the stored request records and the
revision's Serving entry pods (``controller.runtime.analysis.simulated_gpu``)."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.records import store
from controller.records.figures import DatabaseMetrics
from controller.runtime.analysis import simulated_gpu

pytestmark = pytest.mark.django_db


def entry(name: str, revision: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {naming.LABEL_REVISION: revision, naming.LABEL_POD_INDEX: "0"}},
        "spec": {"containers": [{"name": "engine", "env": []}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


class Cluster:
    def __init__(self, metric: str) -> None:
        self.metric = metric

    def get_modelserving(self, namespace, name):
        analysis = {"intervalSeconds": 60, "metrics": [{"metric": self.metric, "max": 0.9}]}
        return {"spec": {"rolloutStrategy": {"canary": {"steps": [{"setPartition": 1}], "analysis": analysis}}}}

    def list_pods(self, namespace, name):
        return [entry("chat-0-decode-0-0", "c2"), entry("chat-1-decode-0-0", "c2"), entry("chat-2-decode-0-0", "s1")]


def records(revision: str, n: int, began: float, seconds: float, *, running: bool = False) -> list[dict]:
    return [
        {
            "request_id": f"{revision}-{began}-{seconds}-{running}-{i}",
            "namespace": "default",
            "name": "chat",
            "revision": revision,
            "latency_ms": 100.0,
            "status": "running" if running else "ok",
            "feedback": None,
            "started": began,
            "finished": None if running else began + seconds,
        }
        for i in range(n)
    ]


def test_the_live_analysis_models_the_gpu_of_each_revision_from_its_records_and_engines():
    # 24 requests busy the whole window on c2's 2 engines: 12 each of the default batch of 16.
    store.write_records(records("c2", 20, 1000.0, 60.0) + records("c2", 4, 1000.0, 0.0, running=True))
    port = simulated_gpu(DatabaseMetrics(), Cluster("gpuUtilization"))
    got = port.window("default", "chat", "c2", 1000.0, 1060.0, at=1060.0)
    assert got["gpuUtilization"] == 0.75 and got["gpuMemoryMiB"] == round((0.55 + 0.40 * 12 / 16) * 81920)
    assert got["requests"] == 20  # the records' own figures are unchanged


def test_without_a_gpu_check_the_windows_are_the_records_figures_alone():
    store.write_records(records("c2", 5, 1000.0, 10.0))
    port = simulated_gpu(DatabaseMetrics(), Cluster("errorRate"))
    assert "gpuUtilization" not in port.window("default", "chat", "c2", 1000.0, 1060.0)
