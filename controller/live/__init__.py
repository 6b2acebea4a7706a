"""The live app's simulated cluster: the ``sim`` adapter's store over database rows.

- ``store.DatabaseCluster``: ``ClusterPort`` over ``controller.models.SimObject`` rows, with the
  API server's semantics (resourceVersion compare-and-set, no-op writes, generation, graceful
  termination) and every real change enqueueing a reconcile of its ModelServing.
- ``physics``: the simulated scheduler and kubelets, advanced by ``tick()`` on wall-clock time
  (times a speed factor); every pod's deadlines live in its own annotations.
- ``traffic``: simulated requests whose in-flight counts live in Redis in the hash the Kubernetes
  adapter's ``RedisInFlightRouter`` reads, so the controller reads them the same way on both backends.
- ``backend``: which cluster, router and clock are active (``settings.ROLLOUTUI_BACKEND``).
- ``locks``: the per-ModelServing reconcile lock (Redis) with its "dirty" re-run flag.
- ``publish``: the Channels group of a ModelServing and the state broadcast.
"""
