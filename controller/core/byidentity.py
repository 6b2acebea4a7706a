"""Derived data memoised by the identity of the object it is derived from.

The in-memory and the embedded clusters hand out a stored object as that very object, which nobody
changes afterwards (``ports.SharedObjects``' rule: every write builds new dicts), so the same object
met again means the same data: a pass that reads the spec, the status or a revision's data its
predecessor read takes what was derived from it then. A port that decodes new objects on every read
(the Kubernetes adapter) just never hits. Like the parse cache, this is derived data, not state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ByIdentity[T]:
    """``fn(obj)``, kept for the last ``limit`` objects by ``id``, each with the object itself (a
    live object's id is never another's, and the memo holds the object alive). The result is shared:
    callers never change it. Only the last few are kept: an object replaced by a newer version is
    never met again, and each entry keeps its object alive (a 1,000-group status is ~1,000 dicts)."""

    def __init__(self, fn: Callable[[Any], T], limit: int = 8) -> None:
        self.fn = fn
        self.limit = limit
        self._memo: dict[int, tuple[Any, T]] = {}

    def __call__(self, obj: Any) -> T:
        hit = self._memo.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = self.fn(obj)
        if len(self._memo) >= self.limit:
            del self._memo[next(iter(self._memo))]  # the oldest
        self._memo[id(obj)] = (obj, value)
        return value
