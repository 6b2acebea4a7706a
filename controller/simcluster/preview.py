"""What will this change do? A ModelServing and a change to it, run on a copy in the in-memory cluster.

``preview_change(manifest, patch, cluster)`` builds an in-memory simulated cluster like the one
described by ``cluster`` (its nodes, timings, image behaviour and traffic), applies ``manifest``,
lets the real controller converge it (at most ``settle_limit`` virtual seconds), applies ``patch``
(a JSON merge patch, as an operator would) and runs until the change has rolled out (at most
``rollout_limit``). It returns the timeline after the change: one sample per reconcile pass
(available ServingGroups, blocked reasons), whether and when it converged, and the requests.
Nothing outside the copy is touched; the dashboard's preview
(``rolloutui.services.simulation.preview``) is a thin caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.core.ports import Obj
from controller.core.reconcile import ReconcileResult
from controller.core.strategy import ClusterSettings
from controller.core.view import expand_waiting

from .config import ClusterConfig, Traffic
from .runner import Runner, batch_gc
from .scenario import Scenario

SETTLE_LIMIT = 4 * 3600.0
ROLLOUT_LIMIT = 12 * 3600.0
# The run advances in steps of this many virtual seconds between checks of "has it converged?".
STEP = 5.0


@dataclass(frozen=True)
class PreviewCluster:
    """The cluster to copy: GPUs of each node, timings and image behaviour, traffic (or none)."""

    node_gpus: list[int]
    config: ClusterConfig
    traffic: Traffic | None = None
    settings: ClusterSettings | None = None  # the live cluster's, so the copy resolves budgets alike


@dataclass(frozen=True)
class PassSample:
    t: float  # virtual seconds since the change was applied
    available: int  # available ServingGroups after the pass
    blocked: list[str]  # the reasons the pass waited for
    update_revision: str | None


@dataclass
class Timeline:
    baseline_converged: bool  # the copy converged before the change was applied
    converged: bool  # the change rolled out completely
    converged_after: float | None  # virtual seconds from the change to convergence
    simulated_seconds: float  # virtual seconds simulated after the change
    nodes: int
    samples: list[PassSample] = field(default_factory=list)  # one per reconcile pass after the change
    requests: dict[str, Any] | None = None  # the trace's requests summary, with traffic


def preview_change(
    manifest: Obj,
    patch: Obj,
    cluster: PreviewCluster,
    *,
    settle_limit: float = SETTLE_LIMIT,
    rollout_limit: float = ROLLOUT_LIMIT,
    step: float = STEP,
    progress: Callable[[str, float], None] | None = None,
) -> Timeline:
    """``progress(phase, virtual_seconds)`` is called after every step (``phase`` "settling" before
    the change, "rolling out" after it, with the virtual seconds of that phase); an exception it
    raises stops the run and propagates (the dashboard stops a preview past its wall-time budget)."""
    with batch_gc():
        return _preview(manifest, patch, cluster, settle_limit, rollout_limit, step, progress)


def _preview(
    manifest: Obj,
    patch: Obj,
    cluster: PreviewCluster,
    settle_limit: float,
    rollout_limit: float,
    step: float,
    progress: Callable[[str, float], None] | None,
) -> Timeline:
    meta = manifest.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta["name"]
    scenario = Scenario(
        name=f"preview-{name}",
        seed=0,
        until=settle_limit + rollout_limit,
        cluster=dataclasses.replace(cluster.config, nodes=0, gpus_per_node=0),
        traffic=cluster.traffic,
        manifest=manifest,
        events=[],
        settings=cluster.settings,
    )
    runner = Runner(scenario, frames=False)
    for gpus in cluster.node_gpus:
        runner.cluster.add_nodes(1, gpus)
    samples: list[tuple[float, int, list[str], str | None]] = []

    def record(t: float, result: ReconcileResult) -> None:
        # What the pass wrote: the page's counts and "why it waits" read the same status fields.
        status = result.status
        reasons = [b.get("reason", "") for b in expand_waiting(status.get("waiting") or [])]
        samples.append((t, int(status.get("availableReplicas") or 0), reasons, status.get("updateRevision")))

    runner.on_pass.append(record)
    runner.as_operator(lambda: runner.store.create_modelserving(manifest))
    runner.loop.call_at(0.0, runner.start_controller)
    t = 0.0
    while not runner.converged and t < settle_limit:
        t = runner.loop.run_until(t + step)
        if progress is not None:
            progress("settling", t)
    settled = runner.converged

    t0 = runner.loop.now()
    runner.as_operator(lambda: runner.store.patch_modelserving(namespace, name, patch))
    runner.forget_convergence()
    first = len(samples)
    t = t0
    while t < t0 + rollout_limit:
        t = runner.loop.run_until(t + step)
        if progress is not None:
            progress("rolling out", t - t0)
        if runner.converged and runner.converged_at is not None and runner.converged_at >= t0:
            break
    converged = bool(runner.converged and runner.converged_at is not None)
    return Timeline(
        baseline_converged=settled,
        converged=converged,
        converged_after=round(runner.converged_at - t0, 3) if converged else None,
        simulated_seconds=round(runner.loop.now() - t0, 3),
        nodes=len(runner.store.list_nodes()),
        samples=[PassSample(round(ts - t0, 3), a, r, u) for ts, a, r, u in samples[first:]],
        requests=runner.router.summary() if cluster.traffic else None,
    )
