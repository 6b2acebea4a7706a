"""The simulated GPU of a revision over an analysis window (``controller.core.gpu``): the figures
the embedded cluster gives the canary analysis' ``gpuUtilization`` and ``gpuMemoryMiB`` checks."""

from __future__ import annotations

import json

import pytest

from controller.core.gpu import DEFAULT_BATCH, GpuFigures, batching_of, busy_seconds, window_gpu


@pytest.mark.parametrize(
    "intervals,busy",
    [([(50, 70), (65, 200)], 65.0), ([(0, 10)], 0.0), ([(60, 120)], 60.0), ([], 0.0)],
    ids=[
        "requests that began before the window or end after it count their part inside it",
        "a request that ended before the window counts nothing",
        "a request exactly over the window counts the whole window",
        "no request, no busy seconds",
    ],
)
def test_busy_seconds_count_the_part_of_each_request_inside_the_window(intervals, busy):
    assert busy_seconds(intervals, 60, 120) == busy


@pytest.mark.parametrize(
    "busy,engines,safe,seqs,expected",
    [
        (1440.0, 2, 16, 128, {"gpuUtilization": 0.75, "gpuMemoryMiB": round((0.55 + 0.40 * 12 / 128) * 81920)}),
        (6000.0, 2, 16, 32, {"gpuUtilization": 1.0, "gpuMemoryMiB": round(0.95 * 81920)}),
        (0.0, 3, 16, 16, {"gpuUtilization": 0.0, "gpuMemoryMiB": round(0.55 * 81920)}),
        (100.0, 0, 16, 16, {"gpuUtilization": None, "gpuMemoryMiB": None}),
    ],
    ids=[
        "12 requests in flight per engine of a batch of 16: three quarters busy, KV cache of 12 of 128",
        "more in flight than the batch: the GPU is full and the KV cache at its share",
        "idle engines hold only the weights",
        "a revision with no Serving engine has no GPU figure",
    ],
)
def test_the_window_gpu_of_a_revision(busy, engines, safe, seqs, expected):
    assert window_gpu(busy, 60.0, engines, safe, seqs) == expected


def pod(config=None):
    env = [{"name": "MODEL_CONFIG", "value": json.dumps(config)}] if config is not None else []
    return {"spec": {"containers": [{"name": "engine", "env": env}]}}


def test_the_batch_comes_from_the_releases_model_config_else_the_simulated_default():
    assert batching_of(pod({"batching": {"maxBatchSize": 32, "maxConcurrentSequences": 256}})) == (32, 256)
    assert batching_of(pod({"batching": {"maxConcurrentSequences": 64}})) == (64, 64)
    assert batching_of(pod()) == (DEFAULT_BATCH, DEFAULT_BATCH)
    assert batching_of({"spec": {"containers": [{"env": [{"name": "MODEL_CONFIG", "value": "{bad"}]}]}}) == (16, 16)


class Port:
    def window(self, namespace, name, revision, start, end, *, at=None):
        return {"requests": 10, "errorRate": 0.0}


def test_gpu_figures_are_added_only_for_an_analysis_that_checks_them():
    from controller.core.canary import Analysis, Check

    with_gpu = Analysis(60.0, 20, 1, "Pause", "simulated", (Check("gpuUtilization", "max", 0.9),), {})
    without = Analysis(60.0, 20, 1, "Pause", "simulated", (Check("errorRate", "max", 0.05),), {})
    chosen = {"a": with_gpu, "b": without}
    port = GpuFigures(
        Port(),
        analysis_of=lambda ns, name: chosen[name],
        engines_of=lambda ns, name, rev: [pod(), pod()],
        busy_of=lambda ns, name, rev, start, end, at: [(0.0, 60.0)] * 24,
    )
    assert port.window("d", "a", "r", 0.0, 60.0) == {
        "requests": 10,
        "errorRate": 0.0,
        "gpuUtilization": 0.75,
        "gpuMemoryMiB": round((0.55 + 0.40 * 12 / 16) * 81920),
    }
    assert port.window("d", "b", "r", 0.0, 60.0) == {"requests": 10, "errorRate": 0.0}
