"""What a change of an InferenceService would do to its predictor's capacity, on a simulated copy.

``preview_inferenceservice(manifest, patch, ...)`` brings the InferenceService up on an empty
simulated cluster (the same simulated KServe, Deployment and ReplicaSet controllers and pod physics
as ``simulate``), waits until it converged, applies the merge patch and follows the rollout until it
converged again. It returns the predictor's Ready pods over time from the change on, and the figures
an operator weighs before applying: the fewest Ready pods, and how long none served (a Recreate
strategy's outage, or a rollout that cannot place its new pods).

Example (4 replicas, ``deploymentStrategy: Recreate``, a new image)::

    {"desired": 4, "minAvailable": 0, "gapSeconds": 31.0, "durationSeconds": 46.0, "converged": True,
     "capacity": [[0.0, 4], [0.0, 0], [31.0, 1], ..., [46.0, 4]], "mode": "Recreate"}

Pure Python (no Django): the caller gives the cluster's size and timing.
"""

from __future__ import annotations

import copy
from typing import Any

from ..objects import INFERENCESERVICE
from ..run import ScenarioRun
from ..scenario import Scenario, parse_scenario
from .runner import InferenceServiceKind

SETTLE_LIMIT = 1800.0
ROLLOUT_LIMIT = 3600.0
STEP = 5.0
PREDICTOR = "predictor"


def _ready_predictor_pods(frame: dict[str, Any]) -> int:
    return sum(1 for i in frame.get("instances") or [] if i["component"] == PREDICTOR and i["state"] == "Ready")


def preview_inferenceservice(
    manifest: dict[str, Any],
    patch: dict[str, Any],
    *,
    deploy: str | None,
    nodes: int,
    gpus_per_node: int,
    timing: dict[str, Any] | None = None,
    settle_limit: float = SETTLE_LIMIT,
    rollout_limit: float = ROLLOUT_LIMIT,
) -> dict[str, Any]:
    """The predictor's capacity while ``patch`` rolls out (see the module docstring). ``deploy`` is
    the ``inferenceservice-config`` ConfigMap's ``deploy`` value (None: no ConfigMap). Raises
    ``ScenarioError`` naming the field when KServe would refuse the InferenceService or the patch."""
    manifest = _fresh_copy(manifest)
    meta = manifest["metadata"]
    scenario = _preview_scenario(manifest, patch, deploy, nodes, gpus_per_node, timing, settle_limit + rollout_limit)
    run = ScenarioRun(scenario, InferenceServiceKind)
    kind = run.kind
    run.begin()  # the apply event at t=0
    run.run_in_steps(lambda: bool((kind.view() or {}).get("converged")), until=settle_limit, step=STEP)
    start = run.loop.now()
    before = kind.view() or {}
    namespace, name = meta["namespace"], meta["name"]
    run.as_operator(lambda: run.store.patch_object(INFERENCESERVICE, namespace, name, patch))
    generation = run.store.get_object(INFERENCESERVICE, namespace, name)["metadata"].get("generation")

    def rolled_out() -> bool:
        view = kind.view() or {}
        return bool(view.get("converged")) and view.get("observedGeneration") == generation

    converged = run.run_in_steps(rolled_out, until=start + rollout_limit, step=STEP)
    frames = [(0.0, _ready_predictor_pods(before))]
    frames += [(f["t"] - start, _ready_predictor_pods(f)) for f in run.trace.frames if f["t"] >= start]
    end = max((t for t, _ in frames), default=0.0) if converged else run.loop.now() - start
    return _outcome(kind.view() or {}, frames, end, converged)


def _fresh_copy(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as a user would apply it: a copy without the server's fields and status."""
    manifest = copy.deepcopy(manifest)
    meta = manifest.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    for key in ("resourceVersion", "uid", "generation", "creationTimestamp"):
        meta.pop(key, None)
    manifest.pop("status", None)
    return manifest


def _preview_scenario(
    manifest: dict[str, Any],
    patch: dict[str, Any],
    deploy: str | None,
    nodes: int,
    gpus_per_node: int,
    timing: dict[str, Any] | None,
    until: float,
) -> Scenario:
    """The preview as a parsed scenario (parsing checks the manifest and the patch as KServe's
    webhook would), with only its apply event: the preview applies the patch once the
    InferenceService converged, whenever that is."""
    doc: dict[str, Any] = {
        "name": f"preview-{manifest['metadata'].get('name')}",
        "seed": 1,
        "until": until,
        "cluster": {"nodes": nodes, "gpusPerNode": gpus_per_node},
        "inferenceService": manifest,
        "events": [{"at": 0, "do": "apply"}, {"at": 0, "do": "patch", "patch": patch}],
    }
    if timing:
        doc["cluster"]["timing"] = timing
    if deploy is not None:
        doc["kserveConfig"] = {"deploy": deploy}
    scenario = parse_scenario(doc)
    scenario.events = [e for e in scenario.events if e.do == "apply"]
    return scenario


def _outcome(after: dict[str, Any], frames: list[tuple[float, int]], end: float, converged: bool) -> dict[str, Any]:
    """What the preview reports from the Ready predictor pods over time (``frames``): the capacity
    curve, its lowest point, and how long no predictor pod was Ready (the gap)."""
    gap = sum(
        max(min(nxt, end) - at, 0.0)
        for (at, count), (nxt, _) in zip(frames, [*frames[1:], (end, 0)], strict=True)
        if count == 0
    )
    predictor = ((after.get("spec") or {}).get("components") or {}).get(PREDICTOR) or {}
    desired = next((d["replicas"] for d in after.get("deployments") or [] if d["component"] == PREDICTOR), None)
    strategy = (after.get("strategy") or {}).get(PREDICTOR) or {}
    return {
        "desired": desired if desired is not None else predictor.get("replicas"),
        "minAvailable": min(count for _, count in frames),
        "gapSeconds": round(gap, 3),
        "durationSeconds": round(end, 3),
        "converged": converged,
        "capacity": [[round(at, 3), count] for at, count in frames],
        "mode": strategy.get("mode"),
        "note": strategy.get("note"),
    }
