"""What one caller remembers from pass to pass: derived data only, never controller state.

The core is a set of functions of their arguments. Re-deriving everything on every pass is
correct but slow at scale (1,000 groups x 32 pods: observation alone ~180 ms cold, a few ms warm),
so a caller that runs many passes over one ModelServing (the simulation runner, the reconcile
worker, the benchmarks) owns a ``PassCache`` and hands it to ``observe``, ``plan`` and
``build_view``. ``cache=None`` is the reference behaviour: compute everything, remember nothing. A
cache changes no result, only how fast it comes (``tests/core/test_pass_cache.py`` checks that on
random sequences of passes).

Every table is keyed by what fully determines its value, so a key cannot miss a field:

- pod versions: a pod's (uid, resourceVersion) is one immutable version of it;
- observed objects: a ``GroupObs`` is frozen, so derived data about it is kept with the object
  itself and checked by identity; one memo per group ordinal (and one compat entry per pod uid),
  so a group or pod replaced by a newer one frees the old one at once;
- shapes: the pass inputs a memo reads besides a group are a tuple compared by value.

Each table is bounded as the module-level tables it replaces were: emptied when full (emptying only
costs recomputation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .byidentity import ByIdentity
from .interned import Interned

PODS_LIMIT = 200_000  # parsed pods (32,000 pods of one ModelServing, with room for old versions)
GROUPS_LIMIT = 50_000  # observed groups, and the derived data kept per group
LISTS_LIMIT = 1_000  # the previous pod list of each ModelServing observed with this cache
GATES_LIMIT = 50_000  # instance gates by the versions of the instance's pods
SHAPES_LIMIT = 1_000  # interned pass shapes (one per spec and revision history seen)
KEYS_LIMIT = 10_000  # interned status keys and group effects
INSTANCES_LIMIT = 200_000  # per-instance derived data (10,000 groups x 4 instances, with room)
REVISIONS_LIMIT = 100  # parsed revision objects (a ModelServing's history: revisionHistoryLimit 10 by default)


def bounded_put[K, V](table: dict[K, V], limit: int, key: K, value: V) -> V:
    """``table[key] = value``, the table emptied first when it holds ``limit`` entries."""
    if len(table) >= limit:
        table.clear()
    table[key] = value
    return value


class GroupMemo:
    """What the planner and the state view derived from one observed group under a pass's shape:
    each slot holds ``(key, value...)`` and is replaced whole (a web process may build views in
    several threads). ``group`` keeps the group alive while its memo is held."""

    __slots__ = (
        "availability",
        "group",
        "intact",
        "labels_differ",
        "path_tally",
        "running",
        "status_entry",
        "view_row",
    )

    def __init__(self, group: Any) -> None:
        self.group = group
        self.availability: tuple[Any, ...] | None = None
        self.intact: tuple[Any, bool] | None = None
        self.status_entry: tuple[Any, ...] | None = None
        self.view_row: tuple[Any, ...] | None = None
        self.running: Any = None  # what its pods run (``digests.running``), for the reconcile pass
        # Whether a pod's compatibility labels differ from the history's (``planner.labels``), and
        # the group's Ready instances per path role and template (``planner.paths.PathKeeper``).
        self.labels_differ: tuple[Any, ...] | None = None
        self.path_tally: tuple[Any, ...] | None = None


class PassCache:
    """The derived data of the passes over one ModelServing (or one run), owned by the caller."""

    def __init__(self) -> None:
        # observe: parse entries by pod uid (``observe.paths.CacheEntry``), groups by (ordinal,
        # uid of the group's first pod) with the pods they were built from, and the previous list.
        self.pods: dict[str, tuple[Any, ...]] = {}
        self.groups: dict[tuple[int, str], tuple[list[Any], Any]] = {}
        self.lists: dict[str, Any] = {}
        # gates: pod times by (uid, resourceVersion), instance gates by their full input key.
        self.pod_times: dict[tuple[str, str], Any] = {}
        self.gates: dict[tuple[Any, ...], Any] = {}
        # planner and view: per group ordinal, the memo of the group last met there (``memo_of``);
        # pass shapes and keys, interned.
        self.group_memos: dict[int, GroupMemo] = {}
        self.shapes = Interned(SHAPES_LIMIT)
        self.view_shapes = Interned(SHAPES_LIMIT)
        self.status_keys = Interned(KEYS_LIMIT)
        self.effects = Interned(KEYS_LIMIT)
        # view: per group ordinal, what the state view made of the group last met there, with each
        # instance's share (``view._GroupRecord``): a changed group rebuilds its changed instances.
        self.view_entries: dict[int, Any] = {}
        self.view_funnel: tuple[Any, ...] | None = None  # the last view's gate funnel, with its input
        # derived from objects the in-memory clusters hand out unchanged (``byidentity``).
        self._by_identity: dict[Callable[[Any], Any], ByIdentity[Any]] = {}
        # the revision compatibility labels of a parsed pod (``planner.labels``), by pod uid.
        self.compat: dict[str, tuple[Any, frozenset[str]]] = {}
        # the last pass's resolved strategy with what it was resolved from, and its availability
        # tables with the groups they were read from (``planner.context``).
        self.resolved: tuple[tuple[Any, ...], Any] | None = None
        self.availability: Any = None
        # what each instance's pods run (``reconcile.record_digests``), by (group, role, ordinal),
        # with the InstanceObs it was taken from.
        self.instance_running: dict[tuple[int, str, int], tuple[Any, frozenset[Any]]] = {}

    def memo_of(self, group: Any) -> GroupMemo:
        """The memo of an observed group: the one kept at its ordinal when it is this very group,
        else a new empty one that replaces it (the group there changed: what was derived from the
        old one is dropped with it, and the old group is freed)."""
        memo = self.group_memos.get(group.ordinal)
        if memo is None or memo.group is not group:
            memo = bounded_put(self.group_memos, GROUPS_LIMIT, group.ordinal, GroupMemo(group))
        return memo

    def by_identity[T](self, fn: Callable[[Any], T], obj: Any, limit: int = 8) -> T:
        """``fn(obj)``, kept for the last ``limit`` objects met (``ByIdentity``; ``limit`` is read
        when ``fn`` is first met)."""
        memo = self._by_identity.get(fn)
        if memo is None:
            memo = self._by_identity[fn] = ByIdentity(fn, limit)
        return memo(obj)


def by_identity[T](cache: PassCache | None, fn: Callable[[Any], T], obj: Any) -> T:
    """``fn(obj)`` through ``cache`` when there is one."""
    return fn(obj) if cache is None else cache.by_identity(fn, obj)
