"""KServe in the runtime: the state of an InferenceService read from the backend's cluster
(``state``), and the periodic passes over every InferenceService (``passes``: handover steps,
publishing changed states to the pages). The ModelServing side's counterparts are
``controller.runtime.state`` and ``controller.runtime.periodic``.
"""
