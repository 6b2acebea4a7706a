"""``DatabaseCluster``: the ``ClusterPort`` of the live simulated cluster, over ``SimObject`` rows.

The semantics are ``controller.simcluster.memory.store.InMemoryStore``'s (the API server's), with the database as
the only state, so several processes can share it; what a write does to an object is computed by the
same pure functions (``controller.simcluster.objects``), only storing it differs:

- every real write stores a new ``resourceVersion`` with a compare-and-set
  ``UPDATE ... WHERE id = X AND resource_version = RV``: a writer that lost the race either raises
  ``Conflict`` (the caller gave a resourceVersion precondition, or it is a status write) or, for a
  patch without precondition (which the API server applies atomically), re-reads and re-applies;
- a write that changes nothing is a no-op: no new resourceVersion, no reconcile enqueued;
- ``metadata.generation`` of a ModelServing is bumped only when its spec changes;
- deleting a bound pod starts graceful termination (``deletionTimestamp``; the row stays, holding
  its name and its node's GPUs, until the kubelet removes it); creating a pod whose name is still
  taken raises ``Conflict``;
- every real change is reported to ``on_change(namespace, modelserving)`` (the runtime passes
  ``controller.runtime.enqueue.reconcile_soon``: a deduplicated reconcile after commit), except the
  controller's own status writes (the pass that wrote it already knew).

The kubelet's reactions that the in-memory driver runs from change listeners (start terminating,
restart a container on an in-place image change, recompute Ready after a readiness gate) are applied
here in the same write, by the same pure functions (``controller.simcluster.physics``); timed steps
are the tick's job (``tick.py``). Each pod row's ``next_at`` mirrors the deadline in its kubelet state.

resourceVersion values are ``max(previous + 1, wall-clock microseconds)``: strictly increasing per
object, and a re-created object never reuses a value its predecessor had, so a stale precondition
cannot match by accident. Example: an object written at rv 1732870000000000 and written again in the
same microsecond gets 1732870000000001.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction
from django.db.models import TextField
from django.db.models.functions import Cast

from controller.core import naming
from controller.core.kserve.materialize import LABEL_ISVC
from controller.core.listing import ms_summary
from controller.core.ports import Conflict, NotFound, Obj, SharedObjects
from controller.models import SimClock, SimNode, SimObject, SimTraffic
from controller.simcluster import objects, physics, podlog, routing
from controller.simcluster.config import ClusterConfig
from controller.simcluster.objects import Invalid, owner_name, rfc3339

from .clock import LiveClock, live_clock
from .config import parse_config, retag
from .traffic import RedisTraffic

log = logging.getLogger(__name__)

MS, POD, REV = SimObject.KIND_MODELSERVING, SimObject.KIND_POD, SimObject.KIND_REVISION
WORKLOADS = objects.WORKLOAD_KINDS  # InferenceService, Deployment, ReplicaSet, ConfigMap
# Lost compare-and-set races retried before giving up with Conflict (a patch without precondition).
MAX_CAS_ATTEMPTS = 50
REMOVE = object()  # returned by an update function: delete the row


class _Lost(Exception):
    """A compare-and-set lost the race."""


def _next_rv(previous: int = 0) -> int:
    return max(previous + 1, time.time_ns() // 1000)


class _DecodedCache:
    """Decoded JSON of rows, by primary key and resourceVersion, shared by one process.

    A reconcile pass of a 1,000-group ModelServing reads 1,000 pods; decoding their JSON on every
    pass costs far more than the pass itself. Reads first fetch ``(pk, resource_version)`` only and
    then the data of the rows whose version changed since this process last decoded them, so a pass
    after one pod changed decodes one pod. Objects handed out are shared and must not be mutated
    (the store itself never mutates what it read: every write builds new dicts; the controller core
    never mutates its input either, which the simulator's copy-on-read runs check).
    """

    MAX_ENTRIES = 200_000  # about 400 MB of 2 KB pods would be far more than any process needs

    def __init__(self) -> None:
        self.entries: dict[int, tuple[int, Obj]] = {}

    def rows(self, queryset, order: list[str]) -> SharedObjects:
        versions = list(queryset.order_by(*order).values_list("pk", "resource_version"))
        stale = [pk for pk, rv in versions if (self.entries.get(pk) or (None,))[0] != rv]
        if len(self.entries) + len(stale) > self.MAX_ENTRIES:
            self.entries.clear()
            stale = [pk for pk, _ in versions]
        for i in range(0, len(stale), 500):  # SQLite allows a limited number of query parameters
            # The JSON as text, decoded with orjson (~4x the standard library's json, which the
            # JSONField's own decoding uses): a rollout's pass decodes every pod that moved. The
            # column only holds valid JSON (SQLite's JSON_VALID check, PostgreSQL's jsonb), which
            # orjson reads as json does.
            for pk, rv, text in SimObject.objects.filter(pk__in=stale[i : i + 500]).values_list(
                "pk", "resource_version", Cast("data", TextField())
            ):
                self.entries[pk] = (rv, orjson.loads(text))
        out = SharedObjects()  # the decoded objects are shared: see the class's docstring
        for pk, _rv in versions:
            entry = self.entries.get(pk)
            if entry is not None:  # a row deleted between the two queries is skipped
                out.append(entry[1])
        return out

    def data(self, pk: int, resource_version: int) -> Obj:
        """The decoded object of one row at ``resource_version``: this process's copy when it has
        that version, else read and decoded now (``SqlRows.data_text``)."""
        entry = self.entries.get(pk)
        if entry is not None and entry[0] == resource_version:
            return entry[1]
        text = _SQL.data_text(pk)
        if text is None:
            raise _Gone()
        data = orjson.loads(text)
        self.entries[pk] = (resource_version, data)
        return data


_decoded = _DecodedCache()


def _private(obj: Obj) -> Obj:
    """A copy the caller may change: what a single-object read or a write returns.

    The process's decoded copy of a row is shared (``_DecodedCache``), and read-modify-writes start
    from it; a caller that changed what it was handed (``ms = get_modelserving(); ms["spec"]... = x;
    patch_modelserving(..., {"spec": ms["spec"]})``) would change that copy, and the patch would find
    nothing to change. A Kubernetes API server hands every caller its own object too. orjson copies a
    2 KB pod in ~10 us (a pass that writes 200 pods: ~2 ms); lists of pods stay shared
    (``SharedObjects``: the controller's hot path, which never mutates)."""
    return orjson.loads(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS))


def _private_around_status(obj: Obj) -> Obj:
    """``obj`` with everything but its status copied (``_private``), in the same key order, and its
    status the very object the writer handed over: a status write returns what it stored without
    copying the status back (~300 KB with 1,000 groups)."""
    rest = _private({key: value for key, value in obj.items() if key != "status"})
    return {key: obj["status"] if key == "status" else rest[key] for key in obj}


def _hands_out_a_copy(method: Callable[..., Obj]) -> Callable[..., Obj]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Obj:
        return _private(method(*args, **kwargs))

    return wrapper


class _Gone(Exception):
    """The row was deleted between two reads."""


class _Row:
    """What a read-modify-write needs of a stored object: its key, version, owner, uid and decoded
    data (shared: never mutated)."""

    __slots__ = ("pk", "resource_version", "ms_name", "uid", "data")

    def __init__(self, pk: int, resource_version: int, ms_name: str, uid: str, data: Obj) -> None:
        self.pk, self.resource_version, self.ms_name, self.uid, self.data = pk, resource_version, ms_name, uid, data


class SqlRows:
    """The store's per-object reads and compare-and-set writes in plain SQL on Django's connection.

    They run for every pod a pass acts on and every kubelet step of the physics tick (a rollout of
    100 groups writes 200 pods in one pass): through the ORM a read took ~1.6 ms (building the query,
    a model instance, the JSONField decoding with the standard library's json) and a write ~0.7 ms;
    here ~0.1 ms each, the data decoded and encoded with orjson, and an unchanged object's data taken
    from this process's decoded copy (``_DecodedCache``). The same columns, the same JSON: the ORM
    reads what these write and the other way round (tests/live run both on SQLite and PostgreSQL)."""

    # The JSON columns: text on SQLite (with a JSON_VALID check), jsonb on PostgreSQL.
    JSON_COLUMNS = frozenset({"data", "summary"})

    def __init__(self) -> None:
        self._table: str | None = None

    @property
    def table(self) -> str:
        if self._table is None:
            self._table = connection.ops.quote_name(SimObject._meta.db_table)
        return self._table

    def key(self, kind: str, namespace: str, name: str) -> tuple[int, int, str, str] | None:
        """(pk, resource_version, ms_name, uid) of the object, or None."""
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT id, resource_version, ms_name, uid FROM {self.table} "
                "WHERE kind = %s AND namespace = %s AND name = %s",
                [kind, namespace, name],
            )
            return cur.fetchone()

    def generation(self, kind: str, namespace: str, name: str) -> int | None:
        """The object's ``generation`` column (``metadata.generation``, kept at every write), or None."""
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT generation FROM {self.table} WHERE kind = %s AND namespace = %s AND name = %s",
                [kind, namespace, name],
            )
            found = cur.fetchone()
        return int(found[0]) if found is not None else None

    def data_text(self, pk: int) -> str | None:
        with connection.cursor() as cur:
            cur.execute(f"SELECT CAST(data AS TEXT) FROM {self.table} WHERE id = %s", [pk])
            found = cur.fetchone()
        return found[0] if found is not None else None

    def compare_and_set(self, pk: int, resource_version: int, columns: dict[str, Any]) -> bool:
        """Write ``columns`` to row ``pk`` if it is still at ``resource_version``; False when not."""
        json_value = "CAST(%s AS jsonb)" if connection.vendor == "postgresql" else "%s"
        sets, params = [], []
        for column, value in columns.items():
            if column in self.JSON_COLUMNS:
                sets.append(f"{connection.ops.quote_name(column)} = {json_value}")
                params.append(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())
            else:
                sets.append(f"{connection.ops.quote_name(column)} = %s")
                params.append(value)
        with connection.cursor() as cur:
            cur.execute(
                f"UPDATE {self.table} SET {', '.join(sets)} WHERE id = %s AND resource_version = %s",
                [*params, pk, resource_version],
            )
            return cur.rowcount == 1

    def delete_if(self, pk: int, resource_version: int) -> bool:
        """Delete row ``pk`` if it is still at ``resource_version``; False when not (no model
        refers to a SimObject, so nothing else goes with it)."""
        with connection.cursor() as cur:
            cur.execute(f"DELETE FROM {self.table} WHERE id = %s AND resource_version = %s", [pk, resource_version])
            return cur.rowcount == 1


_SQL = SqlRows()


class DatabaseCluster:
    """``ClusterPort`` over the database, plus the physics-side API (nodes, binding, removal)."""

    def __init__(
        self,
        clock: LiveClock | None = None,
        *,
        actor: str = "operator",
        config: ClusterConfig | None = None,
        on_change: Callable[[str, str], None] | None = None,
        traffic: RedisTraffic | None = None,
        on_interrupted: Callable[[str, str, str, int, str], None] | None = None,
    ) -> None:
        """``on_change(namespace, name)``: called for every real change of a ModelServing's objects
        (inside the writing transaction); ``traffic``: the simulated requests, whose in-flight ones are
        interrupted when their pod stops serving. The runtime wires both
        (``controller.runtime.backend.sim_cluster``); without them (tests) nothing is enqueued."""
        self.clock = clock or live_clock()
        self.actor = actor
        self.on_change = on_change
        self.traffic = traffic
        # on_interrupted(namespace, modelserving, pod, count, reason): requests cut off when a pod
        # stopped serving; reason "drain timeout" when the pod was draining (the controller deleted
        # it at spec.drain.timeoutSeconds with requests still in flight). The runtime reports it.
        self.on_interrupted = on_interrupted
        self._config = config
        # A config given by the caller (tests, benchmarks) is fixed; otherwise it is the stored one.
        self._config_fixed = config is not None
        self._config_loaded = 0.0

    # -- plumbing -----------------------------------------------------------------------------------

    @property
    def config(self) -> ClusterConfig:
        # Re-read every few seconds so a config change (load_demo, a test) reaches running workers.
        if not self._config_fixed and (self._config is None or time.monotonic() - self._config_loaded > 5.0):
            row = SimClock.objects.filter(pk=1).values_list("config", flat=True).first()
            self._config = parse_config(row)
            self._config_loaded = time.monotonic()
        return self._config

    def _now(self) -> float:
        return self.clock.now()

    def _row(self, kind: str, namespace: str, name: str) -> _Row:
        for _ in range(MAX_CAS_ATTEMPTS):
            key = _SQL.key(kind, namespace, name)
            if key is None:
                break
            pk, rv, ms_name, uid = key
            try:
                return _Row(pk, rv, ms_name, uid, _decoded.data(pk, rv))
            except _Gone:  # deleted meanwhile (and maybe created again): read anew
                continue
        raise NotFound(f"{kind.lower()} {namespace}/{name} not found")

    def _changed(self, namespace: str, ms_name: str | None) -> None:
        if ms_name and self.on_change is not None:
            self.on_change(namespace, ms_name)

    def _cas(self, row: _Row, data: Obj, **columns: Any) -> Obj:
        """Store ``data`` in ``row`` if nobody wrote it since we read it; raise ``_Lost`` otherwise."""
        rv = _next_rv(row.resource_version)
        data = {**data, "metadata": {**data["metadata"], "resourceVersion": str(rv)}}
        written = {
            "data": data,
            "resource_version": rv,
            "written_by": self.actor or "",
            "written_at": time.time(),
            **columns,
        }
        if not _SQL.compare_and_set(row.pk, row.resource_version, written):
            raise _Lost()
        row.data, row.resource_version = data, rv
        # This process already holds the decoded object it just wrote: the next read reuses it
        # (a 1,000-group ModelServing's status is about 300 KB of JSON).
        _decoded.entries[row.pk] = (rv, data)
        return data

    def _insert(self, kind: str, obj: Obj, ms_name: str, **columns: Any) -> Obj:
        meta = obj["metadata"]
        rv = _next_rv()
        meta["resourceVersion"] = str(rv)
        try:
            with transaction.atomic():
                SimObject.objects.create(
                    kind=kind,
                    namespace=meta["namespace"],
                    name=meta["name"],
                    ms_name=ms_name or "",
                    uid=meta.get("uid", ""),
                    resource_version=rv,
                    data=obj,
                    written_by=self.actor or "",
                    written_at=time.time(),
                    **columns,
                )
        except IntegrityError:
            raise Conflict(f"{kind.lower()} {meta['namespace']}/{meta['name']} already exists") from None
        return obj

    # -- ModelServings ------------------------------------------------------------------------------

    def list_modelservings(self, namespace: str | None = None) -> list[Obj]:
        rows = SimObject.objects.filter(kind=MS)
        if namespace is not None:
            rows = rows.filter(namespace=namespace)
        return [r for r in rows.order_by("namespace", "name").values_list("data", flat=True)]

    @_hands_out_a_copy
    def get_modelserving(self, namespace: str, name: str) -> Obj:
        return self.read_modelserving(namespace, name)

    def read_modelserving(self, namespace: str, name: str) -> Obj:
        """``ClusterPort.read_modelserving``: this process's decoded copy of the row, shared like the
        pod lists (``_DecodedCache``). ``get_modelserving`` hands out a private copy of it instead,
        an orjson round trip of the whole object: ~26 ms of a 1,000-group pass before its first
        write under cProfile (~300 KB of status), for a pass that never changes what it read."""
        return self._row(MS, namespace, name).data

    def generation_of(self, namespace: str, name: str) -> int:
        """The ``generation`` column, which every write of the row keeps equal to
        ``metadata.generation``: no JSON read, decoded or copied."""
        generation = _SQL.generation(MS, namespace, name)
        if generation is None:
            raise NotFound(f"modelserving {namespace}/{name} not found")
        return generation

    def create_modelserving(self, obj: Obj) -> Obj:
        ns, name = objects.object_key(obj)
        new = objects.new_modelserving(obj, uid=str(uuid.uuid4()), created=rfc3339(self._now()))
        self._insert(MS, new, name, generation=1, summary=ms_summary(new))
        self._changed(ns, name)
        return new

    @_hands_out_a_copy
    def patch_modelserving(self, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None) -> Obj:
        for _ in range(MAX_CAS_ATTEMPTS):
            row = self._row(MS, namespace, name)
            old = row.data
            if resource_version is not None and str(resource_version) != str(row.resource_version):
                raise Conflict(f"modelserving {namespace}/{name}: resourceVersion {resource_version} is stale")
            new = objects.patched_modelserving(old, patch)
            if new is old:
                return old
            try:
                out = self._cas(row, new, generation=new["metadata"]["generation"], summary=ms_summary(new))
            except _Lost:
                if resource_version is not None:
                    raise Conflict(
                        f"modelserving {namespace}/{name}: resourceVersion {resource_version} is stale"
                    ) from None
                continue
            self._changed(namespace, name)
            return out
        raise Conflict(f"modelserving {namespace}/{name}: too many concurrent writers")

    def replace_modelserving_status(self, namespace: str, name: str, status: Obj, *, resource_version: str) -> Obj:
        """Keeps ``status`` as given, as the in-memory store does (the port's handover: the writer
        never changes it afterwards; the reconcile pass builds a new one every pass), and returns
        a private copy of the rest of the object around that same status. Copying a 1,000-group
        status in, then the whole object out for a return value the pass drops, cost ~19 + ~5 ms of
        the pass before its first pod write (cProfile, ``bench reaction --profile``)."""
        row = self._row(MS, namespace, name)
        if str(resource_version) != str(row.resource_version):
            raise Conflict(f"modelserving {namespace}/{name}: resourceVersion {resource_version} is stale")
        old = row.data
        new = objects.with_status(old, status, copy=False)
        if new is old:
            return _private(old)
        try:
            out = self._cas(row, new, summary=ms_summary(new))
        except _Lost:
            raise Conflict(f"modelserving {namespace}/{name}: resourceVersion {resource_version} is stale") from None
        if self.actor != "controller":
            self._changed(namespace, name)
        return _private_around_status(out)

    def delete_modelserving(self, namespace: str, name: str) -> None:
        row = self._row(MS, namespace, name)
        # Owner-reference garbage collection: the pods and revisions go with their owner.
        for pod_name in SimObject.objects.filter(kind=POD, namespace=namespace, ms_name=name).values_list(
            "name", flat=True
        ):
            try:
                self.delete_pod(namespace, pod_name)
            except NotFound:
                pass
        SimObject.objects.filter(kind=REV, namespace=namespace, ms_name=name).delete()
        for owned in self.list_objects(objects.SERVICE, namespace, owner=name) + self.list_objects(
            objects.PODGROUP, namespace, owner=name
        ):
            if objects.owned_by_modelserving(owned, name, row.uid or None):
                SimObject.objects.filter(
                    kind=owned["kind"], namespace=namespace, name=owned["metadata"]["name"]
                ).delete()
        SimObject.objects.filter(pk=row.pk).delete()
        # No one left to send to.
        SimTraffic.objects.filter(kind=SimTraffic.KIND_MODELSERVING, namespace=namespace, name=name).delete()
        self._changed(namespace, name)

    # -- Pods ---------------------------------------------------------------------------------------

    def list_pods(self, namespace: str, ms_name: str) -> list[Obj]:
        return _decoded.rows(SimObject.objects.filter(kind=POD, namespace=namespace, ms_name=ms_name), ["name"])

    def routable_pods(self, namespace: str, ms_name: str, pods: list[Obj] | None = None) -> dict[str, float | None]:
        """The embedded router's table for the Routed gate (``ports.routed_pods``): the entry pods
        the live traffic picks from now (``routing.routable_entries`` over the stored pods, as each
        traffic tick does). ``pods``: the pass's list of them, else read here. It takes a pod the
        moment it is routable: no time of its own (None: its Ready time)."""
        pods = self.list_pods(namespace, ms_name) if pods is None else pods
        return dict.fromkeys([p["metadata"]["name"] for p in routing.routable_entries(pods)])

    @_hands_out_a_copy
    def get_pod(self, namespace: str, name: str) -> Obj:
        return self._row(POD, namespace, name).data

    def list_events(self, *, limit: int = 500) -> list[Obj]:
        """The newest events recorded on the cluster (``record_event``), newest first; at most
        ``limit`` (the list keeps ``RedisTraffic.EVENTS_KEPT``, for an hour). [] without Redis."""
        return self.traffic.events(limit=limit) if self.traffic is not None else []

    def pod_events(self, namespace: str, name: str) -> list[Obj]:
        """The pod's events as the kubelet and scheduler report them (``podlog.pod_events``); NotFound."""
        return podlog.pod_events(self.get_pod(namespace, name), self._now())

    def pod_log(self, namespace: str, name: str, *, tail: int = 200) -> list[Obj]:
        """The last ``tail`` lines of the pod's engine log (``podlog.pod_log``), with the requests its
        engine served and serves (``RedisTraffic.requests_of``); NotFound."""
        pod = self.get_pod(namespace, name)
        requests = self.traffic.requests_of(namespace, name) if self.traffic is not None else []
        return podlog.pod_log(pod, self._now(), requests=requests, tail=tail)

    def create_pod(self, pod: Obj) -> Obj:
        uid = str(uuid.uuid4())
        pod = objects.named(pod, uid)  # metadata.generateName (a ReplicaSet's pods)
        ns, _ = objects.object_key(pod)
        new = objects.new_pod(pod, uid=uid, created=rfc3339(self._now()))
        new, next_at, _ = physics.on_create(new, self._now(), self.config)
        ms_name = owner_name(new) or ""
        controller = objects.controller_name(new) or ""
        self._insert(POD, new, ms_name, gpus=physics.pod_gpus(new), next_at=next_at, controller=controller)
        self._changed(ns, ms_name)
        return new

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        def terminate(old: Obj) -> Any:
            new = objects.terminating_pod(
                old, uid=uid, stamp=lambda: rfc3339(self._now()), what=f"pod {namespace}/{name}"
            )
            if new is None:
                return REMOVE  # never bound: no kubelet has to stop anything
            if new is old:
                return old  # already terminating: deleting again changes nothing
            return physics.on_delete(new, self._now(), self.config).pod

        before, after = self.update_pod(namespace, name, terminate)
        if after is not before:
            draining = naming.ANNOTATION_DRAINING in ((before.get("metadata") or {}).get("annotations") or {})
            self._interrupt_pod_after_commit(namespace, name, "drain timeout" if draining else "deleted", before)

    @_hands_out_a_copy
    def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        restarted = []

        def apply(old: Obj) -> Obj:
            new = objects.patched_pod(old, patch, f"pod {namespace}/{name}")
            restarted[:] = []  # a lost race re-applies this
            if new is not old and (new.get("spec") or {}).get("containers") != (old.get("spec") or {}).get(
                "containers"
            ):
                new, _, stops_serving = physics.on_images_changed(new, self._now(), self.config)
                restarted[:] = [True] if stops_serving else []
            return new

        _, after = self.update_pod(namespace, name, apply)
        if restarted:
            self._interrupt_pod_after_commit(namespace, name, "container restart", after)
        return after

    @_hands_out_a_copy
    def set_pod_condition(self, namespace: str, name: str, condition: Obj) -> Obj:
        def apply(old: Obj) -> Obj:
            status = objects.with_condition(old.get("status") or {}, condition, rfc3339(self._now()))
            # The kubelet's next status sync: Ready follows the gate.
            return physics.recompute_ready({**old, "status": status}, self._now())

        return self.update_pod(namespace, name, apply)[1]

    # Physics-side pod writes ----------------------------------------------------------------------

    def update_pod(self, namespace: str, name: str, fn: Callable[[Obj], Any]) -> tuple[Obj, Any]:
        """Read-modify-write one pod with compare-and-set, re-applying ``fn`` after a lost race.

        ``fn(pod)`` returns the new pod (the same object: no change) or ``REMOVE``. Returns
        ``(before, after)``; ``after`` is ``REMOVE`` when the pod was removed.
        """
        for _ in range(MAX_CAS_ATTEMPTS):
            row = self._row(POD, namespace, name)
            old = row.data
            new = fn(old)
            if new is REMOVE:
                if not _SQL.delete_if(row.pk, row.resource_version):
                    continue
                self._changed(namespace, row.ms_name)
                return old, REMOVE
            if new is old or new == old:
                return old, old
            next_at = physics.next_at(physics.kubelet_state(new))
            try:
                out = self._cas(row, new, node=(new.get("spec") or {}).get("nodeName") or "", next_at=next_at)
            except _Lost:
                continue
            self._changed(namespace, row.ms_name)
            return old, out
        raise Conflict(f"pod {namespace}/{name}: too many concurrent writers")

    def _interrupt_pod_after_commit(self, namespace: str, name: str, reason: str, pod: Obj) -> None:
        """After the write commits, the requests in flight on the pod's engine are interrupted and
        counted against its ModelServing's or InferenceService's traffic; a ModelServing's are also
        reported (``on_interrupted``: the audit of a drain timeout)."""
        traffic = self.traffic
        if traffic is None:
            return
        kind, owner = traffic_owner(pod)
        report = self.on_interrupted
        now = self._now()

        def interrupt() -> None:
            count = traffic.interrupt(namespace, name, reason, ms_name=owner, kind=kind, now=now)
            if count and report is not None and owner and kind == SimTraffic.KIND_MODELSERVING:
                try:
                    report(namespace, owner, name, count, reason)
                except Exception:  # reporting is best effort; the requests are already counted
                    log.exception("could not report %d interrupted requests on %s/%s", count, namespace, name)

        transaction.on_commit(interrupt)

    @_hands_out_a_copy
    def kill_pod(self, namespace: str, name: str, message: str) -> Obj:
        """Fault injection: the pod's containers are killed for good (phase Failed; the controller's
        recovery replaces it); the requests in flight on it are interrupted."""
        _, after = self.update_pod(namespace, name, lambda old: physics.kill(old, self._now(), message).pod)
        self._interrupt_pod_after_commit(namespace, name, "killed", after)
        return after

    # -- ControllerRevisions --------------------------------------------------------------------------

    def list_revisions(self, namespace: str, ms_name: str) -> list[Obj]:
        revs = list(_decoded.rows(SimObject.objects.filter(kind=REV, namespace=namespace, ms_name=ms_name), ["pk"]))
        revs.sort(key=lambda r: (r.get("revision") or 0, r["metadata"]["name"]))
        return revs

    def create_revision(self, revision: Obj) -> Obj:
        ns, _ = objects.object_key(revision)
        new = objects.new_revision(revision, uid=str(uuid.uuid4()), created=rfc3339(self._now()))
        ms_name = owner_name(new) or ""
        self._insert(REV, new, ms_name)
        self._changed(ns, ms_name)
        return new

    @_hands_out_a_copy
    def set_revision_number(self, namespace: str, name: str, number: int) -> Obj:
        return self._update_revision(namespace, name, lambda old: objects.with_revision_number(old, number))

    @_hands_out_a_copy
    def annotate_revision(self, namespace: str, name: str, annotations: dict[str, str]) -> Obj:
        return self._update_revision(namespace, name, lambda old: objects.with_annotations(old, annotations))

    @_hands_out_a_copy
    def replace_revision_data(self, namespace: str, name: str, data: Any) -> Obj:
        """Fault side: overwrite ``data`` (a corrupted revision is ``"<corrupted>"``)."""
        return self._update_revision(namespace, name, lambda old: {**old, "data": data})

    def _update_revision(self, namespace: str, name: str, fn: Callable[[Obj], Obj]) -> Obj:
        for _ in range(MAX_CAS_ATTEMPTS):
            row = self._row(REV, namespace, name)
            new = fn(row.data)
            if new == row.data:
                return row.data
            try:
                out = self._cas(row, new)
            except _Lost:
                continue
            self._changed(namespace, row.ms_name)
            return out
        raise Conflict(f"controllerrevision {namespace}/{name}: too many concurrent writers")

    def delete_revision(self, namespace: str, name: str) -> None:
        row = self._row(REV, namespace, name)
        SimObject.objects.filter(pk=row.pk).delete()
        self._changed(namespace, row.ms_name)

    # -- Workload objects (InferenceService, Deployment, ReplicaSet, ConfigMap) ------------------------
    # The API the simulated KServe, Deployment and ReplicaSet controllers use
    # (``controller.simcluster.workloads.WorkloadStore``); the tick runs them (``tick.py``).

    def list_objects(self, kind: str, namespace: str | None = None, *, owner: str | None = None) -> list[Obj]:
        rows = SimObject.objects.filter(kind=kind)
        if owner is not None:
            rows = rows.filter(namespace=namespace or "default", controller=owner)
        elif namespace is not None:
            rows = rows.filter(namespace=namespace)
        return _decoded.rows(rows, ["namespace", "name"])

    @_hands_out_a_copy
    def get_object(self, kind: str, namespace: str, name: str) -> Obj:
        return self._row(kind, namespace, name).data

    def create_object(self, obj: Obj) -> Obj:
        kind = obj.get("kind")
        if kind not in objects.STORED_KINDS:
            raise Invalid(f"kind: {kind!r} is not stored here (one of {', '.join(objects.STORED_KINDS)})")
        uid = str(uuid.uuid4())
        obj = objects.named(obj, uid)
        objects.object_key(obj)
        new = objects.new_object(obj, uid=uid, created=rfc3339(self._now()))
        generation = int(new["metadata"].get("generation") or 0)
        self._insert(kind, new, "", generation=generation, controller=objects.controller_name(new) or "")
        return new

    @_hands_out_a_copy
    def patch_object(
        self, kind: str, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None
    ) -> Obj:
        return self._update_object(
            kind, namespace, name, lambda old: objects.patched_object(old, patch), resource_version=resource_version
        )

    @_hands_out_a_copy
    def replace_object_status(
        self, kind: str, namespace: str, name: str, status: Obj, *, resource_version: str | None = None
    ) -> Obj:
        return self._update_object(
            kind, namespace, name, lambda old: objects.with_status(old, status), resource_version=resource_version
        )

    def _update_object(
        self, kind: str, namespace: str, name: str, fn: Callable[[Obj], Obj], *, resource_version: str | None
    ) -> Obj:
        for _ in range(MAX_CAS_ATTEMPTS):
            row = self._row(kind, namespace, name)
            if resource_version is not None and str(resource_version) != str(row.resource_version):
                raise Conflict(f"{kind.lower()} {namespace}/{name}: resourceVersion {resource_version} is stale")
            old = row.data
            new = fn(old)
            if new is old or new == old:
                return old
            try:
                return self._cas(
                    row,
                    new,
                    generation=int(new["metadata"].get("generation") or 0),
                    controller=objects.controller_name(new) or "",
                )
            except _Lost:
                if resource_version is not None:
                    raise Conflict(
                        f"{kind.lower()} {namespace}/{name}: resourceVersion {resource_version} is stale"
                    ) from None
        raise Conflict(f"{kind.lower()} {namespace}/{name}: too many concurrent writers")

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete, and garbage-collect what it controls (its ReplicaSets, their pods, ...)."""
        row = self._row(kind, namespace, name)
        uid = row.uid
        SimObject.objects.filter(pk=row.pk).delete()
        if kind == objects.INFERENCESERVICE:
            SimTraffic.objects.filter(kind=SimTraffic.KIND_INFERENCESERVICE, namespace=namespace, name=name).delete()
        children = SimObject.objects.filter(namespace=namespace, controller=name).values_list("kind", "name", "data")
        for child_kind, child_name, data in list(children):
            if (objects.controller_ref(data) or {}).get("uid") != uid:
                continue
            try:
                if child_kind == POD:
                    self.delete_pod(namespace, child_name, uid=data["metadata"].get("uid"))
                elif child_kind in WORKLOADS:
                    self.delete_object(child_kind, namespace, child_name)
            except (NotFound, Conflict):
                pass

    # -- Objects a ModelServing owns (its headless Service, its PodGroups) --------------------------

    def list_owned(self, kind: str, namespace: str, ms_name: str) -> list[Obj]:
        return [
            o for o in self.list_objects(kind, namespace, owner=ms_name) if objects.owned_by_modelserving(o, ms_name)
        ]

    def create_owned(self, obj: Obj) -> Obj:
        return self.create_object(obj)

    def patch_owned(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        return self.patch_object(kind, namespace, name, patch)

    def delete_owned(self, kind: str, namespace: str, name: str) -> None:
        self.delete_object(kind, namespace, name)

    def list_controlled_pods(self, namespace: str, controller: str) -> list[Obj]:
        return _decoded.rows(SimObject.objects.filter(kind=POD, namespace=namespace, controller=controller), ["name"])

    # -- Events ---------------------------------------------------------------------------------------

    def report_interrupted(self, namespace: str, ms_name: str, pod: str, count: int, reason: str) -> None:
        """Nothing: this cluster's traffic counts the requests it cuts off itself, when the pod
        stops serving (``on_interrupted``), so the router's figure would count them twice."""

    def route_canary_weight(self, namespace: str, name: str, status: Obj) -> None:
        """Nothing: the embedded traffic reads the canary weight from the status on every tick."""

    def record_event(self, namespace: str, ms_name: str, *, reason: str, message: str, type: str = "Normal") -> None:
        # Events do not wake the controller (it wrote them); they go to the structured log, and
        # to the cluster's event list in Redis (``list_events``; the Events page).
        if self.traffic is not None:
            self.traffic.add_event(
                {
                    "t": self._now(),
                    "wall": time.time(),
                    "namespace": namespace,
                    "kind": naming.KIND,
                    "name": ms_name,
                    "type": type,
                    "reason": reason,
                    "message": message[:1024],
                }
            )
        log.info(
            "event %s %s/%s: %s",
            type,
            namespace,
            ms_name,
            message,
            extra={"event_reason": reason, "namespace": namespace, "modelserving": ms_name},
        )

    # -- The list rows (the SimulatorPort's read side) ------------------------------------------------

    def list_summaries(self, namespace: str | None = None, within: set[str] | None = None) -> list[Obj]:
        """The list rows (``controller.core.listing.ms_summary``) kept in the ``summary`` column at
        write time, by namespace and name: listing 1,000 ModelServings reads 1,000 small JSON values,
        never their pods or full status. ``within``: only these namespaces (None: every one)."""
        rows = SimObject.objects.filter(kind=MS)
        if namespace:
            rows = rows.filter(namespace=namespace)
        if within is not None:
            rows = rows.filter(namespace__in=sorted(within))
        # The JSON as text, decoded with orjson (as ``_DecodedCache.rows`` reads pods): the
        # JSONField's own decoding (json.loads per row, through Django's converters) was 2/3 of
        # ``GET /api/workloads/`` at 10,000 ModelServings (``python -m bench list --count 10000``).
        # Each call decodes its own dicts, so a caller may change what it gets.
        texts = rows.order_by("namespace", "name").values_list(Cast("summary", TextField()), flat=True)
        return [orjson.loads(text) for text in texts]

    def modelserving_namespaces(self) -> set[str]:
        """The namespaces that hold a ModelServing."""
        return set(SimObject.objects.filter(kind=MS).values_list("namespace", flat=True))

    def pods_per_node(self) -> dict[str, int]:
        """How many pods each node holds (bound pods, terminating ones included)."""
        from django.db.models import Count

        rows = SimObject.objects.filter(kind=POD).exclude(node="").values("node").annotate(n=Count("id"))
        return {r["node"]: int(r["n"]) for r in rows}

    def traffic_of(self, namespace: str, name: str) -> Obj | None:
        """The simulated request load of one ModelServing and its totals (None: no traffic
        configured): ``{rps, durationSeconds: [low, high], sent, completed, interrupted, rejected,
        inFlight}``. ``interrupted`` counts requests cut off because their pod stopped serving;
        ``inFlight`` is 0 without the Redis traffic."""
        row = SimTraffic.objects.filter(namespace=namespace, name=name).first()
        if row is None:
            return None
        in_flight: dict[str, int] = {}
        if self.traffic is not None:
            pods = [p["metadata"]["name"] for p in self.list_pods(namespace, name)]
            in_flight = self.traffic.in_flight_counts(namespace, pods)
        return {
            "rps": row.rps,
            "durationSeconds": [row.duration_low, row.duration_high],
            "sent": row.sent,
            "completed": row.completed,
            "interrupted": row.interrupted,
            "rejected": row.rejected,
            "inFlight": sum(in_flight.values()),
        }

    # -- Nodes (physics side) ---------------------------------------------------------------------------

    def list_nodes(self, *, include_failed: bool = False) -> list[SimNode]:
        rows = SimNode.objects.all()
        if not include_failed:
            rows = rows.filter(failed=False)
        return list(rows.order_by("id"))

    def add_node(self, gpus: int, *, name: str | None = None) -> SimNode:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
            raise Invalid(f"gpus: must be a non-negative integer, got {gpus!r}")
        with transaction.atomic():
            index = SimNode.objects.count()
            node_name = name or f"node-{index}"
            try:
                with transaction.atomic():
                    node = SimNode.objects.create(name=node_name, gpus=gpus, ip=physics.node_ip(index))
            except IntegrityError:
                raise Conflict(f"node {node_name} already exists") from None
        # New capacity: Pending pods are retried on the next tick; every ModelServing may want to act.
        for ns, ms_name in SimObject.objects.filter(kind=MS).values_list("namespace", "name"):
            self._changed(ns, ms_name)
        return node

    def fail_node(self, name: str) -> list[str]:
        """The node is lost: it leaves the cluster, its pods fail and are removed. Returns pod names."""
        updated = SimNode.objects.filter(name=name, failed=False).update(failed=True)
        if updated != 1:
            if SimNode.objects.filter(name=name).exists():
                raise Conflict(f"node {name} has already failed")
            raise NotFound(f"node {name} not found")
        victims = list(
            SimObject.objects.filter(kind=POD, node=name)
            .order_by("namespace", "name")
            .values_list("namespace", "name", "ms_name")
        )
        for ns, pod_name, _ in victims:
            try:
                _, lost = self.update_pod(ns, pod_name, lambda old: physics.node_lost(old, name).pod)
                self.update_pod(ns, pod_name, lambda old: REMOVE)
            except NotFound:
                continue
            self._interrupt_pod_after_commit(ns, pod_name, "node failed", lost)
        return [n for _, n, _ in victims]

    def retag(self, image: str, digest: str | None = None) -> str:
        """The registry moves the tag ``image`` to other bytes (``digest``, or a new stand-in):
        pods pulling it from now on run that digest. Stored in ``SimClock.config`` (it survives
        restarts; every worker's tick reads it within seconds). Returns the new digest."""
        with transaction.atomic():
            wall = time.time()
            SimClock.objects.get_or_create(pk=1, defaults={"wall_base": wall, "sim_base": wall})
            row = SimClock.objects.select_for_update().get(pk=1)
            row.config, new_digest = retag(row.config, image, digest)
            row.save(update_fields=["config"])
        if self._config_fixed:
            self._config.retag(image, new_digest)
        else:
            self._config = None  # re-read at once in this process
        return new_digest

    def gpus_used(self) -> dict[str, int]:
        from django.db.models import Sum

        rows = SimObject.objects.filter(kind=POD).exclude(node="").values("node").annotate(total=Sum("gpus"))
        return {r["node"]: int(r["total"] or 0) for r in rows}


def traffic_owner(pod: Obj) -> tuple[str, str | None]:
    """Whose traffic a pod serves: ``("ModelServing", name)`` by the name label, or
    ``("InferenceService", name)`` by KServe's label; ``(..., None)`` for neither."""
    name = owner_name(pod)
    if name:
        return SimTraffic.KIND_MODELSERVING, name
    isvc = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_ISVC)
    return (SimTraffic.KIND_INFERENCESERVICE, isvc) if isvc else (SimTraffic.KIND_MODELSERVING, None)


def is_bound(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


__all__ = ["DatabaseCluster", "REMOVE", "ms_summary", "is_bound", "naming"]
