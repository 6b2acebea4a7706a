"""Interned keys: the memos of the planner and of the state view compare a pass's key by identity."""

from __future__ import annotations

from typing import Any


class Interned:
    """Keys interned so that equal ones are one object: a memo made under a key is then checked by
    identity. Bounded: emptied when ``limit`` keys are held (interning is derived data; emptying
    only costs recomputation)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def __call__(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        if len(self.keys) >= self.limit:
            self.keys.clear()
        return self.keys.setdefault(key, key)
