"""KServe on the simulated cluster: one module per part, named as the ModelServing side's.

- ``controller``: what KServe's controller does with an InferenceService (the Deployments it
  makes, the status it writes), applied through ``workloads.WorkloadStore``;
- ``router``: ``simulate``'s request router for one InferenceService (the traffic split by the
  weights KServe wrote);
- ``runner``: an InferenceService run's kind (``run.WorkloadKind``: its events, frames and
  convergence) for the one run loop, ``run.ScenarioRun``;
- ``preview``: what a change would do to the predictor's capacity, on a simulated copy (a
  ``ScenarioRun`` stepped until the change rolled out).

The ModelServing side's counterparts are ``controllers``/``deployments`` (the Deployment and
ReplicaSet controllers both kinds share), ``memory.router``, ``modelserving`` and ``preview``.
"""
