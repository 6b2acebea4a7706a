"""One runner loop for every kind of workload (``run.ScenarioRun``; ``runner.Runner`` picks the kind
by the scenario's): a kind (``run.WorkloadKind``) says what differs (its controllers, frames,
convergence verdicts, its own events); the loop schedules the events, applies the shared faults,
starts traffic and ends the run, or steps until its caller's question is answered (the previews)."""

from __future__ import annotations

from pathlib import Path

from controller.simcluster.config import ClusterConfig
from controller.simcluster.kserve.runner import InferenceServiceKind
from controller.simcluster.modelserving import ModelServingKind
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import Event, Scenario, load_scenario
from controller.simcluster.trace import TraceWriter

ROOT = Path(__file__).resolve().parents[2]


class FakeRouter:
    def __init__(self) -> None:
        self.starts: list[float] = []

    def start(self) -> None:
        self.starts.append(-1.0)

    def summary(self) -> dict:
        return {"total": len(self.starts)}


class FakeKind:
    """Converges at t=10, unconverges at t=30 (its own ``wobble`` event), converges again at 40."""

    def __init__(self, scenario, cluster, settling, *, verdicts=((10.0, True), (40.0, True))) -> None:
        self.loop, self.settling = cluster.loop, settling
        self.trace = TraceWriter(scenario.name, scenario.seed)
        self.router = FakeRouter()
        self.verdicts = verdicts
        self.done: list[tuple[float, str, str]] = []  # (time, event, store actor)
        self.store = cluster.store

    def begin(self) -> None:
        for at, converged in self.verdicts:
            self.loop.call_at(at, lambda converged=converged: self.settling.observe(converged))

    def do(self, event: Event) -> str | None:
        self.done.append((self.loop.now(), event.do, self.store.actor))
        if event.do == "wobble":
            self.settling.observe(False)
            return None
        return "not mine"


def _scenario(events: list[Event], until: float = 1000.0) -> Scenario:
    config = ClusterConfig(nodes=1, gpus_per_node=8)
    manifest = {"metadata": {"name": "fake", "namespace": "default"}}
    return Scenario("fake", 0, until, config, None, manifest, events)


def test_the_runner_drives_a_fake_kind_through_the_events_faults_convergence_and_end_of_the_run():
    events = [Event(0, 5.0, "addNodes", {"count": 2}), Event(1, 30.0, "wobble"), Event(2, 35.0, "retag")]
    runner = Runner(_scenario(events), FakeKind)
    trace = runner.run()
    kind = runner.kind
    # The shared fault is the loop's; the kind's events reach the kind, applied as the operator.
    assert len(runner.store.list_nodes()) == 3
    assert kind.done == [(30.0, "wobble", "operator"), (35.0, "retag", "operator")]
    assert [e.get("error") for e in trace["events"]] == [None, None, "not mine"]
    # Traffic starts at each first converged verdict (10 s, and 40 s after the wobble).
    assert trace["requests"] == {"total": 2}
    # Every event ran at 35 s; converged again at 40 s: the run ends 60 s later.
    assert (trace["converged"], trace["convergedAt"], trace["endTime"]) == (True, 40.0, 100.0)


def test_a_run_whose_kind_never_converges_ends_at_until():
    runner = Runner(_scenario([], until=250.0), FakeKind, verdicts=((10.0, False),))
    trace = runner.run()
    assert (trace["converged"], trace["convergedAt"], trace["endTime"]) == (False, None, 250.0)
    assert runner.router.starts == []


def test_both_real_kinds_run_through_the_same_runner_picked_by_the_scenario_kind():
    modelserving = Runner(load_scenario(ROOT / "tests/scenarios/canary-healthy.yaml"))
    inferenceservice = Runner(load_scenario(ROOT / "examples/scenarios/isvc-promote-keeps-floor.yaml"))
    assert isinstance(modelserving.kind, ModelServingKind)
    assert isinstance(inferenceservice.kind, InferenceServiceKind)
    for runner in (modelserving, inferenceservice):
        trace = runner.run()
        last_event = max(e.at for e in runner.scenario.events)
        assert trace["converged"]
        assert trace["endTime"] == round(max(trace["convergedAt"], last_event) + 60, 3)


def test_a_stepped_run_asks_before_the_first_step_and_after_each_and_stops_at_the_first_yes():
    runner = Runner(_scenario([]), FakeKind)
    runner.begin()
    asked, progress = [], []

    def converged() -> bool:
        asked.append(runner.loop.now())
        return runner.converged

    assert runner.run_in_steps(converged, until=100.0, step=5.0, progress=progress.append)
    # FakeKind converges at 10 s: the step that ends at 10 s runs what happens at 10 s.
    assert asked == [0.0, 5.0, 10.0] and progress == [5.0, 10.0]


def test_a_stepped_run_that_never_gets_its_yes_stops_at_the_first_step_past_the_limit():
    runner = Runner(_scenario([]), FakeKind, verdicts=((10.0, False),))
    runner.begin()
    assert not runner.run_in_steps(lambda: runner.converged, until=12.0, step=5.0)
    assert runner.loop.now() == 15.0
