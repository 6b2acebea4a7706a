"""The ports the reconcile pass talks to: one narrow protocol per external system.

Objects crossing the cluster port are Kubernetes-shaped plain dicts (JSON-compatible), exactly as
the API server would return them, so the simulated and the Kubernetes adapters differ only in
transport:

- ModelServing: ``{"apiVersion", "kind", "metadata": {name, namespace, uid, generation,
  resourceVersion, annotations}, "spec": {...}, "status": {...}}``
- Pod: ``{"metadata": {name, namespace, uid, labels, annotations, ownerReferences,
  deletionTimestamp}, "spec": {containers, readinessGates, nodeName, ...}, "status": {phase,
  conditions, containerStatuses, podIP}}``
- ControllerRevision: ``{"metadata": {name, namespace, labels, annotations, ownerReferences},
  "data": <canonical revision data, or anything unparseable>, "revision": N}``
- Owned objects (``OWNED_KINDS``): the headless ``Service`` (``network``) and Volcano's ``PodGroup``
  (``gang``), labelled ``serving.rolloutui.io/name=<ms>`` and owned by the ModelServing.

Times are clock seconds (floats): epoch seconds on a real cluster, virtual seconds in simulation.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

Obj = dict[str, Any]

# Kinds the controller creates besides pods and revisions: v1 Services, and Volcano's
# scheduling.volcano.sh/v1beta1 PodGroups.
SERVICE, PODGROUP = "Service", "PodGroup"
OWNED_KINDS = (SERVICE, PODGROUP)


class SharedObjects(list):
    """A list whose objects the port never changes once handed out: it writes a new object for every
    change (copy on write) and hands out the same object while the resource is unchanged. So an
    object met again (``is``) is the same version of the resource, and ``observe`` compares a list
    with the previous one by identity rather than reading every pod's metadata. The embedded
    database store and the in-memory simulator list pods this way; the Kubernetes adapter decodes a
    new object for every pod on every list and returns a plain list. Nobody may mutate the objects.
    """

    __slots__ = ()


class ClusterError(Exception):
    """Base class of errors raised by a cluster adapter."""


class NotFound(ClusterError):
    """The object does not exist (HTTP 404)."""


class Conflict(ClusterError):
    """The write lost a race: resourceVersion changed, or the object already exists (HTTP 409)."""


@runtime_checkable
class WorkloadReadPort(Protocol):
    """The reads of the workloads of both kinds: ModelServings, and KServe's InferenceServices with
    what KServe makes of them (Deployments, their ReplicaSets and pods) and reads (the
    ``inferenceservice-config`` ConfigMap, ServingRuntimes), as Kubernetes-shaped dicts.

    Every backend implements it: the embedded database cluster (``controller.simcluster.database``),
    the in-memory simulator's store (``controller.simcluster.memory``) and the Kubernetes adapter
    (``controller.k8s``, with or without its caches). The InferenceService pages, API and periodic
    passes read through it (``controller.runtime.kserve.state``); the simulated KServe controller's
    store (``controller.simcluster.workloads.WorkloadStore``) adds the writes.
    """

    def list_modelservings(self, namespace: str | None = None) -> list[Obj]: ...

    def get_modelserving(self, namespace: str, name: str) -> Obj:
        """Raises NotFound."""
        ...

    def list_objects(self, kind: str, namespace: str | None = None, *, owner: str | None = None) -> list[Obj]:
        """Objects of ``kind`` (``InferenceService``, ``Deployment``, ``ReplicaSet``, ``ConfigMap``,
        ``ServingRuntime``, ``ClusterServingRuntime``) in name order; with ``owner``, those whose
        controller ownerReference names it. No InferenceService on a cluster without KServe."""
        ...

    def get_object(self, kind: str, namespace: str, name: str) -> Obj:
        """Raises NotFound."""
        ...

    def list_controlled_pods(self, namespace: str, controller: str) -> list[Obj]:
        """Pods whose controller ownerReference names ``controller`` (a ReplicaSet), in name order."""
        ...


@runtime_checkable
class ClusterPort(Protocol):
    """Everything the controller reads from and writes to a cluster."""

    # ModelServings
    def list_modelservings(self, namespace: str | None = None) -> list[Obj]: ...

    def get_modelserving(self, namespace: str, name: str) -> Obj:
        """Raises NotFound."""
        ...

    def read_modelserving(self, namespace: str, name: str) -> Obj:
        """The ModelServing, to read and never to change: a port may hand out an object it shares
        with other readers (the embedded database store its decoded copy of the row, as it shares
        pods in ``SharedObjects``), where ``get_modelserving`` may have to copy it for a caller that
        edits what it gets. The reconcile pass reads through this. Raises NotFound."""
        ...

    def generation_of(self, namespace: str, name: str) -> int:
        """The ModelServing's ``metadata.generation`` (0 when unset), without handing out the whole
        object: the reconcile pass's check that its spec still stands (``reconcile._spec_moved_on``)
        reads only this, and a 1,000-group ModelServing's status is ~300 KB that a store would copy
        for nothing. Raises NotFound."""
        ...

    def create_modelserving(self, obj: Obj) -> Obj:
        """Raises Conflict if it exists."""
        ...

    def patch_modelserving(self, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None) -> Obj:
        """JSON merge patch of metadata/spec. With ``resource_version``, raises Conflict if it moved."""
        ...

    def replace_modelserving_status(self, namespace: str, name: str, status: Obj, *, resource_version: str) -> Obj:
        """Write status through the status subresource; raises Conflict if resourceVersion moved.
        ``status`` is handed over: the embedded stores keep that very object (no copy of a
        1,000-group status on every pass), so the writer never changes it afterwards."""
        ...

    def delete_modelserving(self, namespace: str, name: str) -> None: ...

    # Pods of one ModelServing (selected by the name label)
    def list_pods(self, namespace: str, ms_name: str) -> list[Obj]:
        """In name order. A port that shares unchanged objects between lists returns ``SharedObjects``."""
        ...

    def get_pod(self, namespace: str, name: str) -> Obj:
        """Raises NotFound."""
        ...

    def pod_events(self, namespace: str, name: str) -> list[Obj]:
        """The pod's events (core/v1 Event shape), oldest first; raises NotFound. The pod pages."""
        ...

    def pod_log(self, namespace: str, name: str, *, tail: int = 200) -> list[Obj]:
        """The last ``tail`` lines of the pod's engine container, ``{"t", "time", "line"}`` each;
        raises NotFound. The pod pages."""
        ...

    def create_pod(self, pod: Obj) -> Obj:
        """Raises Conflict if a pod of that name exists."""
        ...

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """Delete (start graceful termination). With ``uid``, only if it is still that pod."""
        ...

    def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        """JSON merge patch of metadata (labels, annotations) and spec (container images)."""
        ...

    def set_pod_condition(self, namespace: str, name: str, condition: Obj) -> Obj:
        """Set (add or replace by ``type``) one condition in pod status: used for readiness gates."""
        ...

    # ControllerRevisions of one ModelServing
    def list_revisions(self, namespace: str, ms_name: str) -> list[Obj]: ...

    def create_revision(self, revision: Obj) -> Obj:
        """Raises Conflict if a revision of that name exists."""
        ...

    def set_revision_number(self, namespace: str, name: str, number: int) -> Obj: ...

    def annotate_revision(self, namespace: str, name: str, annotations: dict[str, str]) -> Obj:
        """Set these annotations on the revision (its data is immutable; metadata is not). NotFound."""
        ...

    def delete_revision(self, namespace: str, name: str) -> None: ...

    # Objects of OWNED_KINDS of one ModelServing (selected by the name label)
    def list_owned(self, kind: str, namespace: str, ms_name: str) -> list[Obj]: ...

    def create_owned(self, obj: Obj) -> Obj:
        """Raises Conflict if an object of that kind and name exists."""
        ...

    def patch_owned(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        """JSON merge patch of metadata and spec; raises NotFound."""
        ...

    def delete_owned(self, kind: str, namespace: str, name: str) -> None:
        """Raises NotFound."""
        ...

    # Events
    def record_event(
        self, namespace: str, ms_name: str, *, reason: str, message: str, type: str = "Normal"
    ) -> None: ...

    def report_interrupted(self, namespace: str, ms_name: str, pod: str, count: int, reason: str) -> None:
        """``count`` requests the router still had in flight on ``pod`` when it was deleted at its drain
        timeout. The Kubernetes adapter records an Event and the audit; the simulated clusters count
        the requests they cut off themselves, so theirs does nothing."""
        ...

    # Traffic
    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        """The pods of ``ms_name`` the router has as targets now (``routed_pods``): ``{pod name:
        since when, or None}``. None when this cluster keeps no such table (the in-memory simulator,
        whose router keeps it). Raises ``ClusterError`` when the table cannot be read right now."""
        ...

    def route_canary_weight(self, namespace: str, name: str, status: Obj) -> None:
        """Send the canary weight of ``status`` (``status.canary.weight``) to the traffic router. The
        Kubernetes adapter writes it into the HTTPRoute (``controller.k8s.traffic_routing``); the
        embedded clusters' routers read it from the status itself, so theirs does nothing. Raises
        ``ClusterError`` when the write fails (the next pass writes it again)."""
        ...


@runtime_checkable
class RouterPort(Protocol):
    """What the controller asks of the request router: how busy a pod is, and which pods it sends
    requests to."""

    def in_flight(self, namespace: str, pod_name: str) -> int:
        """Requests sent to the pod that have not finished (queued ones included)."""
        ...

    def in_flight_many(self, namespace: str, pod_names: list[str]) -> dict[str, int] | None:
        """The counts of many pods in one round trip (the Redis router's hash), or None when this
        router can only be asked pod by pod (the simulators'). With the counts the state view shows
        every pod's figure (``in_flight_many`` below); without them a pass asks only about the pods
        leaving routing."""
        ...

    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        """The pods of ``ms_name`` this router sends new requests to (``routed_pods``): ``{pod name:
        since when, or None}``; None when this router keeps no such table (the Redis router: the
        cluster is asked instead)."""
        ...


def in_flight_many(router: RouterPort, namespace: str, pods: list[Obj]) -> dict[str, int] | None:
    """The non-zero in-flight counts of ``pods`` by name in one round trip, or None when the router
    cannot give many at once. The reconcile pass's state view and the dashboard's read of the state
    both take their counts here, so the page shows the same figure whichever of them it got last."""
    counts = router.in_flight_many(namespace, [p["metadata"]["name"] for p in pods])
    if counts is None:
        return None
    return {name: n for name, n in counts.items() if n}


def routed_pods(
    router: Any, cluster: Any, namespace: str, ms_name: str, pods: list[Obj]
) -> dict[str, float | None] | None:
    """The pods of ``ms_name`` the router has as targets now, for the Routed gate (``gates``):
    ``{pod name: since when (clock seconds), or None when not known}``, or None when nothing tells.

    Asked of the router first, then of the cluster (``routable_pods(namespace, ms_name, pods)``;
    ``pods``: the pass's list of the ModelServing's pods, for a port that reads the table from
    them); the first that keeps a table answers: the in-memory router with its own table, the
    embedded database cluster with its traffic's, the Kubernetes adapter with the pods whose address
    is ready in an EndpointSlice of the ModelServing's Services. A port that cannot answer right now
    raises ``ClusterError``: the pass then infers Routed from the pods, as when no port keeps one.
    """
    for port in (router, cluster):
        try:
            table = port.routable_pods(namespace, ms_name, pods)
        except ClusterError:
            return None
        if table is not None:
            return dict(table)
    return None


@runtime_checkable
class VerifierPort(Protocol):
    """Sends ``spec.verification`` to an instance's entry pod (the model server answers)."""

    def verify(self, namespace: str, pod: Obj, verification: dict[str, Any]) -> dict[str, Any]:
        """``verification``: ``Verification.to_json()``. Returns ``{"passed": bool, "status": int
        | None, "body": str (at most a few hundred characters), "error": str | None,
        "latencyMs": float | None}``; never raises for an answer it did not like."""
        ...


@runtime_checkable
class MetricsPort(Protocol):
    """Request figures of one revision of a ModelServing over a time window (canary analysis)."""

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict[str, Any]:
        """The figures of the requests of ``revision`` that started in [start, end), as known at
        ``at`` (the judging time; None: now):

        - ``started``: how many started (finished or not; rejected ones never reached a revision),
          or None when the source cannot tell; ``requests``: how many of them finished;
        - ``errorRate``, ``timeoutRate``: shares of the finished ones; ``latencyP50Ms``,
          ``latencyP95Ms``, ``latencyP99Ms``: of the answered ones; ``feedbackMean``;
          ``durationP99Ms``: p99 of the finished ones' durations (start to end), the settle of the
          next window; each None when there were none (or the source has no such figure);
        - optionally ``evidence`` (``core.evidence.count_against``'s shape): the answered latencies
          as a histogram and the ages at ``at`` of the requests still waiting for an answer, for
          latency checks that count unfinished requests. Without it a latency check compares the
          percentile.

        Raises when the source cannot answer: the window is then judged Error."""
        ...


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float: ...


class NoRouter:
    """A router that knows of no traffic: drains finish at once. For clusters without a router."""

    def in_flight(self, namespace: str, pod_name: str) -> int:
        return 0

    def in_flight_many(self, namespace: str, pod_names: list[str]) -> dict[str, int] | None:
        return None  # every count is 0, and a pass asks only about the pods leaving routing

    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        return None  # no table: the cluster is asked


@runtime_checkable
class SimulatorPort(Protocol):
    """The embedded simulated cluster's extras, which a real cluster does not have: faults, nodes,
    the list rows kept at write time, and what a preview copies (its config and clock).

    The runtime backend hands it out (``controller.runtime.simulator.get_simulator``) on the
    simulated backend and ``None`` on Kubernetes, so a service asks for it and never branches on the
    backend's name nor imports the simulated cluster. The database-backed cluster implements it.
    """

    config: Any  # the simulated cluster's ClusterConfig (phase timings, image behaviour)
    clock: Clock

    # The list page's rows (``controller.core.listing.ms_summary``), kept at write time.
    def list_summaries(self, namespace: str | None = None, within: set[str] | None = None) -> list[Obj]: ...

    def modelserving_namespaces(self) -> set[str]: ...

    # The simulated request load of one ModelServing (None: none configured).
    def traffic_of(self, namespace: str, name: str) -> Obj | None:
        """``{rps, durationSeconds: [low, high], sent, completed, interrupted, rejected, inFlight}``."""
        ...

    # Pods, read and killed (a fault).
    def get_pod(self, namespace: str, name: str) -> Obj:
        """Raises NotFound."""
        ...

    def list_pods(self, namespace: str, ms_name: str) -> list[Obj]: ...

    def kill_pod(self, namespace: str, name: str, message: str) -> Obj: ...

    # Nodes: listed, added, failed (a fault).
    def list_nodes(self, *, include_failed: bool = False) -> list[Any]:
        """Node records with ``name``, ``ip``, ``gpus`` and ``failed``."""
        ...

    def add_node(self, gpus: int, *, name: str | None = None) -> Any: ...

    def fail_node(self, name: str) -> list[str]:
        """Returns the names of the pods lost; raises NotFound, or Conflict when already failed."""
        ...

    def gpus_used(self) -> dict[str, int]:
        """GPUs held by bound pods, by node name."""
        ...

    def pods_per_node(self) -> dict[str, int]: ...
