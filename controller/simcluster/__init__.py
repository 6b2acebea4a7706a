"""The simulated cluster: the ``sim`` adapter of the cluster and router ports, in two drivers.

Place in the flow: the controller (``controller.core.reconcile``) reads and writes Kubernetes-shaped
objects through ``ClusterPort``; here those objects live in a simulated API server, and simulated
nodes, a scheduler, kubelets and a request router act on them the way a real cluster would.

The rules are written once, as pure functions, and used by both drivers:

- ``objects``: what each API write does to an object (resourceVersions, generation, graceful
  deletion, pod-spec immutability).
- ``physics``: the scheduler's placement and every kubelet step of a pod (pull, start, load, Ready,
  crash loop, in-place restart, termination, node loss) as functions of the pod, the configuration
  and the time: ``advance(pod, now, config) -> (pod, next_at)``; the kubelet's state and next
  deadline live in the pod itself (annotation ``sim.rolloutui.io/kubelet``).
- ``routing``: which pod a request goes to, when it ends, which requests a stopping pod interrupts.
- ``config``: timings (fixed or ``[min, max]``), image behaviour, traffic.

The two drivers only store and schedule:

- ``memory``: objects in memory on a virtual clock with a discrete-event loop (a wake-up at each
  pod's ``next_at``); behind ``manage.py simulate``, the dashboard's preview and the tests.
  ``scenario`` parses scenario files, ``runner`` replays one against the real controller with a
  simulated work queue, ``trace`` writes the result, ``preview`` runs a change on a copy, ``cli``
  is the command line (``python -m controller.simcluster.cli``).
- ``database``: the running product's simulated cluster, in database rows (``SimObject.next_at``
  mirrors each pod's deadline) advanced by a periodic tick, requests in Redis. Django only here;
  the app's runtime (``controller.runtime``) wires it (reconciles on change, the Redis client).

Never imports the Kubernetes adapter (``controller.k8s``), the app's runtime or the dashboard.
"""
