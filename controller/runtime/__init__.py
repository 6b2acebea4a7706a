"""The live app's plumbing around the controller: what runs a reconcile where, and who hears of it.

Place in the flow: a change (an operator's control, the simulated cluster's tick, the Kubernetes
watch) -> ``enqueue.send`` (one deduplicated Celery message per ModelServing) -> the
``controller.tasks.reconcile`` task -> ``reconciler.run_reconcile`` (the ModelServing's Redis lock,
one ``controller.core.reconcile`` pass against the active backend, metrics, the state published to
the dashboard, a requeue or a backoff) -> ``publish`` (the Channels group of the ModelServing).

- ``backend``: which cluster, router and clock are active (``settings.ROLLOUTUI_BACKEND``), and the
  database-backed simulated cluster wired to the app (``sim_cluster``: changes enqueue reconciles,
  simulated requests kept in Redis).
- ``redisconn``: the Redis client for the controller's own state; ``locks``: the per-ModelServing
  reconcile lock with its "dirty" re-run flag, and the tick's plain lock.
- ``enqueue``: the deduplicated reconcile message (sent by task name, so no module imports the
  task module back); ``reconciler``: one reconcile task's work; ``periodic``: resync and the
  simulated cluster's tick; ``progress``: the progress history for the charts.
- ``publish``, ``state``: the state view of one ModelServing and its broadcast; ``clock``: the wall
  clock of a real cluster.

The work-queue policy (coalescing, backoff, resync period) is pure code in
``controller.core.workqueue``, shared with the simulator's controller.
"""
