"""The embedded simulated cluster as the web app sees it: its extras port and its preview.

The web app's services never import ``controller.simcluster`` (an import contract checks it); what
they need of it comes through here, from the runtime that owns the backend:

- ``get_simulator()``: the ``SimulatorPort`` (faults, nodes, list rows, config and clock) of the
  simulated backend, ``None`` on Kubernetes. A service asks for it instead of branching on the
  backend's name.
- the preview: a copy of a running ModelServing on a virtual cluster (``LiveState``,
  ``PreviewCluster``, ``preview_from``, its step ``STEP``, the request load ``Traffic`` / ``Span``),
  and the InferenceService preview (``preview_inferenceservice``, refusing with ``ScenarioError``).
  A preview runs on any backend (it simulates a copy), so these are plain names, not methods of
  the port.
- the demo's images (``DEMO_MANIFEST``, ``DIGESTS``, ``create_with_traffic``): the images whose
  behaviour the simulated cluster knows.
"""

from __future__ import annotations

from controller.core.ports import SimulatorPort
from controller.simcluster.config import Span, Traffic
from controller.simcluster.database.demo import DEMO_MANIFEST, DIGESTS, create_with_traffic
from controller.simcluster.kserve.preview import preview_inferenceservice
from controller.simcluster.preview import STEP, LiveState, PreviewCluster, preview_from
from controller.simcluster.scenario import ScenarioError

from . import backend


def get_simulator(*, actor: str = "operator") -> SimulatorPort | None:
    """The simulated cluster's extras on the simulated backend; ``None`` on Kubernetes."""
    if backend.backend_name() == "kubernetes":
        return None
    return backend.sim_cluster(actor=actor)


__all__ = [
    "DEMO_MANIFEST",
    "DIGESTS",
    "STEP",
    "LiveState",
    "PreviewCluster",
    "ScenarioError",
    "SimulatorPort",
    "Span",
    "Traffic",
    "create_with_traffic",
    "get_simulator",
    "preview_from",
    "preview_inferenceservice",
]
