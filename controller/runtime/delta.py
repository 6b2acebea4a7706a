"""The websocket delta format: ``make_delta`` (what turns one state view into the next) and
``apply_delta`` (the receiver's half, the same as ``applyDelta`` in static/js/detail/stream.js).

It lives in the controller runtime, not in the dashboard, because both ends use it: the publisher
(``publish.publish_state``, in the controller process) computes the delta against the state it
published last, and the dashboard's websocket hub (``rolloutui.consumers``, which re-exports these
names) applies it to its copy instead of decoding a 1.4 MB state per publish. The golden fixtures
in tests/dashboard/fixtures/deltas/ pin the format for both, and for the page.

Wire format:
  {type: "state.delta", base: <time of the state it applies to>,
   set: {key: value}, unset: [key],
   lists: {name: {upsert: [item], patch: [[key, {field: value}, [removed field]]], remove: [key],
                  patchSame?: [[[key, ...], {field: value}, [removed field]]], order?: [key]}},
   time: <time of the new state>}

``patchSame`` carries one change made to several items alike, with the keys of those items: when a
budget's reason changes, the 900 groups waiting on it get the same new ``reason``, and when a rollout
starts 1,000 groups get the same ``updated`` and ``roles``. Sent as 900 patches that was a delta of
120-470 kB (``python -m bench fanout``: 100 copies of it through the web process stalled the
fan-out of the publishes behind it by 100-200 ms); as one ``patchSame`` it is a few kB.
"""

from __future__ import annotations

from typing import Any

import orjson

# Lists sent as per-item changes: the identity of an item, and whether both ends keep the list
# sorted by that identity (instances and groups are, in build_view; the others keep the order the
# planner gave, which a delta carries in ``order`` when merging would not reproduce it). The page
# has the same table (LISTS in static/js/detail/stream.js).
KEYED_LISTS = {
    "instances": (lambda i: (i.get("group"), i.get("role"), i.get("ordinal")), True),
    "groups": (lambda g: g.get("ordinal"), True),
    "blocked": (lambda b: (b.get("group"), b.get("role"), b.get("kind")), False),
    "drain": (lambda d: d.get("pod"), False),
}


def _wire(k):
    return list(k) if isinstance(k, tuple) else k


def _unwire(k):
    return tuple(k) if isinstance(k, list) else k


def _sort_key(k):
    return k if isinstance(k, tuple) else (k,)


def _keyed_delta(old: list[dict], new: list[dict], key, is_sorted: bool) -> dict[str, list] | None:
    """Per-item changes of a list of dicts with an identity: new items whole (``upsert``),
    changed items as their changed fields only (``patch``: [key, {field: value}, [removed
    fields]]), the keys of removed items (``remove``), and the full key ``order`` only when the
    receiver's merge (sorted, or kept order with new items appended) would not reproduce the
    list's order. When a rollout starts, 1,000 groups change one flag each: that is 1,000 small
    patches, not 1,000 groups. None when identities are not unique (the list is then sent whole)."""
    old_keys = [key(item) for item in old]
    new_keys = [key(item) for item in new]
    if len(set(old_keys)) != len(old_keys) or len(set(new_keys)) != len(new_keys):
        return None
    before = dict(zip(old_keys, old))
    upsert, patch = [], []
    for k, item in zip(new_keys, new):
        prev = before.get(k)
        if prev is None:
            upsert.append(item)
        elif prev is not item and prev != item:  # the view reuses an unchanged group's entries
            fields = {f: v for f, v in item.items() if f not in prev or prev[f] != v}
            gone = [f for f in prev if f not in item]
            patch.append([_wire(k), fields, gone])
    present = set(new_keys)
    patch, same = _shared_patches(patch)
    out = {"upsert": upsert, "patch": patch, "remove": [_wire(k) for k in old_keys if k not in present]}
    if same:
        out["patchSame"] = same
    if is_sorted:
        merged = sorted(new_keys, key=_sort_key)
    else:
        merged = [k for k in old_keys if k in present] + [key(item) for item in upsert]
    if merged != new_keys:
        out["order"] = [_wire(k) for k in new_keys]
    return out


# Equal changes encode alike whatever the order of their fields.
_SAME_CHANGE = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _shared_patches(patches: list[list]) -> tuple[list[list], list[list]]:
    """``patches`` split into those made to one item only (in their order) and those made alike
    to several (``[[key, ...], fields, removed]``, in the order of their first item). Example:
    three groups whose reason became "waiting for group 7" and one whose phase changed give
    ``patch = [[5, {"phase": ...}, []]]``, ``patchSame = [[[1, 2, 3], {"reason": ...}, []]]``."""
    if len(patches) < 2:
        return patches, []
    changes = [orjson.dumps([fields, gone], option=_SAME_CHANGE) for _, fields, gone in patches]
    shared: dict[bytes, list] = {}
    for (key, fields, gone), change in zip(patches, changes):
        entry = shared.get(change)
        if entry is None:
            shared[change] = [[key], fields, gone]
        else:
            entry[0].append(key)
    if len(shared) == len(patches):
        return patches, []
    single = [p for p, change in zip(patches, changes) if len(shared[change][0]) == 1]
    return single, [entry for entry in shared.values() if len(entry[0]) > 1]


def make_delta(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What turns ``old`` into ``new``: changed top-level values in ``set``, removed keys in
    ``unset``, and per-item changes of the large keyed lists. ``time`` comes last so a reader can
    find it without parsing (the fan-out bench does)."""
    delta: dict[str, Any] = {"type": "state.delta", "base": old.get("time")}
    lists: dict[str, Any] = {}
    for name, (key, is_sorted) in KEYED_LISTS.items():
        a, b = old.get(name), new.get(name)
        if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, dict) for x in a + b):
            change = _keyed_delta(a, b, key, is_sorted)
            if change is not None:
                lists[name] = change
    delta["set"] = {k: v for k, v in new.items() if k not in lists and k != "time" and (k not in old or old[k] != v)}
    delta["unset"] = [k for k in old if k not in new]
    delta["lists"] = lists
    delta["time"] = new.get("time")
    return delta


def _merge_list(items: list[dict], change: dict[str, list], key, is_sorted: bool) -> list[dict]:
    by_key = {key(item): item for item in items}
    order = list(by_key)
    for k in change.get("remove") or []:
        by_key.pop(_unwire(k), None)
    patches = list(change.get("patch") or [])
    for keys, fields, gone in change.get("patchSame") or []:
        patches.extend([k, fields, gone] for k in keys)
    for k, fields, gone in patches:
        k = _unwire(k)
        prev = by_key.get(k)
        if prev is None:
            continue
        item = {**prev, **fields}  # a new dict: the base state's item stays as it was
        for f in gone:
            item.pop(f, None)
        by_key[k] = item
    for item in change.get("upsert") or []:
        k = key(item)
        if k not in by_key:
            order.append(k)
        by_key[k] = item
    if "order" in change:
        return [by_key[_unwire(k)] for k in change["order"]]
    if is_sorted:
        return [by_key[k] for k in sorted(by_key, key=_sort_key)]
    return [by_key[k] for k in order if k in by_key]


def apply_delta(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The state ``delta`` turns ``base`` into, as the page computes it (``applyDelta``). Pure:
    ``base`` and its items are not modified (the hub's clients still hold it as the base of their
    next delta); unchanged items are shared. ``time`` is put last, where ``build_view`` has it.
    Raises ValueError for a list the format does not know."""
    out = {**base, **(delta.get("set") or {})}
    for k in delta.get("unset") or []:
        out.pop(k, None)
    for name, change in (delta.get("lists") or {}).items():
        if name not in KEYED_LISTS:
            raise ValueError(f"delta names an unknown list {name!r}")
        key, is_sorted = KEYED_LISTS[name]
        out[name] = _merge_list(base.get(name) or [], change, key, is_sorted)
    # A state without ``time`` (a deletion notice) has it in ``unset``; the delta's ``time`` is
    # then None and must not come back as a key.
    had_time = out.pop("time", "absent") != "absent"
    if had_time or delta.get("time") is not None:
        out["time"] = delta.get("time")
    return out
