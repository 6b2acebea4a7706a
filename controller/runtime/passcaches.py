"""The pass caches of this process: one ``core.passcache.PassCache`` per ModelServing.

The pure core remembers nothing between passes; what it can reuse from one pass to the next (the
parse of an unchanged pod, an unchanged group's figures and view entries) lives in a cache the
caller owns. In the live app the caller is this process: the reconcile worker's passes over a
ModelServing, and the web process's reads of its state (``state.current_state``), each take the
ModelServing's cache here. It is derived data only: a worker that restarts starts with none and
plans exactly the same, only its first pass is slower.

Bounded: the caches of the ModelServings used least recently are dropped past ``LIMIT``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from controller.core.passcache import PassCache

LIMIT = 256  # ModelServings whose caches are kept (each holds at most one list of its pods)

_lock = threading.Lock()
_caches: OrderedDict[tuple[str, str], PassCache] = OrderedDict()


def cache_for(namespace: str, name: str) -> PassCache:
    """The cache of ModelServing ``namespace/name`` in this process (made empty on first use)."""
    key = (namespace, name)
    with _lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = PassCache()
            while len(_caches) > LIMIT:
                _caches.popitem(last=False)
        else:
            _caches.move_to_end(key)
        return cache


def forget(namespace: str, name: str) -> None:
    """Drop the cache of a ModelServing (deleted: its pods will never be met again)."""
    with _lock:
        _caches.pop((namespace, name), None)
