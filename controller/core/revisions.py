"""Revisions: what is versioned, how it is hashed and stored, history, GC, rollback and diff.

A revision holds the **versioned** fields of a ModelServing only, canonicalised::

    {"schedulerName": ..., "plugins": [...],
     "roles": [{"name", "entryTemplate", "workerReplicas", "workerTemplate"}, ...]}   # by name

Canonical form: defaults applied, empty values (None, "", {}, []) dropped, roles sorted by name,
the env the controller injects (GROUP_SIZE, WORKER_INDEX, ENTRY_ADDRESS) removed, pod template
metadata limited to labels and annotations. The stored ``data`` and the hash come from the same
bytes (``canonical_bytes``), so a reader can always re-check one against the other.

Runtime fields never enter a revision: replica counts, strategy and budgets, partition, recovery
policy, pause, drain. Scaling a role 4 -> 6 is capacity; 1 -> 3 workers per instance is structure
(``workerReplicas`` is versioned).

Numbering follows StatefulSets: a new revision gets max+1; re-applying an older revision reuses its
object and raises its number to max+1 (A=1, B=2, C=3, roll back to A: A becomes 4).
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from . import digests, naming
from .passcache import REVISIONS_LIMIT, PassCache, by_identity
from .ports import Obj
from .spec import RUNTIME_ROLE_FIELDS, VERSIONED_SPEC_FIELDS, versioned_fields

DEFAULT_SCHEDULER = "default-scheduler"
HASH_LENGTH = 10


class RevisionError(ValueError):
    """A revision cannot be used (unknown number, unreadable data, ...)."""


# ---------------------------------------------------------------------------------------------
# Canonical projection


def _prune(value: Any) -> Any:
    """Drop empty values recursively; keep False and 0, which mean something."""
    if isinstance(value, dict):
        out = {}
        for key in sorted(value):
            pruned = _prune(value[key])
            if pruned is None or pruned == "" or pruned == {} or pruned == []:
                continue
            out[key] = pruned
        return out
    if isinstance(value, list):
        return [p for p in (_prune(v) for v in value) if not (p is None or p == {} or p == "")]
    return value


def _canonical_container(container: dict[str, Any]) -> dict[str, Any]:
    container = dict(container)
    env = container.get("env")
    if isinstance(env, list):
        container["env"] = [e for e in env if not (isinstance(e, dict) and e.get("name") in naming.INJECTED_ENV)]
    return container


def canonical_template(template: dict[str, Any] | None) -> dict[str, Any] | None:
    if not template:
        return None
    out: dict[str, Any] = {}
    meta = template.get("metadata") or {}
    if isinstance(meta, dict):
        kept = {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}
        if kept:
            out["metadata"] = kept
    spec = dict(template.get("spec") or {})
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [_canonical_container(c) if isinstance(c, dict) else c for c in spec[key]]
    if spec.get("schedulerName") == DEFAULT_SCHEDULER:
        spec.pop("schedulerName")
    out["spec"] = spec
    return _prune(out)


def _canonical_plugin(plugin: Any) -> Any:
    if not isinstance(plugin, dict):
        return plugin
    plugin = dict(plugin)
    plugin.setdefault("type", "BuiltIn")
    scope = plugin.get("scope")
    if isinstance(scope, dict) and isinstance(scope.get("roles"), list):
        plugin["scope"] = {**scope, "roles": sorted(scope["roles"])}
    return plugin


def project(spec: dict[str, Any]) -> dict[str, Any]:
    """The canonical revision data of a ModelServing spec (versioned fields only)."""
    roles = []
    for role in (spec.get("template") or {}).get("roles") or []:
        roles.append(
            {
                "name": role.get("name"),
                "entryTemplate": canonical_template(role.get("entryTemplate")),
                "workerReplicas": int(role.get("workerReplicas") or 0),
                "workerTemplate": canonical_template(role.get("workerTemplate"))
                if int(role.get("workerReplicas") or 0) > 0 or role.get("workerTemplate")
                else None,
            }
        )
    roles.sort(key=lambda r: r["name"] or "")
    scheduler = spec.get("schedulerName")
    data = {
        "schedulerName": None if scheduler in (None, "", DEFAULT_SCHEDULER) else scheduler,
        # Plugin order is kept: hooks run in sequence and may mutate the same pod.
        "plugins": [_canonical_plugin(p) for p in spec.get("plugins") or []],
        "roles": [_prune(r) for r in roles],
    }
    return _prune(data) | {"roles": data["roles"]}


def canonicalize_data(data: dict[str, Any]) -> dict[str, Any]:
    """Re-canonicalise stored data with today's rules (for semantic comparison).

    Stored data may come from an older controller whose serialisation differed (for example it
    kept an empty ``env: []``); projecting it again makes such differences vanish.
    """
    spec = {
        "schedulerName": data.get("schedulerName"),
        "plugins": data.get("plugins"),
        "template": {"roles": data.get("roles") or []},
    }
    return project(spec)


def canonicalized(data: dict[str, Any], cache: PassCache | None = None) -> dict[str, Any]:
    """``canonicalize_data`` through the caller's cache: the stored revisions' data are the same
    objects from one pass to the next on the in-memory and embedded clusters (``byidentity``), so
    each is re-canonicalised once, not on every pass. The result is shared: read only."""
    return by_identity(cache, canonicalize_data, data)


def canonical_bytes(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def revision_hash(data: dict[str, Any], collision_count: int = 0) -> str:
    """Hash of the canonical bytes, salted with the collision count when one is set."""
    digest = hashlib.sha256(canonical_bytes(data))
    if collision_count:
        digest.update(f"/collision={collision_count}".encode())
    return digest.hexdigest()[:HASH_LENGTH]


def role_hash(role_data: dict[str, Any]) -> str:
    """Hash of one role's versioned fields: what RoleRollingUpdate compares per instance."""
    return hashlib.sha256(canonical_bytes(role_data)).hexdigest()[:HASH_LENGTH]


def role_hashes(data: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: role_hash(r) for r in data.get("roles") or []}


def role_data(data: dict[str, Any], role: str) -> dict[str, Any] | None:
    for r in data.get("roles") or []:
        if r.get("name") == role:
            return r
    return None


# ---------------------------------------------------------------------------------------------
# History


@dataclass(slots=True)
class Revision:
    name: str
    hash: str
    number: int
    data: dict[str, Any] | None  # None when unreadable
    error: str | None = None
    created: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    _role_hashes: dict[str, str] | None = None

    @property
    def readable(self) -> bool:
        return self.data is not None

    def role_hashes(self) -> dict[str, str]:
        if self._role_hashes is None:
            self._role_hashes = role_hashes(self.data) if self.data is not None else {}
        return self._role_hashes

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "hash": self.hash,
            "name": self.name,
            "readable": self.readable,
            "error": self.error,
            "created": self.created,
            "changeCause": self.annotations.get(naming.ANNOTATION_CHANGE_CAUSE),
            **self.images_json(),
        }

    def images_json(self) -> dict[str, Any]:
        """The revision's images by tag with the digest each first ran from (``digests``), and
        ``digestMoved`` when a tag of it now resolves to other bytes."""
        record, moved = digests.summary(self.annotations)
        images = []
        for image in revision_images(self.data):
            entry = record.get(image) or {}
            images.append({"image": image, "digest": entry.get("digest"), "moved": entry.get("moved")})
        return {"images": images, "digestMoved": moved}


def revision_images(data: dict[str, Any] | None) -> list[str]:
    """Every container image the revision's roles name (entry and worker templates), in order of
    first mention."""
    out: list[str] = []
    for role in (data or {}).get("roles") or []:
        for key in ("entryTemplate", "workerTemplate"):
            spec = ((role or {}).get(key) or {}).get("spec") or {}
            for c in spec.get("containers") or []:
                image = c.get("image") if isinstance(c, dict) else None
                if isinstance(image, str) and image and image not in out:
                    out.append(image)
    return out


def parse_revision(obj: Obj) -> Revision:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = meta.get("name") or ""
    rev_hash = labels.get(naming.LABEL_REVISION) or name.rsplit("-", 1)[-1]
    number = obj.get("revision")
    number = int(number) if isinstance(number, int) or (isinstance(number, str) and number.isdigit()) else 0
    raw = obj.get("data")
    data: dict[str, Any] | None = None
    error = None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
            error = "data is not JSON"
    if (
        isinstance(raw, dict)
        and isinstance(raw.get("roles"), list)
        and all(isinstance(r, dict) and r.get("name") for r in raw["roles"])
    ):
        data = raw
    elif error is None:
        error = "data is not a revision (expected an object with a 'roles' list)"
    return Revision(
        name=name,
        hash=rev_hash,
        number=number,
        data=data,
        error=error,
        created=meta.get("creationTimestamp"),
        annotations=dict(meta.get("annotations") or {}),
    )


class History:
    """The revisions of one ModelServing, by hash and by number."""

    def __init__(self, revisions: list[Revision]):
        # Kubernetes orders history by revision number, then name.
        self.revisions = sorted(revisions, key=lambda r: (r.number, r.name))
        self.by_hash = {r.hash: r for r in self.revisions}

    @classmethod
    def from_objects(cls, objs: list[Obj], cache: PassCache | None = None) -> History:
        """The history of these revision objects. ``cache``: a revision object met again (the
        in-memory and embedded stores hand out the same object until it changes) is the same
        parse, its role hashes worked out once (``Revision.role_hashes``)."""
        if cache is None:
            return cls([parse_revision(o) for o in objs])
        return cls([cache.by_identity(parse_revision, o, REVISIONS_LIMIT) for o in objs])

    def get(self, rev_hash: str | None) -> Revision | None:
        return self.by_hash.get(rev_hash) if rev_hash else None

    def by_number(self, number: int) -> Revision | None:
        for r in self.revisions:
            if r.number == number:
                return r
        return None

    @property
    def max_number(self) -> int:
        return max((r.number for r in self.revisions), default=0)

    def data_of(self, rev_hash: str) -> dict[str, Any] | None:
        r = self.by_hash.get(rev_hash)
        return r.data if r else None


@dataclass(frozen=True, slots=True)
class RevisionAction:
    verb: str  # "create" | "renumber" | "delete"
    name: str
    hash: str
    number: int = 0
    data: dict[str, Any] | None = None


@dataclass(slots=True)
class UpdateRevision:
    hash: str
    data: dict[str, Any]
    actions: list[RevisionAction]
    collision_count: int
    number: int


def record_update_revision(
    ms_name: str, spec: dict[str, Any], history: History, collision_count: int = 0, cache: PassCache | None = None
) -> UpdateRevision:
    """Find or create the revision for the current spec (StatefulSet-style).

    1. Hash the canonical data. If a revision with that hash holds the same data, reuse it.
    2. If that hash holds *different* data (a collision), bump ``collisionCount`` and re-hash;
       existing data is never overwritten.
    3. If no hash matches, compare semantically: a stored revision whose data re-canonicalises to
       the same thing (older serialisation) is reused, so a controller upgrade starts no rollout.
    4. Otherwise create a new revision numbered max+1.
    A reused revision that is not the newest is renumbered max+1 (re-applying an old revision).
    ``cache``: the spec is the same object from one pass to the next on the in-memory clusters; its
    projection is then taken once.
    """
    data = by_identity(cache, project, spec)
    count = collision_count
    while True:
        h = revision_hash(data, count) if count or cache is None else cache.by_identity(revision_hash, data)
        existing = history.get(h)
        if existing is None or existing.data is None or canonicalized(existing.data, cache) == data:
            # Unreadable data under the very hash of the spec's data: the spec is what that
            # revision held (same hash), so it is reused, not salted into a "new" revision that
            # would replace every group. It is reported unreadable; its data is never rewritten.
            break
        # A real collision: different data under our hash. Salt and retry.
        count += 1
    if existing is None:
        for candidate in reversed(history.revisions):
            if candidate.data is not None and canonicalized(candidate.data, cache) == data:
                existing = candidate
                h = candidate.hash
                break
    actions: list[RevisionAction] = []
    name = naming.revision_object_name(ms_name, h)
    if existing is None:
        number = history.max_number + 1
        actions.append(RevisionAction("create", name, h, number, data))
    else:
        number = existing.number
        name = existing.name
        newest = history.revisions[-1] if history.revisions else None
        if newest is not None and newest.hash != existing.hash:
            number = history.max_number + 1
            actions.append(RevisionAction("renumber", name, h, number))
    return UpdateRevision(h, data, actions, count, number)


def gc_actions(history: History, *, referenced: set[str], limit: int) -> list[RevisionAction]:
    """Delete unreferenced revisions beyond ``limit``, oldest first.

    Example: limit 2, history 1..5, referenced {5, 2} -> unreferenced 1, 3, 4; keep the newest 2
    of them (3, 4) and delete 1.
    """
    unreferenced = [r for r in history.revisions if r.hash not in referenced]
    excess = len(unreferenced) - limit
    return [RevisionAction("delete", r.name, r.hash, r.number) for r in unreferenced[: max(excess, 0)]]


def revision_object(ms: Obj, action: RevisionAction) -> Obj:
    meta = ms.get("metadata") or {}
    annotations = {naming.ANNOTATION_REVISION_DATA_VERSION: naming.REVISION_DATA_VERSION}
    cause = (meta.get("annotations") or {}).get(naming.ANNOTATION_CHANGE_CAUSE)
    if cause:
        annotations[naming.ANNOTATION_CHANGE_CAUSE] = cause
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": action.name,
            "namespace": meta.get("namespace") or "default",
            "labels": {naming.LABEL_NAME: meta.get("name"), naming.LABEL_REVISION: action.hash},
            "annotations": annotations,
            "ownerReferences": [owner_reference(ms)],
        },
        "data": copy.deepcopy(action.data),
        "revision": action.number,
    }


def owner_reference(ms: Obj) -> dict[str, Any]:
    meta = ms.get("metadata") or {}
    return {
        "apiVersion": ms.get("apiVersion") or naming.API_VERSION,
        "kind": naming.KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid") or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


# ---------------------------------------------------------------------------------------------
# Rollback and diff


def apply_revision(spec: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """A new spec with the revision's versioned fields and the current runtime fields.

    - ModelServing replicas, strategy, budgets, partition, recovery, pause, drain stay as they are.
    - A role in both keeps its replicas and budgets, and its position.
    - A role only in the revision comes back with replicas 1, appended in name order.
    - A role absent from the revision is removed.

    Example: spec has prefill(replicas 6, image v2), revision has prefill(image v1) -> prefill
    with replicas 6 and image v1.
    """
    new = copy.deepcopy(spec)
    if data.get("schedulerName"):
        new["schedulerName"] = data["schedulerName"]
    else:
        new.pop("schedulerName", None)
    if data.get("plugins"):
        new["plugins"] = copy.deepcopy(data["plugins"])
    else:
        new.pop("plugins", None)
    template = new.setdefault("template", {})
    current = {r.get("name"): r for r in template.get("roles") or []}
    wanted = {r["name"]: r for r in data.get("roles") or []}
    roles = []
    for role in template.get("roles") or []:
        target = wanted.get(role.get("name"))
        if target is None:
            continue
        roles.append(_role_from_revision(role, target))
    for name in sorted(set(wanted) - set(current)):
        roles.append(_role_from_revision({"name": name, "replicas": 1}, wanted[name]))
    template["roles"] = roles
    return new


def rollback_fields(manifest: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The versioned spec fields (``VERSIONED_SPEC_FIELDS``) a rollback to revision ``data`` writes,
    for the ``spec`` of a merge patch: each is set, None (removed) when the revision has none.

    Example: the spec runs image v2 with schedulerName volcano, the revision image v1 and no
    scheduler -> ``{"template": <roles with image v1>, "schedulerName": None, "plugins": None}``.
    """
    restored = apply_revision(versioned_fields(manifest), data)
    return {key: restored.get(key) for key in VERSIONED_SPEC_FIELDS}


def _role_from_revision(current: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    role = {k: copy.deepcopy(v) for k, v in current.items() if k in ("name",) + RUNTIME_ROLE_FIELDS}
    role["entryTemplate"] = copy.deepcopy(target.get("entryTemplate") or {})
    role["workerReplicas"] = int(target.get("workerReplicas") or 0)
    if target.get("workerTemplate"):
        role["workerTemplate"] = copy.deepcopy(target["workerTemplate"])
    return role


def diff(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """A structured field-level diff: [{"path", "change": added|removed|changed, "from", "to"}].

    Lists of named things (roles, containers, env, volumes, ports) are matched by ``name`` so
    reordering is not reported as a change of every element.
    """
    out: list[dict[str, Any]] = []
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if path else key
            if key not in old:
                out.append({"path": sub, "change": "added", "from": None, "to": new[key]})
            elif key not in new:
                out.append({"path": sub, "change": "removed", "from": old[key], "to": None})
            else:
                out.extend(diff(old[key], new[key], sub))
        return out
    if isinstance(old, list) and isinstance(new, list):
        if _named(old) and _named(new):
            old_by_name = {e["name"]: e for e in old}
            new_by_name = {e["name"]: e for e in new}
            for name in list(old_by_name) + [n for n in new_by_name if n not in old_by_name]:
                sub = f"{path}[{name}]"
                if name not in new_by_name:
                    out.append({"path": sub, "change": "removed", "from": old_by_name[name], "to": None})
                elif name not in old_by_name:
                    out.append({"path": sub, "change": "added", "from": None, "to": new_by_name[name]})
                else:
                    out.extend(diff(old_by_name[name], new_by_name[name], sub))
            return out
        if len(old) == len(new):
            for i, (a, b) in enumerate(zip(old, new)):
                out.extend(diff(a, b, f"{path}[{i}]"))
            return out
    if old != new:
        out.append({"path": path, "change": "changed", "from": old, "to": new})
    return out


def _named(items: list[Any]) -> bool:
    names = [e.get("name") for e in items if isinstance(e, dict)]
    return len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)
