"""The database driver of the simulated cluster: the one the running product uses.

All state is in database rows (``controller.models``: ``SimObject``, ``SimNode``, ``SimClock``,
``SimTraffic``), so any process (web, worker, beat) may write, and restarting everything loses
nothing. ``store.DatabaseCluster`` is the API server (compare-and-set on resourceVersion) and applies
the kubelet's immediate reactions in the same write; ``tick.tick`` runs the steps that are due
(``SimObject.next_at <= now``) and the scheduler; ``traffic.RedisTraffic`` keeps the simulated
requests in Redis; ``clock`` is the simulated time (wall time times a speed factor); ``config``
the stored timings; ``demo`` the demo cluster. The rules are the shared pure ones
(``controller.simcluster.physics``, ``routing``, ``objects``).
"""
