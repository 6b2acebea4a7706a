"""Run a scenario file's workload, whatever its kind: ``Runner`` is the one run
(``run.ScenarioRun``: the cluster, the events, the settling, the trace) on the kind the scenario
names (``KINDS``): ``modelserving.ModelServingKind`` for a ``modelServing`` scenario,
``kserve.runner.InferenceServiceKind`` for an ``inferenceService`` one.

The kinds are chosen here rather than in ``run``: a kind's folder may then drive a run of its own
(``kserve.preview``) without ``run`` importing that folder back (the ``acyclic_siblings`` contracts
in pyproject.toml).
"""

from __future__ import annotations

from typing import Any

from .kserve.runner import InferenceServiceKind
from .modelserving import ModelServingKind
from .run import KindFactory, ScenarioRun
from .scenario import Scenario
from .trace import dumps

KINDS: dict[str, KindFactory] = {"ModelServing": ModelServingKind, "InferenceService": InferenceServiceKind}


class Runner(ScenarioRun):
    """A ``ScenarioRun`` whose kind is the scenario's (``KINDS``) unless ``kind`` says otherwise."""

    def __init__(self, scenario: Scenario, kind: KindFactory | None = None, **options: Any) -> None:
        """``options``: ``ScenarioRun``'s (``copy_reads``, ``start``) and the kind's."""
        super().__init__(scenario, kind if kind is not None else KINDS[scenario.kind], **options)


def run_scenario(scenario: Scenario, *, copy_reads: bool = False) -> dict[str, Any]:
    return Runner(scenario, copy_reads=copy_reads).run()


def run_to_json(scenario: Scenario) -> str:
    return dumps(run_scenario(scenario))
