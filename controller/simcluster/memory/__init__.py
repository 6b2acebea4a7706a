"""The in-memory driver of the simulated cluster: one process, a virtual clock, deterministic.

``store.InMemoryStore`` is the API server (objects in dicts, change listeners), ``clock`` the virtual
clock and discrete-event loop, and ``scheduler``, ``kubelet``, ``router`` apply the shared pure rules
(``controller.simcluster.physics``, ``routing``) when the store reports a change or a pod's wake-up
(``next_at``) comes. ``cluster.SimCluster`` wires them onto one loop. No Django, Redis or Celery.
"""
