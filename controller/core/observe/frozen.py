"""Frozen values with ``__slots__``: the observed instances and groups (``model``).

Why not named tuples: CPython 3.12 does not specialise reading a named tuple's field (a property
calling an ``itemgetter``), and the planner reads these fields tens of thousands of times a pass.
Three field reads cost ~24 ns on a named tuple against ~13 ns on a ``__slots__`` class
(LOAD_ATTR_SLOT). Why not ``dataclass(frozen=True, slots=True)``: its ``__init__`` sets each field
through ``object.__setattr__``, several times the cost of building a tuple (15 fields: ~2.7 us
against ~0.5 us), and observation builds one instance per role instance of every changed group.

So a value is built as an instance of a plain ``__slots__`` class (fields stored at C speed, no
``__setattr__`` of ours in the way), then its class is switched to the frozen subclass, which adds
no field, only the refusal to assign (``obj.__class__ = Frozen subclass``: allowed because both
classes lay their instances out alike). Built this way through ``model._instance`` an instance of
15 fields costs about 1.4 times a named tuple made with ``tuple.__new__``: over the seed example's
150,000 instances a few tens of ms, against the planner's many reads made faster (``bench
planner``'s plan step; the measured figures are in bench/README.md).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, ClassVar, NoReturn, Self


class Frozen:
    """Base of a frozen value: assigning or deleting a field raises; two values are equal when
    their fields are (in ``FIELDS`` order, as a tuple's items); the hash is the fields' (so a value
    holding a dict is unhashable, as a named tuple holding one was). A subclass sets ``FIELDS``
    and, as a second base, the writable ``__slots__`` class it is built from."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()
    # The fields as a tuple, taken at C speed (an ``attrgetter`` of two or more names returns one).
    _fields_of: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields_of = attrgetter(*cls.FIELDS)

    def astuple(self) -> tuple[Any, ...]:
        """The field values, in ``FIELDS`` order."""
        return type(self)._fields_of(self)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot assign {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.astuple() == other.astuple()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.astuple())

    def __repr__(self) -> str:
        pairs = ", ".join(f"{name}={value!r}" for name, value in zip(self.FIELDS, self.astuple(), strict=True))
        return f"{type(self).__name__}({pairs})"

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:
        # copy, deepcopy and pickle rebuild it through the class's constructor (all fields,
        # positionally): their default way sets the slots one by one, which ``__setattr__`` refuses.
        return type(self), self.astuple()
