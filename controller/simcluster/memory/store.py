"""An in-memory cluster store holding Kubernetes-shaped objects: the ``sim`` adapter's API server.

It implements ``ClusterPort`` with the semantics the controller meets on a real API server, so bugs
that only show against Kubernetes show here too:

- every write bumps a global ``resourceVersion``; a write carrying a stale one raises ``Conflict``;
- a write that changes nothing is a no-op (no new resourceVersion, no change event), like the API
  server: a controller that rewrites an identical status does not wake itself up forever;
- ``metadata.generation`` of a ModelServing is bumped only when its ``spec`` changes;
- deleting a bound pod only starts graceful termination (``deletionTimestamp``); the object stays,
  still holding its name and its node's GPUs, until the kubelet finishes and calls ``remove_pod``.
  Creating a pod with the name of a terminating one raises ``Conflict``;
- change listeners are called synchronously after every real change, so the runner can enqueue a
  reconcile at once (event driven, no polling) and the physics can react (schedule, restart, ...).

Objects are copy-on-write: a write builds a new dict for the changed path and never mutates a stored
object, so reads can hand out the stored objects without copying (``copy_reads=True`` hands out deep
copies instead; the tests run scenarios both ways and compare traces, which proves the controller
never mutates what it read). Times (``creationTimestamp``, ``deletionTimestamp``) are RFC 3339
strings of the clock's seconds, as on a real cluster; virtual second 0 is 1970-01-01T00:00:00Z.
"""

from __future__ import annotations

import hashlib
import itertools
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from controller.core import naming
from controller.core.mergepatch import copy_json
from controller.core.ports import OWNED_KINDS, Conflict, NotFound, Obj, SharedObjects

# What a write does to an object lives in ``objects`` (shared with the live app's store).
from .. import objects, podlog
from ..objects import owner_name, rfc3339


class Change(NamedTuple):
    """One real change of one object, as a watch would deliver it. A tuple: every write of the
    simulated cluster makes one (~40,000 in a 1,000-group preview), and a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``."""

    # "ModelServing" | "Pod" | "ControllerRevision" | "Node" | "Event", and the workload kinds
    # ("InferenceService" | "Deployment" | "ReplicaSet" | "ConfigMap": ``ms_name`` None)
    kind: str
    type: str  # "ADDED" | "MODIFIED" | "DELETED"
    namespace: str
    name: str
    ms_name: str | None  # the owning ModelServing (pods, revisions, events); the name itself for a ModelServing
    obj: Obj | None  # the object after the change (the last state for DELETED)
    old: Obj | None  # the object before the change (None for ADDED)
    by: str | None = None  # who wrote: the store's current ``actor`` (e.g. "controller", "kubelet")


# resourceVersions come from one counter for the whole process, so two stores never hand out the
# same (uid, resourceVersion) pair: UIDs repeat across runs of the same seed (they must, traces are
# byte-identical), and the core caches parsed pods by (uid, resourceVersion) process-wide. Real API
# servers never repeat that pair either. resourceVersions are opaque and never enter a trace.
_RESOURCE_VERSIONS = itertools.count(1)


class InMemoryStore:
    """``ClusterPort`` over dicts in memory, plus the physics side's writes (nodes, binding, kubelet
    writes, final removal)."""

    def __init__(self, clock, *, seed: int = 0, copy_reads: bool = False) -> None:
        self.clock = clock
        self.seed = seed
        self.copy_reads = copy_reads
        self._rv = _RESOURCE_VERSIONS
        self._uids = itertools.count(1)
        self._ms: dict[tuple[str, str], Obj] = {}
        # Pods and revisions are indexed by owning ModelServing so list_pods is O(pods of that object).
        self._pods: dict[tuple[str, str], Obj] = {}
        self._pods_by_ms: dict[tuple[str, str | None], dict[str, Obj]] = {}
        # Each listed bucket's names, sorted, and its pods in that order (what list_pods hands out
        # a copy of), kept in order from the first list on: a write of a pod puts the new object
        # in its place (found by bisection of the names), a pod created or removed is inserted or
        # deleted there. So a list is a copy of pointers, neither a lookup per pod (a 1,000-group
        # preview lists 3,000-6,000 pods twice a pass) nor a sort of every name after each pass
        # that created or removed pods (30,000 names at 10,000 groups).
        self._pod_names: dict[tuple[str, str | None], list[str]] = {}
        self._pod_lists: dict[tuple[str, str | None], list[Obj]] = {}
        self._revisions: dict[tuple[str, str], Obj] = {}
        self._revs_by_ms: dict[tuple[str, str | None], dict[str, Obj]] = {}
        self._nodes: dict[str, Obj] = {}
        # Workload objects (InferenceService, Deployment, ReplicaSet, ConfigMap) by kind, and what each
        # controller owns (kind, namespace, controller name) -> {name: obj}; pods by their controller.
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {k: {} for k in objects.STORED_KINDS}
        self._owned: dict[tuple[str, str, str | None], dict[str, Obj]] = {}
        self._pods_by_controller: dict[tuple[str, str | None], dict[str, Obj]] = {}
        self.events: list[Obj] = []
        self._restored_uids: set[str] = set()  # UIDs of objects copied in (``restore``): never handed out
        # How many times objects were copied in (``restore``, which announces them to no
        # listener): a listener keeping a set from the changes lists again when it moved.
        self.restores = 0
        self._uid_series = ""  # "copy/" once objects were copied in
        self._listeners: list[Callable[[Change], None]] = []
        # What ``_notify`` walks: a tuple made again at every add and remove, so a listener that
        # adds or removes one meanwhile does not change the walk under way (and no copy per change).
        self._listening: tuple[Callable[[Change], None], ...] = ()
        # Who is writing (set by the runner around controller passes, by the physics around theirs).
        self.actor: str | None = None

    # -- plumbing -------------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[Change], None]) -> None:
        self._listeners.append(listener)
        self._listening = tuple(self._listeners)

    def remove_listener(self, listener: Callable[[Change], None]) -> None:
        self._listeners.remove(listener)
        self._listening = tuple(self._listeners)

    def _notify(self, change: Change) -> None:
        for listener in self._listening:
            listener(change)

    def _next_rv(self) -> str:
        return str(next(self._rv))

    def new_uid(self) -> str:
        # Deterministic UIDs (creation order + seed) so traces are byte-identical across runs. A
        # store given copies of objects (``restore``) draws from another series than the store
        # they come from (of the same seed, a preview's bring-up), and skips any UID they have.
        while True:
            digest = bytearray(hashlib.sha1(f"{self.seed}/{self._uid_series}{next(self._uids)}".encode()).digest()[:16])
            # What str(uuid.UUID(bytes=digest, version=4)) writes (its version and variant bits),
            # several times faster: a preview creates thousands of pods.
            digest[6] = (digest[6] & 0x0F) | 0x40
            digest[8] = (digest[8] & 0x3F) | 0x80
            h = digest.hex()
            uid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
            if uid not in self._restored_uids:
                return uid

    def restore(
        self, *, modelservings: Iterable[Obj] = (), revisions: Iterable[Obj] = (), pods: Iterable[Obj] = ()
    ) -> None:
        """Put objects copied from another cluster as they are there: uid, creation time, spec,
        status and annotations kept (a pod's kubelet state included), each with a resourceVersion
        of this store (versions are this process's: the parse cache is keyed by uid and version).
        Nothing is announced to the listeners: whoever restores tells the physics
        (``SimCluster.restore``), and the controller lists what it finds. The objects are kept as
        given, like a created pod (copied under ``copy_reads``)."""
        self._uid_series = "copy/"
        self.restores += 1
        for put, objs in (
            (self._put_modelserving, modelservings),
            (self._put_revision, revisions),
            (self._put_pod, pods),
        ):
            for obj in objs:
                new = copy_json(obj) if self.copy_reads else obj
                new = {**new, "metadata": {**new["metadata"], "resourceVersion": self._next_rv()}}
                self._restored_uids.add(new["metadata"].get("uid") or "")
                put(new)

    def _put_modelserving(self, ms: Obj) -> None:
        self._ms[objects.object_key(ms)] = ms

    def _out(self, obj: Obj) -> Obj:
        return copy_json(obj) if self.copy_reads else obj

    def _now_str(self) -> str:
        return rfc3339(self.clock.now())

    # -- ModelServings ----------------------------------------------------------------------------

    def list_modelservings(self, namespace: str | None = None) -> list[Obj]:
        keys = sorted(k for k in self._ms if namespace is None or k[0] == namespace)
        return [self._out(self._ms[k]) for k in keys]

    def get_modelserving(self, namespace: str, name: str) -> Obj:
        try:
            return self._out(self._ms[(namespace, name)])
        except KeyError:
            raise NotFound(f"modelserving {namespace}/{name} not found") from None

    def read_modelserving(self, namespace: str, name: str) -> Obj:
        return self.get_modelserving(namespace, name)  # shared already (copied under copy_reads)

    def generation_of(self, namespace: str, name: str) -> int:
        return int(self._get_ms(namespace, name)["metadata"].get("generation") or 0)

    def create_modelserving(self, obj: Obj) -> Obj:
        ns, name = objects.object_key(obj)
        if (ns, name) in self._ms:
            raise Conflict(f"modelserving {ns}/{name} already exists")
        new = objects.new_modelserving(
            obj, uid=self.new_uid(), resource_version=self._next_rv(), created=self._now_str()
        )
        self._ms[(ns, name)] = new
        self._notify(Change("ModelServing", "ADDED", ns, name, name, new, None, self.actor))
        return self._out(new)

    def patch_modelserving(self, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None) -> Obj:
        old = self._get_ms(namespace, name)
        if resource_version is not None and resource_version != old["metadata"]["resourceVersion"]:
            raise Conflict(f"modelserving {namespace}/{name}: resourceVersion {resource_version} is stale")
        new = objects.patched_modelserving(old, patch)
        if new is old:
            return self._out(old)
        new["metadata"] = {**new["metadata"], "resourceVersion": self._next_rv()}
        self._ms[(namespace, name)] = new
        self._notify(Change("ModelServing", "MODIFIED", namespace, name, name, new, old, self.actor))
        return self._out(new)

    def replace_modelserving_status(self, namespace: str, name: str, status: Obj, *, resource_version: str) -> Obj:
        old = self._get_ms(namespace, name)
        if resource_version != old["metadata"]["resourceVersion"]:
            raise Conflict(f"modelserving {namespace}/{name}: resourceVersion {resource_version} is stale")
        # The store keeps the status as given, not a deep copy (1,000 groups' entries on every
        # pass of a large preview): the writer hands it over and never changes it afterwards, as
        # the controller's pass does (it builds a new status every pass), like readers never
        # change what they read. Under ``copy_reads`` it is copied, and the tests
        # that compare traces of both modes would show a writer that changed it afterwards.
        new = objects.with_status(old, status, copy=self.copy_reads)
        if new is old:
            return self._out(old)
        new["metadata"] = {**old["metadata"], "resourceVersion": self._next_rv()}
        self._ms[(namespace, name)] = new
        self._notify(Change("ModelServing", "MODIFIED", namespace, name, name, new, old, self.actor))
        return self._out(new)

    def delete_modelserving(self, namespace: str, name: str) -> None:
        old = self._get_ms(namespace, name)
        del self._ms[(namespace, name)]
        # Owner-reference garbage collection: the pods and revisions go with their owner.
        for pod in list(self._pods_by_ms.get((namespace, name), {}).values()):
            self.delete_pod(namespace, pod["metadata"]["name"])
        for rev in list(self._revs_by_ms.get((namespace, name), {}).values()):
            self.delete_revision(namespace, rev["metadata"]["name"])
        uid = old["metadata"].get("uid")
        for kind in OWNED_KINDS:
            for owned in list(self._owned.get((kind, namespace, name), {}).values()):
                if objects.owned_by_modelserving(owned, name, uid):
                    self.delete_object(kind, namespace, owned["metadata"]["name"])
        self._notify(Change("ModelServing", "DELETED", namespace, name, name, old, old, self.actor))

    def _get_ms(self, namespace: str, name: str) -> Obj:
        try:
            return self._ms[(namespace, name)]
        except KeyError:
            raise NotFound(f"modelserving {namespace}/{name} not found") from None

    # -- Pods -------------------------------------------------------------------------------------

    def list_pods(self, namespace: str, ms_name: str) -> list[Obj]:
        key = (namespace, ms_name)
        listed = self._pod_lists.get(key)
        if listed is None:  # sorted once, then kept in order (``_put_pod``, ``_unlist``)
            pods = self._pods_by_ms.get(key, {})
            names = self._pod_names[key] = sorted(pods)
            listed = self._pod_lists[key] = list(map(pods.__getitem__, names))
        if self.copy_reads:
            return [self._out(p) for p in listed]
        # Every write stores a new pod dict (copy on write), so unchanged pods are shared.
        return SharedObjects(listed)

    def all_pods(self) -> list[Obj]:
        """Every pod in the cluster (physics side), in (namespace, name) order."""
        return [self._pods[k] for k in sorted(self._pods)]

    def get_pod(self, namespace: str, name: str) -> Obj:
        try:
            return self._out(self._pods[(namespace, name)])
        except KeyError:
            raise NotFound(f"pod {namespace}/{name} not found") from None

    def pod_events(self, namespace: str, name: str) -> list[Obj]:
        """The pod's events as the kubelet and scheduler report them (``podlog.pod_events``); NotFound."""
        return podlog.pod_events(self.get_pod(namespace, name), self.clock.now())

    def pod_log(self, namespace: str, name: str, *, tail: int = 200) -> list[Obj]:
        """The last ``tail`` lines of the pod's engine log (``podlog.pod_log``); NotFound. The
        in-memory router keeps no access log, so no request lines."""
        return podlog.pod_log(self.get_pod(namespace, name), self.clock.now(), tail=tail)

    def peek_pod(self, namespace: str, name: str) -> Obj | None:
        """The stored pod without copying, or None (physics side; never mutate it)."""
        return self._pods.get((namespace, name))

    def create_pod(self, pod: Obj) -> Obj:
        # A named pod takes its UID after the name check (a refused create uses none); a pod with
        # ``metadata.generateName`` (a ReplicaSet's) is named from its UID.
        uid = None if (pod.get("metadata") or {}).get("name") else self.new_uid()
        if uid is not None:
            pod = objects.named(pod, uid)
        ns, name = objects.object_key(pod)
        if (ns, name) in self._pods:
            raise Conflict(f"pod {ns}/{name} already exists")
        uid = uid or self.new_uid()
        # Kept as handed over, like a status (``replace_modelserving_status``); copied under
        # ``copy_reads``, where the tests comparing traces of both modes would show a writer that
        # changed a pod after creating it.
        new = objects.new_pod(
            pod, uid=uid, resource_version=self._next_rv(), created=self._now_str(), copy=self.copy_reads
        )
        owner = self._put_pod(new)
        self._notify(Change("Pod", "ADDED", ns, name, owner, new, None, self.actor))
        return self._out(new)

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        old = self._get_pod(namespace, name)
        new = objects.terminating_pod(old, uid=uid, stamp=self._now_str, what=f"pod {namespace}/{name}")
        if new is old:
            return  # already terminating: deleting again changes nothing
        if new is None:
            self._remove(old)  # never bound: removed at once
            return
        new["metadata"] = {**new["metadata"], "resourceVersion": self._next_rv()}
        owner = self._put_pod(new)
        self._notify(Change("Pod", "MODIFIED", namespace, name, owner, new, old, self.actor))

    def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        old = self._get_pod(namespace, name)
        new = objects.patched_pod(old, patch, f"pod {namespace}/{name}")
        if new is old:
            return self._out(old)
        new["metadata"] = {**new["metadata"], "resourceVersion": self._next_rv()}
        owner = self._put_pod(new)
        self._notify(Change("Pod", "MODIFIED", namespace, name, owner, new, old, self.actor))
        return self._out(new)

    def set_pod_condition(self, namespace: str, name: str, condition: Obj) -> Obj:
        old = self._get_pod(namespace, name)
        status = objects.with_condition(old.get("status") or {}, condition, self._now_str())
        return self.write_pod_status(namespace, name, status)

    # Physics-side pod writes ------------------------------------------------------------------

    def write_pod_status(self, namespace: str, name: str, status: Obj, *, uid: str | None = None) -> Obj:
        """Replace a pod's status (kubelet / status subresource). No-op if unchanged."""
        old = self._get_pod(namespace, name)
        if uid is not None and old["metadata"].get("uid") != uid:
            raise Conflict(f"pod {namespace}/{name}: uid precondition failed")
        new = objects.with_status(old, status, copy=False)
        if new is old:
            return self._out(old)
        new["metadata"] = {**old["metadata"], "resourceVersion": self._next_rv()}
        owner = self._put_pod(new)
        self._notify(Change("Pod", "MODIFIED", namespace, name, owner, new, old, self.actor))
        return self._out(new)

    def replace_pod(self, namespace: str, name: str, pod: Obj, *, uid: str) -> Obj:
        """The kubelet's write: the pod as ``physics`` computed it from the stored one (its status and
        its kubelet-state annotation). No-op if unchanged. ``pod`` is handed over (never mutated)."""
        old = self._get_pod(namespace, name)
        if old["metadata"].get("uid") != uid:
            raise Conflict(f"pod {namespace}/{name}: uid precondition failed")
        if pod is old or (pod.get("status") == old.get("status") and pod["metadata"] == old["metadata"]):
            return self._out(old)
        new = {**pod, "metadata": {**pod["metadata"], "resourceVersion": self._next_rv()}}
        owner = self._put_pod(new)
        self._notify(Change("Pod", "MODIFIED", namespace, name, owner, new, old, self.actor))
        return self._out(new)

    def bind_pod(self, namespace: str, name: str, node_name: str, *, uid: str, status: Obj) -> Obj:
        """The scheduler's binding: set ``spec.nodeName`` and the status in one write."""
        old = self._get_pod(namespace, name)
        if old["metadata"].get("uid") != uid:
            raise Conflict(f"pod {namespace}/{name}: uid precondition failed")
        if (old.get("spec") or {}).get("nodeName"):
            raise Conflict(f"pod {namespace}/{name} is already bound")
        new = {
            **old,
            "spec": {**(old.get("spec") or {}), "nodeName": node_name},
            "status": status,
            "metadata": {**old["metadata"], "resourceVersion": self._next_rv()},
        }
        owner = self._put_pod(new)
        self._notify(Change("Pod", "MODIFIED", namespace, name, owner, new, old, self.actor))
        return self._out(new)

    def remove_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """Final removal: the kubelet finished terminating it (or its node is gone)."""
        old = self._pods.get((namespace, name))
        if old is None or (uid is not None and old["metadata"].get("uid") != uid):
            return
        self._remove(old)

    def _remove(self, old: Obj) -> None:
        ns, name = old["metadata"]["namespace"], old["metadata"]["name"]
        owner = owner_name(old)
        del self._pods[(ns, name)]
        bucket = self._pods_by_ms.get((ns, owner))
        if bucket is not None and bucket.pop(name, None) is not None:
            self._unlist((ns, owner), name)
        self._pods_by_controller.get((ns, objects.controller_name(old)), {}).pop(name, None)
        self._next_rv()
        self._notify(Change("Pod", "DELETED", ns, name, owner, old, old, self.actor))

    def _put_pod(self, pod: Obj) -> str | None:
        """Store ``pod`` (a new object, or a new version of a stored one) in every index; returns
        its owning ModelServing (``owner_name``), which the change announcing it names."""
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self._pods[(ns, name)] = pod
        owner = owner_name(pod)
        key = (ns, owner)
        bucket = self._pods_by_ms.setdefault(key, {})
        listed = self._pod_lists.get(key)
        if listed is not None:
            names = self._pod_names[key]
            place = bisect_left(names, name)
            if name in bucket:
                listed[place] = pod  # a new version in the old one's place
            else:
                names.insert(place, name)
                listed.insert(place, pod)
        bucket[name] = pod
        controller = objects.controller_name(pod)
        if controller is not None:
            self._pods_by_controller.setdefault((ns, controller), {})[name] = pod
        return owner

    def _unlist(self, key: tuple[str, str | None], name: str) -> None:
        """The pod ``name`` left the bucket ``key``: out of its listed order, if it is listed."""
        listed = self._pod_lists.get(key)
        if listed is not None:
            names = self._pod_names[key]
            place = bisect_left(names, name)
            if place < len(names) and names[place] == name:
                del names[place]
                del listed[place]

    def _get_pod(self, namespace: str, name: str) -> Obj:
        try:
            return self._pods[(namespace, name)]
        except KeyError:
            raise NotFound(f"pod {namespace}/{name} not found") from None

    # -- ControllerRevisions ----------------------------------------------------------------------

    def list_revisions(self, namespace: str, ms_name: str) -> list[Obj]:
        revs = self._revs_by_ms.get((namespace, ms_name), {})
        ordered = sorted(revs.values(), key=lambda r: (r.get("revision") or 0, r["metadata"]["name"]))
        return [self._out(r) for r in ordered]

    def create_revision(self, revision: Obj) -> Obj:
        ns, name = objects.object_key(revision)
        if (ns, name) in self._revisions:
            raise Conflict(f"controllerrevision {ns}/{name} already exists")
        new = objects.new_revision(
            revision, uid=self.new_uid(), resource_version=self._next_rv(), created=self._now_str()
        )
        self._put_revision(new)
        self._notify(Change("ControllerRevision", "ADDED", ns, name, owner_name(new), new, None, self.actor))
        return self._out(new)

    def set_revision_number(self, namespace: str, name: str, number: int) -> Obj:
        old = self._get_revision(namespace, name)
        new = objects.with_revision_number(old, number)
        if new is old:
            return self._out(old)
        return self._replace_revision(old, new)

    def annotate_revision(self, namespace: str, name: str, annotations: dict[str, str]) -> Obj:
        old = self._get_revision(namespace, name)
        new = objects.with_annotations(old, annotations)
        if new is old:
            return self._out(old)
        return self._replace_revision(old, new)

    def replace_revision_data(self, namespace: str, name: str, data: Any) -> Obj:
        """Physics/fault side: overwrite ``data`` (``corruptRevision`` writes "<corrupted>")."""
        old = self._get_revision(namespace, name)
        return self._replace_revision(old, {**old, "data": data})

    def delete_revision(self, namespace: str, name: str) -> None:
        old = self._get_revision(namespace, name)
        del self._revisions[(namespace, name)]
        self._revs_by_ms.get((namespace, owner_name(old)), {}).pop(name, None)
        self._next_rv()
        self._notify(Change("ControllerRevision", "DELETED", namespace, name, owner_name(old), old, old, self.actor))

    def _replace_revision(self, old: Obj, new: Obj) -> Obj:
        new["metadata"] = {**new["metadata"], "resourceVersion": self._next_rv()}
        self._put_revision(new)
        meta = new["metadata"]
        self._notify(
            Change(
                "ControllerRevision",
                "MODIFIED",
                meta["namespace"],
                meta["name"],
                owner_name(new),
                new,
                old,
                self.actor,
            )
        )
        return self._out(new)

    def _put_revision(self, rev: Obj) -> None:
        ns, name = rev["metadata"]["namespace"], rev["metadata"]["name"]
        self._revisions[(ns, name)] = rev
        self._revs_by_ms.setdefault((ns, owner_name(rev)), {})[name] = rev

    def _get_revision(self, namespace: str, name: str) -> Obj:
        try:
            return self._revisions[(namespace, name)]
        except KeyError:
            raise NotFound(f"controllerrevision {namespace}/{name} not found") from None

    # -- Workload objects (InferenceService, Deployment, ReplicaSet, ConfigMap) ---------------------

    def list_objects(self, kind: str, namespace: str | None = None, *, owner: str | None = None) -> list[Obj]:
        """Objects of ``kind`` in name order; ``owner``: only those whose controller is that object
        (by name, in ``namespace``)."""
        if owner is not None:
            found = self._owned.get((kind, namespace or "default", owner), {})
            return [self._out(found[n]) for n in sorted(found)]
        store = self._objects[kind]
        keys = sorted(k for k in store if namespace is None or k[0] == namespace)
        return [self._out(store[k]) for k in keys]

    def get_object(self, kind: str, namespace: str, name: str) -> Obj:
        return self._out(self._get_object(kind, namespace, name))

    def create_object(self, obj: Obj) -> Obj:
        kind = obj.get("kind")
        if kind not in self._objects:
            raise objects.Invalid(f"kind: {kind!r} is not stored here (one of {', '.join(objects.STORED_KINDS)})")
        uid = self.new_uid()
        obj = objects.named(obj, uid)
        ns, name = objects.object_key(obj)
        if (ns, name) in self._objects[kind]:
            raise Conflict(f"{kind.lower()} {ns}/{name} already exists")
        new = objects.new_object(obj, uid=uid, resource_version=self._next_rv(), created=self._now_str())
        self._put_object(new)
        self._notify(Change(kind, "ADDED", ns, name, None, new, None, self.actor))
        return self._out(new)

    def patch_object(
        self, kind: str, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None
    ) -> Obj:
        old = self._get_object(kind, namespace, name)
        if resource_version is not None and resource_version != old["metadata"]["resourceVersion"]:
            raise Conflict(f"{kind.lower()} {namespace}/{name}: resourceVersion {resource_version} is stale")
        new = objects.patched_object(old, patch)
        if new is old:
            return self._out(old)
        return self._replace_object(old, new)

    def replace_object_status(
        self, kind: str, namespace: str, name: str, status: Obj, *, resource_version: str | None = None
    ) -> Obj:
        old = self._get_object(kind, namespace, name)
        if resource_version is not None and resource_version != old["metadata"]["resourceVersion"]:
            raise Conflict(f"{kind.lower()} {namespace}/{name}: resourceVersion {resource_version} is stale")
        new = objects.with_status(old, status)
        if new is old:
            return self._out(old)
        return self._replace_object(old, new)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        """Delete, and garbage-collect what it owns (its ReplicaSets, their pods, ...)."""
        old = self._get_object(kind, namespace, name)
        del self._objects[kind][(namespace, name)]
        self._owned.get((kind, namespace, objects.controller_name(old)), {}).pop(name, None)
        self._next_rv()
        self._notify(Change(kind, "DELETED", namespace, name, None, old, old, self.actor))
        uid = old["metadata"].get("uid")
        for child_kind in objects.WORKLOAD_KINDS:
            for child in list(self._owned.get((child_kind, namespace, name), {}).values()):
                if (objects.controller_ref(child) or {}).get("uid") == uid:
                    self.delete_object(child_kind, namespace, child["metadata"]["name"])
        for pod in list(self._pods_by_controller.get((namespace, name), {}).values()):
            if (objects.controller_ref(pod) or {}).get("uid") == uid and not pod["metadata"].get("deletionTimestamp"):
                self.delete_pod(namespace, pod["metadata"]["name"])

    def list_controlled_pods(self, namespace: str, controller: str) -> list[Obj]:
        """The pods whose controller ownerReference names ``controller`` (a ReplicaSet), in name order."""
        pods = self._pods_by_controller.get((namespace, controller), {})
        return [self._out(pods[n]) for n in sorted(pods)]

    def _get_object(self, kind: str, namespace: str, name: str) -> Obj:
        try:
            return self._objects[kind][(namespace, name)]
        except KeyError:
            raise NotFound(f"{kind.lower()} {namespace}/{name} not found") from None

    def _put_object(self, obj: Obj) -> None:
        meta = obj["metadata"]
        key = (obj["kind"], meta["namespace"], objects.controller_name(obj))
        self._objects[obj["kind"]][(meta["namespace"], meta["name"])] = obj
        self._owned.setdefault(key, {})[meta["name"]] = obj

    def _replace_object(self, old: Obj, new: Obj) -> Obj:
        new = {**new, "metadata": {**new["metadata"], "resourceVersion": self._next_rv()}}
        if objects.controller_name(old) != objects.controller_name(new):
            key = (old["kind"], old["metadata"]["namespace"], objects.controller_name(old))
            self._owned.get(key, {}).pop(old["metadata"]["name"], None)
        self._put_object(new)
        meta = new["metadata"]
        self._notify(Change(new["kind"], "MODIFIED", meta["namespace"], meta["name"], None, new, old, self.actor))
        return self._out(new)

    # -- Objects a ModelServing owns (its headless Service, its PodGroups) ------------------------

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

    # -- Events -----------------------------------------------------------------------------------

    def report_interrupted(self, namespace: str, ms_name: str, pod: str, count: int, reason: str) -> None:
        """Nothing: the simulator's router counts the requests it cuts off itself (the trace's
        ``interrupted``)."""

    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        """None: the store keeps no table of targets; the simulator's router does (``SimRouter``)."""
        return None

    def route_canary_weight(self, namespace: str, name: str, status: Obj) -> None:
        """Nothing: the simulator's router reads the canary weight from the status itself."""

    def record_event(self, namespace: str, ms_name: str, *, reason: str, message: str, type: str = "Normal") -> None:
        # Events do not wake the controller (it wrote them); they are kept for the trace and tests.
        self.events.append(
            {
                "t": self.clock.now(),
                "namespace": namespace,
                "object": ms_name,
                "type": type,
                "reason": reason,
                "message": message,
            }
        )

    # -- Nodes (physics side) ---------------------------------------------------------------------

    def add_node(self, name: str, gpus: int, *, ip: str) -> Obj:
        if name in self._nodes:
            raise Conflict(f"node {name} already exists")
        gpu = str(int(gpus))
        node = {
            "metadata": {
                "name": name,
                "uid": self.new_uid(),
                "resourceVersion": self._next_rv(),
                "creationTimestamp": self._now_str(),
            },
            "status": {
                "capacity": {naming.GPU_RESOURCE: gpu},
                "allocatable": {naming.GPU_RESOURCE: gpu},
                "addresses": [{"type": "InternalIP", "address": ip}],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        self._nodes[name] = node
        self._notify(Change("Node", "ADDED", "", name, None, node, None, self.actor))
        return node

    def remove_node(self, name: str) -> None:
        old = self._nodes.pop(name, None)
        if old is None:
            raise NotFound(f"node {name} not found")
        self._next_rv()
        self._notify(Change("Node", "DELETED", "", name, None, old, old, self.actor))

    def list_nodes(self) -> list[Obj]:
        return list(self._nodes.values())  # insertion order: node-0, node-1, ..., then added ones

    def get_node(self, name: str) -> Obj | None:
        return self._nodes.get(name)
