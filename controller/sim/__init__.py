"""The embedded simulated cluster: the ``sim`` adapter of the cluster port.

Split so the live app can reuse the physics over database rows:

- ``store``: Kubernetes-shaped objects with resourceVersion concurrency and change listeners
  (``InMemoryStore`` implements ``ClusterPort``).
- ``scheduler``, ``kubelet``: the physics (placement by GPUs, pod phases, images, termination,
  node failures), driven by a clock and an event loop, writing only through the store.
- ``router``: simulated traffic and the ``RouterPort`` (in-flight counts per pod).
- ``clock``: the virtual clock and the deterministic discrete-event loop.
- ``config``: timings (fixed or [min, max]), image behaviour, traffic; ``cluster``: wires one
  store, scheduler, kubelets and router onto one loop.
- ``scenario``: parsing and validation of scenario YAML (public format, docs in shared/docs).
- ``runner``: builds the cluster for a scenario, applies its events, runs the real controller.
- ``trace``: the trace document (format 1).
- ``cli``: ``main(argv)`` behind ``manage.py simulate``.
"""
