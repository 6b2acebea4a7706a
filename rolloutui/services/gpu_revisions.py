"""GPU utilisation and GPU memory per revision of a ModelServing: the resources column of the
comparison (``records.comparison``), stable beside canary.

Per revision, over the instances of that revision that pass every gate (Serving) and run the model:

- ``gpuUtilization``: the mean busy share of their GPUs, 0-1;
- ``gpuMemoryMiB``: the mean GPU memory used per GPU, in MiB;
- ``gpus``: how many GPUs those instances hold (their templates' ``nvidia.com/gpu``, counted by
  ``core.podresources``).

Sources, the same as the Capacity panel's (``capacity``):

- **simulated cluster**: modelled from the load now (``capacity.simulated_gpu``: the batch a
  revision's instances run against the release's safe concurrency; weights plus KV cache for the
  memory) on a GPU of ``SIM_GPU_MEMORY_MIB``;
- **Kubernetes with** ``ROLLOUTUI_PROMETHEUS_URL``: DCGM's ``DCGM_FI_DEV_GPU_UTIL`` (percent) and
  ``DCGM_FI_DEV_FB_USED`` (MiB) of the revision's pods, averaged over the comparison's window
  (``avg_over_time``), the pods told apart by their revision label;
- otherwise not available (``source`` says why; every figure None).

Example (simulated): revision 5f8d has two Serving decode instances with 8 and 16 requests in
flight, safe concurrency 16, 128 sequences -> utilisation 0.75, memory (0.55 + 0.40 x 12/128) x
81,920 = 48,128 MiB.
"""

from __future__ import annotations

import statistics
from typing import Any

from django.conf import settings

from controller.core.naming import LABEL_REVISION
from controller.runtime.simulator import get_simulator

from . import capacity, cluster, state

# The simulated GPU's memory: an 80 GB card.
SIM_GPU_MEMORY_MIB = 81920
KEYS = ("gpuUtilization", "gpuMemoryMiB", "gpus")


def _empty() -> dict[str, Any]:
    return dict.fromkeys(KEYS)


def simulated(namespace: str, name: str, view: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Per revision, from the state view's instances (simulated cluster)."""
    view = view if view is not None else state.get_state(namespace, name)
    manifest = cluster.get_cluster().get_modelserving(namespace, name)
    spec_roles = capacity.spec_roles(manifest)
    batching, model_roles, _ = capacity._batching(namespace, name, view)
    safe = capacity.safe_concurrency(batching)
    sequences = batching.get("maxConcurrentSequences")
    sequences = sequences if isinstance(sequences, int) else None
    by_revision: dict[str, list[dict[str, Any]]] = {}
    for inst in view.get("instances") or []:
        if inst.get("gate") != "Serving" or (model_roles and inst.get("role") not in model_roles):
            continue
        by_revision.setdefault(str(inst.get("revision")), []).append(inst)
    out: dict[str, dict[str, Any]] = {}
    for revision, mine in by_revision.items():
        util, memory = capacity.simulated_gpu([int(i.get("inFlight") or 0) for i in mine], safe, sequences)
        gpus = sum(capacity.gpus_per_instance(spec_roles.get(str(i.get("role")))) for i in mine)
        out[revision] = {
            "gpuUtilization": util,
            "gpuMemoryMiB": None if memory is None else round(memory * SIM_GPU_MEMORY_MIB),
            "gpus": gpus,
        }
    return out


def dcgm(url: str, namespace: str, pods: list[dict[str, Any]], window_seconds: float) -> dict[str, dict[str, Any]]:
    """Per revision, DCGM's figures of its pods averaged over the last ``window_seconds``."""
    revision_of = {
        (p.get("metadata") or {}).get("name"): ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_REVISION)
        for p in pods
    }
    names = "|".join(sorted(n for n, rev in revision_of.items() if n and rev))
    if not names:
        return {}
    selector = f'namespace="{namespace}",pod=~"{names}"'
    window = f"{max(1, int(round(window_seconds)))}s"
    util = capacity._prometheus(url, f"avg by (pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{{{selector}}}[{window}]))")
    used = capacity._prometheus(url, f"avg by (pod) (avg_over_time(DCGM_FI_DEV_FB_USED{{{selector}}}[{window}]))")
    gathered: dict[str, dict[str, list[float]]] = {}
    for series, key, scale in ((util, "gpuUtilization", 100.0), (used, "gpuMemoryMiB", 1.0)):
        for item in series:
            revision = revision_of.get((item.get("metric") or {}).get("pod"))
            if revision is None:
                continue
            gathered.setdefault(revision, {}).setdefault(key, []).append(float(item["value"][1]) / scale)
    out: dict[str, dict[str, Any]] = {}
    for revision, figures in gathered.items():
        entry = _empty()
        if figures.get("gpuUtilization"):
            entry["gpuUtilization"] = round(statistics.fmean(figures["gpuUtilization"]), 4)
        if figures.get("gpuMemoryMiB"):
            entry["gpuMemoryMiB"] = round(statistics.fmean(figures["gpuMemoryMiB"]))
        out[revision] = entry
    return out


def by_revision(namespace: str, name: str, *, window_seconds: float) -> dict[str, Any]:
    """``{"source": words, "revisions": {revision: {gpuUtilization, gpuMemoryMiB, gpus}}}``."""
    if get_simulator() is not None:
        return {"source": "simulated (the load now)", "revisions": simulated(namespace, name)}
    url = getattr(settings, "ROLLOUTUI_PROMETHEUS_URL", "") or ""
    if not url:
        return {"source": "not available (set ROLLOUTUI_PROMETHEUS_URL for DCGM)", "revisions": {}}
    try:
        pods = cluster.get_cluster().list_pods(namespace, name)
        return {"source": "prometheus (DCGM)", "revisions": dcgm(url, namespace, pods, window_seconds)}
    except (OSError, ValueError, KeyError) as exc:
        return {"source": f"not available (Prometheus: {exc})", "revisions": {}}


def figures_of(resources: dict[str, Any], revision: str | None) -> dict[str, Any]:
    """The keys one comparison entry gets (None where the revision has no figure)."""
    return {**_empty(), **((resources.get("revisions") or {}).get(revision or "") or {})}
