"""The detail page's first state in a compact form: its long lists of objects as columns.

The state the detail page draws first (``build_view``: the REST GET and websocket payload) is
mostly lists of objects that repeat their keys: at 1,000 groups, 2,000 ``instances`` of 17 keys
each (with a ``gateTimes`` object of up to 7 more) and 1,000 ``groups``, 1.7 MB of JSON of which
the keys are about a third, and values such as an image digest repeat thousands of times. The
page's HTML carries it (``page_json``), so the browser downloads, tokenises and parses every byte
before the first render. Here each such list becomes a *table*: its keys once, then one array per
key. ``expand_state`` (and ``expandState`` in static/js/detail/compact.js, the page's half) turn it
back into the very same state: same keys in the same order, same values.

Format (version 1)::

    {"compactState": 1, "tabled": [key, ...], "state": {...}}

``state`` is the state with each top-level key named in ``tabled`` holding a table instead of its
list. A table of ``rows`` objects::

    {"rows": n, "keys": [key, ...], "shapes": [[key index, ...], ...], "shape": [shape index, ...],
     "columns": [column, ...]}

``shapes`` are the distinct key lists of the rows, in first-seen order, as indices into ``keys``;
``shape`` says which one each row has (absent when all rows have the first). Column ``i`` holds the
values of ``keys[i]`` of the rows that have that key, in row order, in one of four forms:

- an array: the values themselves;
- ``{"values": [...], "index": [...]}``: strings (or booleans), each written once, and per row the
  index of its value (the digest of 2,000 instances is then 3 strings and 2,000 small numbers);
- ``{"table": table}``: every value an object (an instance's ``gateTimes``): a table of them;
- ``{"lengths": [...], "table": table}``: every value a list of objects (a group's ``roles``):
  one table of all their items, and how many items each list has.

Worked example: ``[{"g": 0, "s": "Ready"}, {"g": 1, "s": "Ready", "x": True}]`` ->
``{"rows": 2, "keys": ["g", "s", "x"], "shapes": [[0, 1], [0, 1, 2]], "shape": [0, 1],
"columns": [[0, 1], ["Ready", "Ready"], [true]]}`` (two values are too few to share; a column of
2,000 "Ready"s becomes ``{"values": ["Ready"], "index": [0, 0, ...]}``).

Only lists of at least ``MIN_ROWS`` objects whose keys are strings become tables; anything else
stays as it was. Strings and booleans are never mixed in a shared column, so ``True`` and ``1``
(equal as dictionary keys in Python) cannot be confused.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

VERSION = 1
# Below this many objects a list is written as it is: its keys cost little, and the payload stays
# readable for the small ModelServings most pages show.
MIN_ROWS = 16
# A column of strings is written as shared values when they repeat at least this much on average
# (2,000 instances of 3 digests: yes; 2,000 distinct pod addresses: no).
SHARED_REPEATS = 4
_SHAREABLE = ({str, type(None)}, {bool, type(None)})


def compact_state(state: Any, *, min_rows: int = MIN_ROWS) -> Any:
    """The compact form of ``state`` (see the module docstring); a value that is not an object
    with string keys is returned as it is. ``min_rows``: the shortest list written as a table."""
    if type(state) is not dict or not all(type(k) is str for k in state):
        return state
    out: dict[str, Any] = {}
    tabled = []
    for key, value in state.items():
        table = _table(value) if type(value) is list and len(value) >= max(min_rows, 1) else None
        if table is None:
            out[key] = value
        else:
            out[key] = table
            tabled.append(key)
    return {"compactState": VERSION, "tabled": tabled, "state": out}


def expand_state(payload: Any) -> Any:
    """The state ``compact_state`` was given (a value that is not a compact state is returned as
    it is): the reference for ``expandState`` in static/js/detail/compact.js."""
    if type(payload) is not dict or payload.get("compactState") != VERSION:
        return payload
    state = dict(payload["state"])
    for key in payload["tabled"]:
        state[key] = _rows(state[key])
    return state


def _table(rows: list) -> dict[str, Any] | None:
    """``rows`` (objects with string keys) as a table; None when they are not all such objects.
    The walks over the rows are C-level (map, zip, dict.fromkeys): 9,000 objects at 1,000 groups."""
    if set(map(type, rows)) != {dict}:
        return None
    key_lists = list(map(tuple, rows))
    # Mostly one shape: comparing the key tuples (the same interned strings, compared by identity
    # first) costs less than hashing each of them.
    same = key_lists.count(key_lists[0]) == len(key_lists)
    shapes = [key_lists[0]] if same else list(dict.fromkeys(key_lists))
    keys = list(dict.fromkeys(chain.from_iterable(shapes)))
    if not all(type(k) is str for k in keys):
        return None
    table: dict[str, Any] = {
        "rows": len(rows),
        "keys": keys,
        "shapes": [[keys.index(k) for k in shape] for shape in shapes],
        "columns": [_column(values) for values in _columns(rows, keys, len(shapes))],
    }
    if len(shapes) > 1:
        numbered = {shape: i for i, shape in enumerate(shapes)}
        table["shape"] = list(map(numbered.__getitem__, key_lists))
    return table


def _columns(rows: list[dict], keys: list[str], shapes: int) -> list[list]:
    """Per key, the values of the rows that have it, in row order."""
    if shapes == 1:
        # One shape: every row's values are in key order, and zip transposes them.
        return list(map(list, zip(*map(dict.values, rows), strict=True)))
    return [[row[key] for row in rows if key in row] for key in keys]


def _column(values: list) -> Any:
    types = set(map(type, values))
    if types == {dict}:
        table = _table(values)
        if table is not None:
            return {"table": table}
    elif types == {list}:
        items = [item for value in values for item in value]
        table = _table(items) if items else None
        if table is not None:
            return {"lengths": list(map(len, values)), "table": table}
    elif any(types <= shareable for shareable in _SHAREABLE):
        shared = dict.fromkeys(values)
        if len(shared) * SHARED_REPEATS <= len(values):
            position = {value: i for i, value in enumerate(shared)}
            return {"values": list(shared), "index": list(map(position.__getitem__, values))}
    return values


def _rows(table: dict[str, Any]) -> list[dict]:
    keys = table["keys"]
    columns = [_values(column) for column in table["columns"]]
    shapes = [[(i, keys[i]) for i in shape] for shape in table["shapes"]]
    shape_of = table.get("shape") or [0] * table["rows"]
    taken = [0] * len(keys)
    rows = []
    for s in shape_of:
        row = {}
        for i, key in shapes[s]:
            row[key] = columns[i][taken[i]]
            taken[i] += 1
        rows.append(row)
    return rows


def _values(column: Any) -> list:
    if type(column) is list:
        return column
    if "index" in column:
        return [column["values"][i] for i in column["index"]]
    items = _rows(column["table"])
    if "lengths" not in column:
        return items
    out, start = [], 0
    for n in column["lengths"]:
        out.append(items[start : start + n])
        start += n
    return out
