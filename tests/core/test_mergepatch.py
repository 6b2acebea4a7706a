"""JSON merge patch (RFC 7386): the examples of the RFC's appendix A, and copy-on-write."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.mergepatch import merge_patch

# RFC 7386, appendix A: (original, patch, result).
RFC_EXAMPLES = [
    ("a key's value is replaced", {"a": "b"}, {"a": "c"}, {"a": "c"}),
    ("a new key is added", {"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ("null removes a key", {"a": "b"}, {"a": None}, {}),
    ("null removes only that key", {"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ("a list replaces a string", {"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ("a string replaces a list", {"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ("objects merge recursively", {"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ("lists are replaced, not merged", {"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ("a list patch replaces the whole document", ["a", "b"], ["c", "d"], ["c", "d"]),
    ("an object patch replaces a list document", {"a": "b"}, ["c"], ["c"]),
    ("a null patch yields null", {"a": "foo"}, None, None),
    ("a string patch yields the string", {"a": "foo"}, "bar", "bar"),
    ("a null inside a patch is not stored", {"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ("a list document becomes an object", [1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ("nulls deep in a new object are dropped", {}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("case", "original", "patch", "result"), RFC_EXAMPLES, ids=[c[0] for c in RFC_EXAMPLES])
def test_the_rfc_examples_give_the_rfc_results(case, original, patch, result):
    assert merge_patch(original, patch) == result


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=2), json_values, max_size=4)


@given(json_objects, json_objects)
def test_merging_never_changes_the_target_or_the_patch(target, patch):
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    merge_patch(target, patch)
    assert target == target_before and patch == patch_before


@given(json_objects, json_objects)
def test_changing_the_result_never_reaches_the_patch(target, patch):
    result = merge_patch(target, patch)
    before = json.dumps(patch, sort_keys=True)
    # Everything that came from the patch is a copy: emptying the result's containers leaves it whole.
    for key in list(result):
        if key in patch and isinstance(result[key], dict | list):
            result[key].clear()
    assert json.dumps(patch, sort_keys=True) == before


@given(json_objects)
def test_an_empty_patch_changes_nothing_and_a_patch_applied_twice_changes_nothing_more(target):
    assert merge_patch(target, {}) == target
    patch = {"x": {"y": 1}, "z": None}
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


def test_subtrees_the_patch_leaves_alone_are_shared_with_the_target():
    status = {"groups": [{"ordinal": 0}] * 3}
    ms = {"metadata": {"annotations": {"a": "1"}}, "status": status}
    out = merge_patch(ms, {"metadata": {"annotations": {"b": "2"}}})
    assert out["status"] is status  # not copied
    assert out["metadata"] is not ms["metadata"] and ms["metadata"]["annotations"] == {"a": "1"}


def test_a_patch_nested_deeper_than_the_limit_is_refused_without_recursing():
    from controller.core.mergepatch import MAX_DEPTH, PatchTooLarge, check_patch_limits

    deep: dict = {}
    node = deep
    for _ in range(10_000):  # far beyond the interpreter's recursion limit
        node["a"] = {}
        node = node["a"]
    with pytest.raises(PatchTooLarge, match=f"deeper than {MAX_DEPTH}"):
        check_patch_limits(deep)
    at_limit: dict = {}
    node = at_limit
    for _ in range(MAX_DEPTH - 1):
        node["a"] = {}
        node = node["a"]
    check_patch_limits(at_limit)


def test_a_patch_with_too_many_values_is_refused():
    from controller.core.mergepatch import PatchTooLarge, check_patch_limits

    with pytest.raises(PatchTooLarge, match="more than 100 values"):
        check_patch_limits({"spec": {"l": list(range(200))}}, max_values=100)
    check_patch_limits({"spec": {"l": list(range(50))}}, max_values=100)
