"""The simulated GPU of a revision over an analysis window, from its requests. Pure.

The embedded cluster has no GPUs to measure, so the canary analysis' resource metrics
(``gpuUtilization``, ``gpuMemoryMiB``) are modelled from the load, the same model as the Capacity
panel's (a batched engine):

- an engine's compute grows with its batch until the batch is full: utilisation = min(1, requests
  in flight / safe concurrency);
- its memory holds the weights (``WEIGHTS_SHARE`` of the GPU) and the KV cache of the sequences in
  flight (``KV_SHARE`` at ``maxConcurrentSequences``), on a GPU of ``GPU_MEMORY_MIB``.

Over a window the requests in flight are their mean: the seconds of the revision's requests inside
the window divided by its length and by the revision's engines (its Serving entry pods). Safe
concurrency and sequences come from the release's batching in the pod's ``MODEL_CONFIG``
(``maxBatchSize``, ``maxConcurrentSequences``); without it the simulated engine batches
``DEFAULT_BATCH``.

Example: 2 engines, 60 s window, requests busy 1,440 s in it in total -> 12 in flight per engine;
batch 16, 128 sequences -> utilisation 0.75, memory (0.55 + 0.40 x 12/128) x 81,920 = 48,128 MiB.

Only asked for when the analysis has a GPU check (``wants_gpu``), so the figures of an analysis
without one are what they always were.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

WEIGHTS_SHARE = 0.55
KV_SHARE = 0.40
GPU_MEMORY_MIB = 81920  # an 80 GB card
DEFAULT_BATCH = 16
METRICS = ("gpuUtilization", "gpuMemoryMiB")


def wants_gpu(analysis: Any) -> bool:
    """Whether ``analysis`` (``canary.Analysis`` or None) checks a GPU metric."""
    return analysis is not None and any(c.metric in METRICS for c in analysis.checks)


def busy_seconds(intervals: Iterable[tuple[float, float]], start: float, end: float) -> float:
    """Seconds of ``intervals`` (began, ended) inside [start, end). Example: (50, 70), (65, 200) in
    [60, 120) -> 10 + 55 = 65."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)


def batching_of(pod: dict[str, Any]) -> tuple[int, int]:
    """(safe concurrency, sequences) from the first container's ``MODEL_CONFIG`` (a release's
    batching), else ``DEFAULT_BATCH`` for both."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    env = {e.get("name"): e.get("value") for e in containers[0].get("env") or []}
    try:
        batching = (json.loads(env.get("MODEL_CONFIG") or "{}") or {}).get("batching") or {}
    except (ValueError, AttributeError):
        batching = {}
    safe = batching.get("maxBatchSize") or batching.get("maxConcurrentSequences")
    safe = int(safe) if isinstance(safe, int) and safe > 0 else DEFAULT_BATCH
    seqs = batching.get("maxConcurrentSequences")
    return safe, int(seqs) if isinstance(seqs, int) and seqs > 0 else safe


def window_gpu(busy: float, span: float, engines: int, safe: int, sequences: int) -> dict[str, Any]:
    """``gpuUtilization`` and ``gpuMemoryMiB`` of ``engines`` engines that were busy ``busy``
    request-seconds over ``span`` seconds (None for both without an engine or a span)."""
    if engines <= 0 or span <= 0:
        return dict.fromkeys(METRICS)
    in_flight = busy / span / engines
    return {
        "gpuUtilization": round(min(1.0, in_flight / safe), 4),
        "gpuMemoryMiB": round((WEIGHTS_SHARE + KV_SHARE * min(1.0, in_flight / sequences)) * GPU_MEMORY_MIB),
    }


class GpuFigures:
    """A ``MetricsPort`` that adds the simulated GPU figures to another port's windows, for a
    ModelServing whose analysis checks a GPU metric.

    ``analysis_of(namespace, name)``: its analysis (or None); ``engines_of(namespace, name,
    revision)``: the revision's Serving entry pods now; ``busy_of(namespace, name, revision,
    start, end, at)``: (began, ended) of its requests that overlap the window, a running one ended
    at ``at``. It is a ``MetricsPort`` and nothing else: the wrapped port (the simulator's router,
    say) is still asked directly for what else it offers."""

    def __init__(self, port: Any, *, analysis_of: Any, engines_of: Any, busy_of: Any) -> None:
        self.port = port
        self.analysis_of = analysis_of
        self.engines_of = engines_of
        self.busy_of = busy_of

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict[str, Any]:
        figures = self.port.window(namespace, name, revision, start, end, at=at)
        if not wants_gpu(self.analysis_of(namespace, name)):
            return figures
        pods = self.engines_of(namespace, name, revision)
        safe, sequences = batching_of(pods[0]) if pods else (DEFAULT_BATCH, DEFAULT_BATCH)
        intervals = self.busy_of(namespace, name, revision, start, end, end if at is None else at)
        return {**figures, **window_gpu(busy_seconds(intervals, start, end), end - start, len(pods), safe, sequences)}
