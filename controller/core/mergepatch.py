"""JSON merge patch (RFC 7386), the one implementation every part of RolloutUI applies.

Used by the operator controls (``core.controls``: validating the manifest a control would
produce), by both simulated API servers (``controller.simcluster.objects``: a patch of a
ModelServing or a pod) and by the dashboard's preview of a change.

Rules: an object in the patch merges key by key into the target, ``None`` (JSON ``null``) deletes
the key, anything else (a string, a number, a list) replaces the target's value whole. Example::

    merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"c": None, "d": 3}, "l": [3]})
    == {"a": {"b": 1, "d": 3}, "l": [3]}

Copy-on-write: neither input is ever mutated. The result is made of new dicts along every path the
patch touches; subtrees the patch does not touch are shared with ``target`` (so patching one
annotation of a 1,000-group ModelServing copies a few small dicts, not its whole status), and
values taken from the patch are copied, so later changes to the patch never reach the result.
Whoever changes the result in place must copy it first; the stores and the controller never do.
"""

from __future__ import annotations

from typing import Any

# Bounds of a patch that comes from outside (the preview's request body): deeper than any
# ModelServing field (spec.template.roles[].entryTemplate.spec.containers[].resources.limits is 8
# levels) by a wide margin, and more values than a whole manifest of a large ModelServing has. A
# deeper or larger patch is refused before anything recurses through it.
MAX_DEPTH = 32
MAX_VALUES = 20_000


class PatchTooLarge(ValueError):
    """A patch beyond ``MAX_DEPTH`` levels or ``MAX_VALUES`` values."""


def check_patch_limits(patch: Any, *, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> None:
    """``PatchTooLarge`` when ``patch`` nests deeper than ``max_depth`` or holds more than ``max_values``
    values (every dict, list and scalar counts one). Iterative, so a hostile depth cannot exhaust
    the stack: ``{"a": {"a": ... 10,000 levels}}`` fails at level 33 after 33 steps."""
    stack = [(patch, 1)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > max_values:
            raise PatchTooLarge(f"the patch has more than {max_values} values")
        if isinstance(value, dict | list):
            if depth > max_depth:
                raise PatchTooLarge(f"the patch nests deeper than {max_depth} levels")
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (RFC 7386); never mutates either argument."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars); several times faster than
    ``copy.deepcopy``, which also handles cycles and arbitrary objects that JSON cannot hold."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def diff(target: Any, wanted: Any) -> Any:
    """The merge patch that turns ``target`` into ``wanted`` (``merge_patch(target, diff(target,
    wanted)) == wanted`` for JSON objects without nulls). Example::

        diff({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "d": 3}}) == {"a": {"c": None, "d": 3}}
    """
    if not isinstance(target, dict) or not isinstance(wanted, dict):
        return copy_json(wanted)
    patch: dict[str, Any] = {}
    for key in target:
        if key not in wanted:
            patch[key] = None
    for key, value in wanted.items():
        if key not in target:
            patch[key] = copy_json(value)
        elif target[key] != value:
            patch[key] = diff(target[key], value) if isinstance(value, dict) else copy_json(value)
    return patch
