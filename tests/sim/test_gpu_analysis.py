"""A canary analysis with a GPU check on the simulated cluster (``simulate``): each judged window
carries both revisions' simulated GPU figures, and an analysis without a GPU check is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from controller.simcluster import modelserving
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario
from controller.simcluster.trace import dumps

HEALTHY = Path(__file__).resolve().parents[1] / "scenarios" / "canary-healthy.yaml"


def with_gpu_check(tmp_path: Path) -> Path:
    raw = yaml.safe_load(HEALTHY.read_text())
    metrics = raw["modelServing"]["spec"]["rolloutStrategy"]["canary"]["analysis"]["metrics"]
    metrics.append({"metric": "gpuUtilization", "maxRatioToStable": 1.5})
    path = tmp_path / "canary-gpu.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_each_judged_window_carries_both_revisions_simulated_gpu_and_a_healthy_canary_passes(tmp_path):
    trace = run_scenario(load_scenario(with_gpu_check(tmp_path)))
    windows = [w for w in trace["analysis"] if w.get("figures")]
    assert windows
    measured = 0
    for w in windows:
        for side in ("stable", "canary"):
            figures = w["figures"][side]
            assert "gpuUtilization" in figures and "gpuMemoryMiB" in figures, w
            if figures["gpuUtilization"] is None:  # no Serving instance of that revision when judged
                assert figures["gpuMemoryMiB"] is None
                continue
            measured += 1
            assert 0.0 <= figures["gpuUtilization"] <= 1.0, w
            assert 0.55 * 81920 <= figures["gpuMemoryMiB"] <= 0.95 * 81920, w
    assert measured >= len(windows)  # most windows measured both sides
    assert all(w["verdict"] != "Fail" for w in windows)
    assert trace["converged"]


def test_an_analysis_without_a_gpu_check_gives_the_same_trace_as_before(monkeypatch):
    with_port = dumps(run_scenario(load_scenario(HEALTHY)))
    monkeypatch.setattr(modelserving, "_with_gpu", lambda router, store: router)
    assert dumps(run_scenario(load_scenario(HEALTHY))) == with_port
    assert "gpuUtilization" not in json.dumps(json.loads(with_port)["analysis"])
