"""The list row of a ModelServing: the compact shape the list page, the REST list and the CLI show.

A pure function of the object, the same on every backend: the embedded cluster's store keeps it in a
column at write time (so a list reads small rows, never pods), the Kubernetes backend computes it
from the listed objects (``rolloutui.services.state.list_summaries``).
"""

from __future__ import annotations

from typing import Any

from . import phases
from .ports import Obj
from .spec import headline


def ms_summary(obj: Obj) -> dict[str, Any]:
    """``{namespace, name, phase, replicas, desired, ready, updated, currentRevision, updateRevision,
    paused, strategyType, generation, observedGeneration, blocked}`` of one ModelServing object.

    ``phase`` is ``Paused`` when the spec pauses it, else the status's phase (``Pending`` before the
    first pass); ``blocked`` counts the groups waiting, summed over the grouped reasons. Example: a
    status with ``waiting: [{reason: "budget", groups: [1, 2]}]`` gives ``blocked: 2``.
    """
    meta = obj.get("metadata") or {}
    spec = headline(obj)
    status = obj.get("status") or {}
    replicas, paused = spec.replicas, spec.paused
    return {
        "namespace": meta.get("namespace") or "default",
        "name": meta.get("name"),
        "phase": phases.PAUSED if paused else status.get("phase") or phases.PENDING,
        "replicas": replicas,
        "desired": replicas,
        "ready": int(status.get("availableReplicas") or 0),
        "updated": int(status.get("updatedReplicas") or 0),
        "currentRevision": status.get("currentRevision"),
        "updateRevision": status.get("updateRevision"),
        "paused": paused,
        "strategyType": spec.strategy_type,
        "generation": meta.get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        # Blocked reasons are stored grouped (one entry per reason, listing its groups).
        "blocked": sum(len(w.get("groups") or [None]) for w in status.get("waiting") or []),
    }
