"""KServe InferenceServices in the web app's services, named as the ModelServing side's modules:

- ``state``: the state of one InferenceService, its list row, and the list of every workload of
  both kinds (the ModelServing side: ``rolloutui.services.state``);
- ``controls``: the InferenceService controls (pause, resume, set image, canary, promote,
  rollback), audited (the ModelServing side: ``rolloutui.services.controls``).
"""
