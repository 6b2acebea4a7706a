"""One scenario's run, whatever its kind of workload (``ScenarioRun``): build the simulated cluster,
apply the events, let the workload's controllers act, and write the trace. What differs per kind is
a ``WorkloadKind``:

- ``modelserving.ModelServingKind``: the product's own reconcile pass behind a simulated work queue;
  frames are its state views, convergence is decided after every pass;
- ``kserve.runner.InferenceServiceKind``: the simulated KServe, Deployment and ReplicaSet
  controllers; frames are the InferenceService's state view after every instant at which an object
  changed, convergence is that view's ``converged``.

What every kind shares is here: the virtual clock and the cluster (nodes, scheduler, kubelets), the
scenario's events scheduled at their times and applied as the operator (an event that fails is
recorded with its error, the run goes on), the faults ``failNode`` and ``addNodes``, traffic starting
when the workload first converges, and the end of the run (``settling.Settling``): at ``until``, or
once every event has run and the workload has stayed converged for ``SETTLE`` (60) seconds:
end = max(convergedAt, time of the last event) + 60. Errors of the simulated KServe and Deployment
controllers (none for a ModelServing run: they are idle) end up in the trace's ``controllerErrors``.

Two ways to drive it: ``run()`` to the end and the trace document (``simulate``), or
``run_in_steps`` a few virtual seconds at a time until the caller's question is answered (the
previews: ``preview``, ``kserve.preview``). The kind is given: this module imports none, so a kind's
own folder can run itself (``kserve.preview``) without an import cycle; ``runner.Runner`` picks the
kind by the scenario's ``kind``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from controller.core.ports import ClusterError

from .memory.clock import EventLoop, VirtualClock
from .memory.cluster import SimCluster
from .scenario import Event, Scenario
from .settling import Settling
from .trace import TraceWriter

# Collector thresholds while a simulation runs (``batch_gc``).
BATCH_YOUNG_THRESHOLD = 10_000
BATCH_OLD_THRESHOLD = 100


@contextmanager
def batch_gc() -> Iterator[None]:
    """Run a simulation with the cyclic collector's thresholds raised, then put them back.

    A simulation allocates trees of JSON values (pods, statuses, kubelet states) freed by reference
    counting as soon as they are replaced; the collector finds almost nothing to free, yet with
    CPython's thresholds (700, 10, 10) it walks the young objects every 700 net new containers and
    every live object every 70,000. Worked example, the 1,000-group preview of ``bench sim``
    (~870,000 net new containers): 1,244 young, 113 middle and 10 full collections, 0.66 s of a
    5.9 s run (each full one ~45 ms); at (10,000, 10, 100): 51 young, 5 middle, no full one, 0.16 s,
    and the run 4.9-5.1 s. Cycles (rare: an exception's traceback) are freed later, when the next
    collection comes (peak RSS unchanged at this size). The thresholds are the process's: a caller
    that runs a simulation in a thread beside other work shares them for that time.
    """
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], BATCH_YOUNG_THRESHOLD), before[1], max(before[2], BATCH_OLD_THRESHOLD))
    try:
        yield
    finally:
        gc.set_threshold(*before)


class KindRouter(Protocol):
    """What the run asks of a kind's request router."""

    def start(self) -> None: ...

    def summary(self) -> dict[str, Any]: ...


class WorkloadKind(Protocol):
    """What differs per kind of workload. Built on the run's cluster (``KindFactory``), a kind
    watches the store (its own listener), drives its workload's controllers, writes its frames and
    actions to ``trace`` and tells the run's ``Settling`` whether its workload converged."""

    trace: TraceWriter
    router: KindRouter

    def begin(self) -> None:
        """Schedule the kind's work at t=0 (its controllers, its first frame): after the scenario's
        events, so an ``apply`` at 0 runs first."""
        ...

    def do(self, event: Event) -> str | None:
        """Apply one of the kind's events, as the operator; returns an error to record, or None."""
        ...


# (scenario, the run's cluster, the run's settling, the kind's options) -> the kind.
KindFactory = Callable[..., WorkloadKind]


class ScenarioRun:
    """One scenario's run on a kind of workload given by the caller (``runner.Runner`` picks it by
    the scenario's ``kind``): ``run()`` returns the trace document. What the kind keeps of its own (a
    ModelServing's passes and ``on_pass`` observers, an InferenceService's ``view()``) is on
    ``kind``."""

    def __init__(
        self,
        scenario: Scenario,
        kind: KindFactory,
        *,
        copy_reads: bool = False,
        start: float = 0.0,
        **options: Any,
    ) -> None:
        """``kind``: how to build the workload's kind; ``options`` go to it (a ModelServing's
        ``frames``, ``skip_unchanged``: ``ModelServingKind``). ``start``: the virtual time the clock
        starts at (a copy of a live cluster starts at that cluster's time: ``SimCluster.restore``).
        The cluster's own router (``SimCluster.router``) routes a ModelServing's traffic; an
        InferenceService's kind brings its own and leaves that one idle."""
        self.scenario = scenario
        self.cluster = SimCluster(
            scenario.cluster,
            seed=scenario.seed,
            namespace=scenario.namespace,
            ms_name=scenario.ms_name,
            traffic=scenario.traffic,
            copy_reads=copy_reads,
            loop=EventLoop(VirtualClock(start)),
        )
        self.loop = self.cluster.loop
        self.store = self.cluster.store
        # The kind's router starts on the first converged verdict (the kind is built just below).
        self.settling = Settling(self.loop, [e.at for e in scenario.events], lambda: self.router.start())
        self.kind = kind(scenario, self.cluster, self.settling, **options)
        self.trace = self.kind.trace
        self.router = self.kind.router

    @property
    def clock(self):
        return self.cluster.clock

    @property
    def converged(self) -> bool:
        return self.settling.converged

    @property
    def converged_at(self) -> float | None:
        return self.settling.converged_at

    # -- events -----------------------------------------------------------------------------------

    def as_operator(self, write: Callable[[], Any]) -> Any:
        """Run ``write`` (store calls) as the operator: the changes it makes wake the controllers."""
        previous, self.store.actor = self.store.actor, "operator"
        try:
            return write()
        finally:
            self.store.actor = previous

    def _apply_event(self, e: Event) -> None:
        self.settling.event_ran()
        error = None
        try:
            error = self.as_operator(lambda: self._do(e))
        except (ClusterError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        self.trace.event(self.loop.now(), e.describe(), error=error)
        self.settling.maybe_schedule_end()

    def _do(self, e: Event) -> str | None:
        """The faults every kind shares; the kind's own events go to the kind."""
        if e.do == "failNode":
            self.cluster.fail_node(e.args["node"])
            return None
        if e.do == "addNodes":
            gpus = e.args.get("gpusPerNode", self.scenario.cluster.gpus_per_node)
            self.cluster.add_nodes(e.args.get("count", 1), gpus)
            return None
        return self.kind.do(e)

    # -- run --------------------------------------------------------------------------------------

    def begin(self) -> None:
        """Schedule the scenario's events at their times, then the kind's work at t=0 (its
        ``begin``): the start of ``run()``, and of a run the caller steps (``run_in_steps``)."""
        for e in self.scenario.events:
            self.loop.call_at(e.at, lambda e=e: self._apply_event(e))
        self.kind.begin()

    def run(self) -> dict[str, Any]:
        """To the end (``until``, or the settling's end) and the trace document."""
        self.begin()
        with batch_gc():
            end = self.loop.run_until(self.scenario.until)
        doc = self.trace.document(
            converged=self.converged, converged_at=self.converged_at, end_time=end, requests=self.router.summary()
        )
        errors = self.cluster.workloads.errors
        if errors:
            doc["controllerErrors"] = [*doc.get("controllerErrors", []), *({"t": t, "message": m} for t, m in errors)]
        return doc

    def run_in_steps(
        self,
        done: Callable[[], bool],
        *,
        until: float,
        step: float,
        progress: Callable[[float], None] | None = None,
    ) -> bool:
        """Advance the clock ``step`` virtual seconds at a time until ``done()`` (asked before the
        first step and after each) or until the clock reached ``until``; returns ``done()``'s last
        answer. ``progress(now)`` is called after every step; an exception it raises stops the run
        and propagates. A step ends ``step`` seconds after the previous one (a callback that stops
        the loop, the settling's end, ends it early; the next step counts from there). Worked
        example: from 0 with ``step`` 5 and ``until`` 12, ``done`` is asked at 0, 5, 10 and 15 s
        (15 >= 12: the last), unless it said True before."""
        t = self.loop.now()
        finished = done()
        while not finished and t < until:
            t = self.loop.run_until(t + step)
            if progress is not None:
                progress(t)
            finished = done()
        return finished
