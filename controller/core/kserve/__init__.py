"""KServe InferenceServices, read the way KServe's own controller reads them. Pure Python.

- ``config``: the ``inferenceservice-config`` ConfigMap's ``deploy`` key (deployment mode, default
  rollout);
- ``spec``: an InferenceService manifest, validated as KServe's webhook would, with field paths;
- ``strategy``: the rolling-update strategy of each Deployment KServe creates, with the source of
  every value (multi-node override > the component's ``deploymentStrategy`` > the ConfigMap's
  default rollout, in Standard mode only > KServe's default 25%/25%) and the named mode.
- ``materialize``: the Deployments an InferenceService becomes in Standard mode (one per
  component, a worker Deployment for multi-node predictors, one per ``spec.canary[]`` entry).

The simulated cluster runs a KServe controller and a Deployment controller on top of these; on a
real cluster KServe does it and the product reads what it made.
"""
