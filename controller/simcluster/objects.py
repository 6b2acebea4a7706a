"""The API server's object semantics as pure functions, shared by both cluster stores.

``controller.simcluster.memory.store.InMemoryStore`` (dicts in memory, change listeners) and
``controller.simcluster.database.store.DatabaseCluster`` (database rows, compare-and-set) implement the same
Kubernetes API-server semantics; what a write does to an object is decided here, once. Each function
takes the stored object (and the request) and returns the new object, or raises ``Invalid`` /
``Conflict``; none of them stores anything, allocates a ``resourceVersion`` or notifies anyone: that
stays with each store, with its own concurrency.

A function that finds nothing to change returns the stored object itself (``new is old``), so the
store can skip the write like the API server does (no new resourceVersion, no change event).

Objects are copy-on-write: every function builds new dicts for the paths it changes and never
mutates its input, so a stored object may be handed out without copying.

Pure Python (no Django).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime

from controller.core import naming
from controller.core.mergepatch import copy_json, merge_patch
from controller.core.ports import OWNED_KINDS, ClusterError, Conflict, Obj


class Invalid(ClusterError):
    """The write was refused (HTTP 422), e.g. a pod spec change other than a container image."""


# Memoised: the pods of one batch are stamped with the same few instants (a 1,000-group preview
# formats ~50,000 times, mostly the same values), and strftime is the costly part.
@functools.lru_cache(maxsize=4096)
def rfc3339(seconds: float) -> str:
    dt = datetime.fromtimestamp(seconds, tz=UTC)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    """The clock seconds of an RFC 3339 time written by ``rfc3339`` ("1970-01-01T00:02:00Z" -> 120.0)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def owner_name(obj: Obj) -> str | None:
    """The ModelServing a pod or ControllerRevision belongs to (its name label)."""
    return ((obj.get("metadata") or {}).get("labels") or {}).get(naming.LABEL_NAME)


# -- creation ---------------------------------------------------------------------------------------


def object_key(obj: Obj) -> tuple[str, str]:
    """``(namespace, name)`` of an object to create (namespace "default" when absent); ``Invalid`` without a name."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace", "default")
    name = meta.get("name")
    if not name:
        raise Invalid("metadata.name: required")
    return namespace, name


def _created_metadata(
    obj: Obj, uid: str, created: str, resource_version: str | None, generation: int | None = None
) -> Obj:
    # The server owns these fields; the order of the keys is the order the stores always wrote them in.
    meta = dict(obj.get("metadata") or {})
    meta.setdefault("namespace", "default")
    meta["uid"] = uid
    if generation is not None:
        meta["generation"] = generation
    if resource_version is not None:
        meta["resourceVersion"] = resource_version
    meta["creationTimestamp"] = created
    return meta


def new_modelserving(obj: Obj, *, uid: str, created: str, resource_version: str | None = None) -> Obj:
    """A ModelServing as created: generation 1, an empty status unless given. Deep-copies ``obj``.

    ``resource_version`` is left out when the store sets it on insert.
    """
    meta = _created_metadata(obj, uid, created, resource_version, generation=1)
    new = copy_json({**obj, "metadata": meta})
    new.setdefault("status", {})
    return new


def new_pod(pod: Obj, *, uid: str, created: str, resource_version: str | None = None, copy: bool = True) -> Obj:
    """A pod as created: not terminating, not bound, Pending. Deep-copies ``pod``.

    ``copy=False`` keeps what ``pod`` holds below its metadata and spec (labels, containers, ...)
    instead of a deep copy: the caller hands the pod over and never changes it afterwards, and the
    store never changes a stored object (every write builds new dicts along the path it changes).
    The controller's passes create 3,000 pods in a 1,000-group preview, each built fresh for the
    create (``core.podtemplate``)."""
    meta = _created_metadata(pod, uid, created, resource_version)
    meta.pop("deletionTimestamp", None)
    spec = dict(pod.get("spec") or {})
    spec.pop("nodeName", None)  # the scheduler binds; a controller does not pick nodes here
    new = {**pod, "metadata": meta, "spec": spec}
    if copy:
        new = copy_json(new)
    new["status"] = {"phase": "Pending", "conditions": []}
    return new


def new_revision(revision: Obj, *, uid: str, created: str, resource_version: str | None = None) -> Obj:
    """A ControllerRevision as created. Deep-copies ``revision``."""
    meta = _created_metadata(revision, uid, created, resource_version)
    return copy_json({**revision, "metadata": meta})


# -- ModelServings ----------------------------------------------------------------------------------

MODELSERVING_IMMUTABLE_METADATA = ("name", "namespace", "uid", "generation", "resourceVersion", "creationTimestamp")


def patched_modelserving(old: Obj, patch: Obj) -> Obj:
    """A merge patch of a ModelServing's metadata and spec; ``old`` itself when it changes nothing.

    Immutable metadata in the patch is dropped; ``metadata.generation`` is bumped only when the spec
    changes. The store sets the new ``resourceVersion``.
    """
    # Only metadata and spec go through the main resource; status has its own subresource.
    body = {k: v for k, v in patch.items() if k in ("metadata", "spec")}
    meta_patch = {k: v for k, v in (body.get("metadata") or {}).items() if k not in MODELSERVING_IMMUTABLE_METADATA}
    new = dict(old)
    if meta_patch:
        new["metadata"] = merge_patch(old["metadata"], meta_patch)
    if "spec" in body:
        new["spec"] = merge_patch(old.get("spec") or {}, body["spec"])
    if new == old:
        return old
    meta = dict(new["metadata"])
    generation = int(old["metadata"].get("generation") or 1)
    if new.get("spec") != old.get("spec"):
        generation += 1
    meta["generation"] = generation
    new["metadata"] = meta
    return new


def with_status(old: Obj, status: Obj, *, copy: bool = True) -> Obj:
    """A status (subresource) write: ``old`` itself when the status is unchanged.

    ``copy=False`` stores ``status`` as given (the caller hands it over and never mutates it).
    """
    if status == old.get("status"):
        return old
    return {**old, "status": copy_json(status) if copy else status}


# -- Pods -------------------------------------------------------------------------------------------

POD_IMMUTABLE_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
_MUTABLE_POD_SPEC = {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"}


def check_pod_spec_update(old: Obj, new: Obj, what: str) -> None:
    """Like the API server: on an existing pod only container images (and a few fields) may change."""
    for key in set(old) | set(new):
        if key == "containers" or key in _MUTABLE_POD_SPEC:
            continue
        if old.get(key) != new.get(key):
            raise Invalid(
                f"{what}: spec.{key}: forbidden: pod updates may not change fields other than container images"
            )
    old_c, new_c = old.get("containers") or [], new.get("containers") or []
    if len(old_c) != len(new_c):
        raise Invalid(f"{what}: spec.containers: forbidden: pod updates may not add or remove containers")
    for i, (a, b) in enumerate(zip(old_c, new_c, strict=True)):
        if {k: v for k, v in a.items() if k != "image"} != {k: v for k, v in b.items() if k != "image"}:
            raise Invalid(f"{what}: spec.containers[{i}]: forbidden: only the image of a container may change")


def patched_pod(old: Obj, patch: Obj, what: str) -> Obj:
    """A merge patch of a pod's metadata and spec; ``old`` itself when it changes nothing.

    Immutable metadata in the patch is dropped; a spec change other than container images (see
    ``check_pod_spec_update``) raises ``Invalid``. ``what`` names the pod in errors ("pod ns/name").
    """
    body = {k: v for k, v in patch.items() if k in ("metadata", "spec")}
    new = dict(old)
    if "metadata" in body:
        meta_patch = {k: v for k, v in (body["metadata"] or {}).items() if k not in POD_IMMUTABLE_METADATA}
        new["metadata"] = merge_patch(old["metadata"], meta_patch)
    if "spec" in body:
        new_spec = merge_patch(old.get("spec") or {}, body["spec"])
        check_pod_spec_update(old.get("spec") or {}, new_spec, what)
        new["spec"] = new_spec
    if new == old:
        return old
    return new


def terminating_pod(old: Obj, *, uid: str | None, stamp: Callable[[], str], what: str) -> Obj | None:
    """A pod delete: ``old`` itself if already terminating, ``None`` if it goes at once, else the pod
    with ``deletionTimestamp`` (graceful termination; the kubelet removes it later).

    ``uid`` is a precondition (``Conflict`` if it does not match); ``stamp()`` is the current time in
    RFC 3339, read only when a deletionTimestamp is set.
    """
    if uid is not None and old["metadata"].get("uid") != uid:
        raise Conflict(f"{what}: uid precondition failed ({uid} != {old['metadata'].get('uid')})")
    if old["metadata"].get("deletionTimestamp"):
        return old  # already terminating: deleting again changes nothing
    if not (old.get("spec") or {}).get("nodeName"):
        return None  # never bound: no kubelet has to stop anything, the API server removes it at once
    grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds")
    meta = {**old["metadata"], "deletionTimestamp": stamp()}
    if grace is not None:
        meta["deletionGracePeriodSeconds"] = grace
    return {**old, "metadata": meta}


def with_condition(status: Obj, condition: Obj, stamp: str) -> Obj:
    """``status`` with ``condition`` set (merged into the one of its type, or appended).

    ``lastTransitionTime`` becomes ``stamp`` when the condition is new or its status changes, unless
    the condition carries its own.
    """
    conditions = list(status.get("conditions") or [])
    ctype = condition.get("type")
    for i, existing in enumerate(conditions):
        if existing.get("type") == ctype:
            merged = {**existing, **condition}
            if existing.get("status") != merged.get("status") and "lastTransitionTime" not in condition:
                merged["lastTransitionTime"] = stamp
            conditions[i] = merged
            break
    else:
        conditions.append({"lastTransitionTime": stamp, **condition})
    return {**status, "conditions": conditions}


def with_revision_number(old: Obj, number: int) -> Obj:
    """A ControllerRevision renumbered; ``old`` itself when the number is already ``number``."""
    if old.get("revision") == number:
        return old
    return {**old, "revision": number}


# -- Workload objects (KServe on the simulated cluster) ---------------------------------------------
#
# InferenceServices, Deployments, ReplicaSets and ConfigMaps are stored like ModelServings: created
# with generation 1, merge-patched through metadata/spec (generation bumped on a spec change),
# status written through its own subresource. Who owns what is the controller ownerReference, as on
# Kubernetes; deleting an owner deletes what it owns (garbage collection, background propagation).

INFERENCESERVICE = "InferenceService"
DEPLOYMENT = "Deployment"
REPLICASET = "ReplicaSet"
CONFIGMAP = "ConfigMap"
WORKLOAD_KINDS = (INFERENCESERVICE, DEPLOYMENT, REPLICASET, CONFIGMAP)
# What the ModelServing controller owns besides pods and revisions (``ports.OWNED_KINDS``): kept like
# workload objects, and garbage-collected with their ModelServing.
SERVICE, PODGROUP = OWNED_KINDS


def with_annotations(obj: Obj, annotations: dict[str, str]) -> Obj:
    """``obj`` with these annotations set (the object itself when they already are)."""
    meta = obj.get("metadata") or {}
    have = meta.get("annotations") or {}
    if all(have.get(k) == v for k, v in annotations.items()):
        return obj
    return {**obj, "metadata": {**meta, "annotations": {**have, **annotations}}}


# KServe's ServingRuntimes (namespaced) and ClusterServingRuntimes: read by the simulated KServe
# controller beside the built-in set of a fresh installation (``kserve.runtimes.DEFAULT_RUNTIMES``).
SERVINGRUNTIME = "ServingRuntime"
CLUSTERSERVINGRUNTIME = "ClusterServingRuntime"
RUNTIME_KINDS = (SERVINGRUNTIME, CLUSTERSERVINGRUNTIME)

STORED_KINDS = WORKLOAD_KINDS + OWNED_KINDS + RUNTIME_KINDS


def owned_by_modelserving(obj: Obj, ms_name: str, ms_uid: str | None = None) -> bool:
    """Whether ``obj``'s controller is the ModelServing ``ms_name`` (and ``ms_uid`` when given)."""
    ref = controller_ref(obj) or {}
    return (
        ref.get("kind") == naming.KIND and ref.get("name") == ms_name and (ms_uid is None or ref.get("uid") == ms_uid)
    )


# kube's generateName alphabet (no vowels, no 0/1/3: no words, no look-alikes).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_LETTERS = "bcdfghjklmnpqrstvwxz"


def generated_name(prefix: str, uid: str) -> str:
    """The name the API server makes from ``metadata.generateName`` and the new object's UID:
    ``prefix`` + 5 characters. The first one is always a letter, so a generated pod name never
    ends in ``-<digits>`` (which ``routing.engine_entry`` reads as a worker's pod index).

    Example: ``generated_name("llm-predictor-5d8f9c7b4-", uid)`` -> ``"llm-predictor-5d8f9c7b4-x7k2p"``.
    """
    digest = hashlib.sha256(uid.encode()).digest()
    chars = [_NAME_LETTERS[digest[0] % len(_NAME_LETTERS)]]
    chars += [_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[1:5]]
    return prefix + "".join(chars)


def named(obj: Obj, uid: str) -> Obj:
    """``obj`` with its name filled in from ``generateName`` when it has none (a shallow copy);
    ``obj`` itself when it has a name."""
    meta = obj.get("metadata") or {}
    if meta.get("name") or not meta.get("generateName"):
        return obj
    return {**obj, "metadata": {**meta, "name": generated_name(meta["generateName"], uid)}}


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true`` (who manages the object), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def controller_name(obj: Obj) -> str | None:
    """The name of the object's controller (its controller ownerReference), or None."""
    ref = controller_ref(obj)
    return ref.get("name") if ref else None


def owner_reference(owner: Obj) -> Obj:
    """A controller ownerReference to ``owner`` (as a controller sets it on what it creates)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_object(obj: Obj, *, uid: str, created: str, resource_version: str | None = None) -> Obj:
    """A workload object as created: generation 1, an empty status unless given; ConfigMaps have
    neither. Deep-copies ``obj``."""
    if obj.get("kind") == CONFIGMAP:
        meta = _created_metadata(obj, uid, created, resource_version)
        return copy_json({**obj, "metadata": meta})
    return new_modelserving(obj, uid=uid, created=created, resource_version=resource_version)


def patched_object(old: Obj, patch: Obj) -> Obj:
    """A merge patch of a workload object's metadata and spec (``data`` too for a ConfigMap); ``old``
    itself when it changes nothing. Same rules as ``patched_modelserving``."""
    if old.get("kind") == CONFIGMAP:
        new = dict(old)
        if "data" in patch:
            new["data"] = merge_patch(old.get("data") or {}, patch["data"])
        meta_patch = {
            k: v for k, v in (patch.get("metadata") or {}).items() if k not in MODELSERVING_IMMUTABLE_METADATA
        }
        if meta_patch:
            new["metadata"] = merge_patch(old["metadata"], meta_patch)
        return old if new == old else new
    return patched_modelserving(old, patch)
