"""What will this change do? A ModelServing and a change to it, run on a copy in the in-memory cluster.

Both builds an in-memory simulated cluster like the one described by ``cluster`` (its nodes,
timings, image behaviour and traffic), puts the ModelServing there, applies ``patch`` (a JSON merge
patch, as an operator would) and runs the real controller until the change has rolled out (at most
``rollout_limit`` virtual seconds):

- ``preview_from(live, patch, cluster)`` copies the ModelServing as it runs (``LiveState``: its
  object, revisions and pods, each pod where it is in its life, on the cluster's clock) and applies
  the change at once: what the dashboard's preview does (``rolloutui.services.simulation.preview``);
- ``preview_change(manifest, patch, cluster)`` starts from a manifest alone: ``bring_up`` applies
  it to an empty copy and lets the controller converge it (at most ``settle_limit``), then
  ``preview_from`` the ModelServing as it then runs.

Each returns the timeline after the change: one sample per reconcile pass (available
ServingGroups, blocked reasons), whether and when it converged, and the requests. Nothing outside
the copy is touched.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from controller.core.ports import ClusterPort, Obj
from controller.core.reconcile import ReconcileResult
from controller.core.strategy import ClusterSettings

from .config import ClusterConfig, Traffic
from .modelserving import ModelServingKind
from .run import ScenarioRun, batch_gc
from .scenario import Scenario

SETTLE_LIMIT = 4 * 3600.0
ROLLOUT_LIMIT = 12 * 3600.0
# The run advances in steps of this many virtual seconds between checks of "has it converged?".
STEP = 5.0


# Net new containers between two collections of the youngest generation while a preview runs, on
# top of ``batch_gc``'s (10,000). A pass keeps what it built (its status' entry per group, the
# parsed pods, the groups' memos, lists of every pod) until the next pass replaces it, so a young
# collection that comes mid-run finds the current pass's data alive and walks it (and every
# reference out of it), and moves it on to be walked again by a middle collection; none of these
# collections finds cyclic garbage. Worked example, the 10,000-group preview (30,000 pods, ~94
# passes): at CPython's 700, 616 young, 55 middle and 1 full collection; at 100,000, 26 young ones
# (each walking more as the run goes on) and 2 middle ones, ~2.3 s of ~20 s CPU; at 1,000,000, 3
# young ones and no middle one, ~0.9 s, with the same peak RSS (bench/README.md, History: sim).
# The 1,000-group preview: 1 young collection instead of 3.
PREVIEW_YOUNG_THRESHOLD = 1_000_000


@contextmanager
def preview_gc() -> Iterator[None]:
    """The young generation raised to ``PREVIEW_YOUNG_THRESHOLD`` for the preview, then put back
    (the process's thresholds, as ``batch_gc``'s: see there)."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], PREVIEW_YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@dataclass(frozen=True)
class PreviewCluster:
    """The cluster to copy: GPUs of each node, timings and image behaviour, traffic (or none).

    ``node_names``: the nodes' names there, in the same order (a copy of live pods finds their
    nodes by name: ``preview_from``); ``node-0``, ``node-1``, ... when omitted."""

    node_gpus: list[int]
    config: ClusterConfig
    traffic: Traffic | None = None
    settings: ClusterSettings | None = None  # the live cluster's, so the copy resolves budgets alike
    node_names: list[str] | None = None


@dataclass(frozen=True)
class LiveState:
    """A ModelServing as it runs, read from its cluster at ``now`` (that cluster's clock): its object
    with spec and status, its ControllerRevisions and its pods (with their kubelet state, on the
    simulated cluster). ``preview_from`` starts the copy from it."""

    modelserving: Obj
    revisions: list[Obj]
    pods: list[Obj]
    now: float

    @classmethod
    def read(cls, cluster: ClusterPort, namespace: str, name: str, now: float) -> LiveState:
        return cls(
            cluster.get_modelserving(namespace, name),
            list(cluster.list_revisions(namespace, name)),
            list(cluster.list_pods(namespace, name)),
            now,
        )


@dataclass(frozen=True)
class PassSample:
    t: float  # virtual seconds since the change was applied
    # Available ServingGroups after the pass: the status' availableReplicas, Ready surge groups
    # included (they serve), so the preview, the live status and the state history agree.
    available: int
    blocked: list[str]  # the reasons the pass waited for
    update_revision: str | None


@dataclass
class Timeline:
    baseline_converged: bool  # the copy was converged when the change was applied
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
    """From a manifest alone: ``bring_up``, then ``preview_from`` the ModelServing as it then runs.

    ``progress(phase, virtual_seconds)`` is called after every step (``phase`` "settling" before
    the change, "rolling out" after it, with the virtual seconds of that phase); an exception it
    raises stops the run and propagates (the dashboard stops a preview past its wall-time budget)."""
    live = bring_up(manifest, cluster, settle_limit=settle_limit, step=step, progress=progress)
    return preview_from(live, patch, cluster, rollout_limit=rollout_limit, step=step, progress=progress)


def bring_up(
    manifest: Obj,
    cluster: PreviewCluster,
    *,
    settle_limit: float = SETTLE_LIMIT,
    step: float = STEP,
    progress: Callable[[str, float], None] | None = None,
) -> LiveState:
    """The manifest applied to an in-memory copy of ``cluster`` with nothing on it, and the real
    controller run until it converged (at most ``settle_limit`` virtual seconds; ``progress``
    "settling"): the ModelServing as it then runs."""
    meta = manifest.get("metadata") or {}
    with preview_gc(), batch_gc():
        runner = _runner(meta["name"], manifest, cluster, settle_limit)
        runner.as_operator(lambda: runner.store.create_modelserving(manifest))
        runner.loop.call_at(0.0, runner.kind.start_controller)
        reporting = _reporting(progress, "settling", 0.0)
        runner.run_in_steps(lambda: runner.converged, until=settle_limit, step=step, progress=reporting)
        return LiveState.read(runner.store, meta.get("namespace") or "default", meta["name"], runner.loop.now())


def preview_from(
    live: LiveState,
    patch: Obj,
    cluster: PreviewCluster,
    *,
    rollout_limit: float = ROLLOUT_LIMIT,
    step: float = STEP,
    progress: Callable[[str, float], None] | None = None,
) -> Timeline:
    """From the ModelServing as it runs (``live``): the copy holds its object, revisions and pods
    as they are, each pod where it is in its life (bound or pending, loading, Ready, draining,
    terminating), on the cluster's clock, and the change is applied at once, as if the operator
    applied it now. Nothing is brought up first, so a ModelServing caught mid-rollout is previewed
    from there. Requests in flight are not copied (the copy's traffic starts at the change).

    ``progress`` as in ``preview_change``, with "rolling out" only."""
    meta = live.modelserving.get("metadata") or {}
    with preview_gc(), batch_gc():
        runner = _runner(meta["name"], live.modelserving, cluster, rollout_limit, start=live.now)
        runner.cluster.restore(modelservings=[live.modelserving], revisions=live.revisions, pods=live.pods)
        baseline = runner.kind.check_convergence()
        runner.kind.start_controller()
        runner.router.start()  # the workload serves already (nothing without traffic)
        return _roll_out(runner, patch, cluster, baseline, rollout_limit, step, progress)


def waiting_reasons(waiting: list[dict[str, Any]]) -> list[Any]:
    """The reasons of ``expand_waiting(waiting)``, in its order, without a dict per group and role:
    the timeline keeps only the reasons, and a 1,000-group rollout waits on ~900 groups a pass.
    The same order: by group (None last), then role, ties in the list's order (a stable sort).
    Example: [{"reason": "r1", "role": None, "groups": [3, 1]}, {"reason": "r2", "role": "a",
    "groups": [None]}, {"reason": "r3", "role": None, "groups": [1]}] -> ["r1", "r3", "r1", "r2"]
    (group 1 twice, in the list's order, then group 3, then no group)."""
    rows = []
    for w in waiting:
        role, reason = w.get("role") or "", w.get("reason")
        for group in w.get("groups") or [None]:
            rows.append((group is None, group if group is not None else -1, role, reason))
    rows.sort(key=_PLACE)
    return [row[3] for row in rows]


_PLACE = itemgetter(0, 1, 2)  # a waiting row's place: (no group, group, role)


def _runner(name: str, manifest: Obj, cluster: PreviewCluster, limit: float, *, start: float = 0.0) -> ScenarioRun:
    scenario = Scenario(
        name=f"preview-{name}",
        seed=0,
        until=start + limit,
        cluster=dataclasses.replace(cluster.config, nodes=0, gpus_per_node=0),
        traffic=cluster.traffic,
        manifest=manifest,
        events=[],
        settings=cluster.settings,
    )
    runner = ScenarioRun(scenario, ModelServingKind, frames=False, start=start)
    names = cluster.node_names or [f"node-{i}" for i in range(len(cluster.node_gpus))]
    for node, gpus in zip(names, cluster.node_gpus, strict=True):
        runner.cluster.add_node(node, gpus)
    return runner


def _reporting(
    progress: Callable[[str, float], None] | None, phase: str, since: float
) -> Callable[[float], None] | None:
    """``progress(phase, virtual seconds since since)`` as ``run_in_steps`` calls it (with the clock)."""
    return None if progress is None else lambda now: progress(phase, now - since)


def _roll_out(
    runner: ScenarioRun,
    patch: Obj,
    cluster: PreviewCluster,
    baseline_converged: bool,
    rollout_limit: float,
    step: float,
    progress: Callable[[str, float], None] | None,
) -> Timeline:
    """Apply ``patch`` now, as an operator would, and run until it has rolled out (at most
    ``rollout_limit`` virtual seconds): the timeline from the change on."""
    namespace, name = runner.scenario.namespace, runner.scenario.ms_name
    samples: list[PassSample] = []
    t0 = runner.loop.now()

    def record(t: float, result: ReconcileResult) -> None:
        # What the pass wrote: the page's counts and "why it waits" read the same status fields.
        status = result.status
        reasons = waiting_reasons(status.get("waiting") or [])
        available = int(status.get("availableReplicas") or 0)
        samples.append(PassSample(round(t - t0, 3), available, reasons, status.get("updateRevision")))

    runner.as_operator(lambda: runner.store.patch_modelserving(namespace, name, patch))
    runner.kind.forget_convergence()
    runner.kind.on_pass.append(record)

    def rolled_out() -> bool:
        return runner.converged and runner.converged_at is not None and runner.converged_at >= t0

    runner.run_in_steps(
        rolled_out, until=t0 + rollout_limit, step=step, progress=_reporting(progress, "rolling out", t0)
    )
    converged = bool(runner.converged and runner.converged_at is not None)
    return Timeline(
        baseline_converged=baseline_converged,
        converged=converged,
        converged_after=round(runner.converged_at - t0, 3) if converged else None,
        simulated_seconds=round(runner.loop.now() - t0, 3),
        nodes=len(runner.store.list_nodes()),
        samples=samples,
        requests=runner.router.summary() if cluster.traffic else None,
    )
