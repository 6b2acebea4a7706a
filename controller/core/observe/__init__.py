"""Observation: pods -> role instances -> ServingGroups (``model``), one pod read by ``parse``,
a list read by one of the ``paths`` (plain, by version, by identity; grouping incremental), which
agree. What a caller remembers between lists is its ``passcache.PassCache``."""

from .model import (
    CRASH_LOOP,
    FAILING_REASONS,
    GroupObs,
    InstanceObs,
    Observed,
    PodObs,
    group_of_pods,
    instance_of,
)
from .parse import parse_pod
from .paths import observe, observe_plain

__all__ = [
    "CRASH_LOOP",
    "FAILING_REASONS",
    "GroupObs",
    "InstanceObs",
    "Observed",
    "PodObs",
    "group_of_pods",
    "instance_of",
    "observe",
    "observe_plain",
    "parse_pod",
]
