"""The websocket delta format, Python side: ``make_delta`` on small cases, and the golden fixtures
(tests/dashboard/fixtures/deltas/), which are exactly what ``make_delta`` writes today, each turn
their base into their expected state, and together use every part of the format. The page's side
of the same fixtures: ``test_pages_offline.py``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import delta_fixtures
from .helpers import apply_delta, same_json

REGENERATE = "regenerate them with `.venv/bin/python -m tests.dashboard.delta_fixtures` if the change is deliberate"


def committed() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(delta_fixtures.FIXTURES.glob("*.json"))}


@pytest.mark.slow
def test_the_committed_fixtures_are_what_make_delta_writes_for_the_recorded_rollout_today():
    built = delta_fixtures.build()
    files = {p.stem: p.read_text() for p in delta_fixtures.FIXTURES.glob("*.json")}
    assert sorted(files) == sorted(built), f"fixture files differ from the generated set; {REGENERATE}"
    stale = [name for name, fixture in built.items() if delta_fixtures.dumps(fixture) != files[name]]
    assert not stale, f"make_delta or the state payload changed for {stale}; {REGENERATE}"


@pytest.mark.parametrize("name", sorted(committed()))
def test_each_fixture_delta_is_make_delta_of_its_states_and_rebuilds_the_expected_state(name):
    from rolloutui.consumers import make_delta

    fixture = committed()[name]
    assert json.loads(json.dumps(make_delta(fixture["base"], fixture["expected"]))) == fixture["delta"]
    assert same_json(apply_delta(fixture["base"], fixture["delta"]), fixture["expected"]) is None


def test_the_fixtures_use_every_part_of_the_delta_format():
    seen = set()
    for fixture in committed().values():
        delta = fixture["delta"]
        seen |= {f"set:{k}" for k in delta["set"]} | ({"unset"} if delta["unset"] else set())
        for name, change in delta["lists"].items():
            for part in ("upsert", "patch", "remove"):
                if change[part]:
                    seen.add(f"{name}:{part}")
            if "order" in change:
                seen.add(f"{name}:order")
            if change.get("patchSame"):
                seen.add(f"{name}:patchSame")
            if any(gone for _, _, gone in change["patch"]):
                seen.add(f"{name}:removed-field")
    wanted = {
        "unset",
        "set:blocked",  # a keyed list sent whole (duplicate identities)
        "set:drain",  # a keyed list that is not a list on one side
        "set:spec",
        *(f"instances:{p}" for p in ("upsert", "patch", "remove", "removed-field")),
        *(f"groups:{p}" for p in ("upsert", "patch", "remove", "removed-field")),
        *(f"drain:{p}" for p in ("upsert", "patch", "remove")),
        "blocked:upsert",
        "blocked:remove",
        "blocked:order",
        "groups:patchSame",  # one change made alike to many groups (a rollout starting)
    }
    assert wanted <= seen, f"no fixture shows {sorted(wanted - seen)}"


def test_make_delta_round_trips_values_none_and_removed_fields():
    from rolloutui.consumers import make_delta

    old = {
        "phase": "Progressing",
        "spec": {"paused": False},
        "gone": 1,
        "time": 1.0,
        "instances": [
            {"group": 0, "role": "a", "ordinal": 0, "state": "Ready", "extra": 1},
            {"group": 1, "role": "a", "ordinal": 0, "state": "Ready"},
        ],
        "groups": [{"ordinal": 0, "updated": False, "revision": None}, {"ordinal": 1, "updated": False}],
    }
    new = {
        "phase": "Paused",
        "spec": {"paused": True},
        "time": 2.0,
        "instances": [
            {"group": 0, "role": "a", "ordinal": 0, "state": "Draining", "note": None},
            {"group": 2, "role": "a", "ordinal": 0, "state": "Creating"},
        ],
        "groups": [{"ordinal": 0, "updated": True, "revision": None}, {"ordinal": 2, "updated": False}],
    }
    delta = make_delta(old, new)
    assert delta["unset"] == ["gone"] and delta["set"] == {"phase": "Paused", "spec": {"paused": True}}
    assert delta["lists"]["instances"]["patch"] == [[[0, "a", 0], {"state": "Draining", "note": None}, ["extra"]]]
    assert delta["lists"]["groups"]["patch"] == [[0, {"updated": True}, []]]
    assert apply_delta(old, json.loads(json.dumps(delta))) == new


def _waiting(reasons: dict[int, str]) -> list[dict]:
    return [{"group": g, "role": None, "kind": "budget", "reason": r} for g, r in reasons.items()]


@pytest.mark.parametrize(
    "sentence, before, after, patch, same",
    [
        (
            "one change made alike to several items is sent once with their keys",
            {1: "a", 2: "a", 3: "a"},
            {1: "b", 2: "b", 3: "b"},
            [],
            [[[[1, None, "budget"], [2, None, "budget"], [3, None, "budget"]], {"reason": "b"}, []]],
        ),
        (
            "a change made to one item only stays a patch of its own",
            {1: "a", 2: "a", 3: "a"},
            {1: "b", 2: "b", 3: "c"},
            [[[3, None, "budget"], {"reason": "c"}, []]],
            [[[[1, None, "budget"], [2, None, "budget"]], {"reason": "b"}, []]],
        ),
        (
            "changes that all differ are patches as before, with no patchSame",
            {1: "a", 2: "a"},
            {1: "b", 2: "c"},
            [[[1, None, "budget"], {"reason": "b"}, []], [[2, None, "budget"], {"reason": "c"}, []]],
            None,
        ),
    ],
)
def test_shared_patches(sentence, before, after, patch, same):
    from rolloutui.consumers import make_delta

    old, new = {"time": 1.0, "blocked": _waiting(before)}, {"time": 2.0, "blocked": _waiting(after)}
    change = make_delta(old, new)["lists"]["blocked"]
    assert change["patch"] == patch
    assert change.get("patchSame") == same
    assert apply_delta(old, json.loads(json.dumps(make_delta(old, new)))) == new


def test_make_delta_keeps_planner_order_and_falls_back_on_duplicate_keys():
    from rolloutui.consumers import make_delta

    b = lambda g, reason: {"group": g, "role": None, "kind": "budget", "reason": reason}  # noqa: E731
    old = {"time": 1.0, "blocked": [b(3, "x"), b(1, "y")], "drain": [{"pod": "p1", "inFlight": 2}]}
    new = {
        "time": 2.0,
        "blocked": [b(2, "z"), b(3, "x2")],
        "drain": [{"pod": "p1", "inFlight": 1}, {"pod": "p0", "inFlight": 0}],
    }
    delta = make_delta(old, new)
    assert "order" in delta["lists"]["blocked"] and "order" not in delta["lists"]["drain"]
    assert apply_delta(old, json.loads(json.dumps(delta))) == new
    dup = {"time": 3.0, "blocked": [b(2, "z"), b(2, "z again")], "drain": []}
    delta = make_delta(new, dup)
    assert "blocked" not in delta["lists"] and delta["set"]["blocked"] == dup["blocked"]
    assert apply_delta(new, json.loads(json.dumps(delta))) == dup


@pytest.mark.parametrize("name", sorted(committed()))
def test_the_hubs_apply_delta_rebuilds_each_fixtures_expected_state_without_touching_its_base(name):
    """``controller.runtime.delta.apply_delta`` is what the websocket hub runs on a published
    delta: it must end where the page's ``applyDelta`` ends, and leave the base (which clients
    still hold as the base of their next delta) as it was."""
    import copy

    from controller.runtime.delta import apply_delta as hub_apply_delta

    fixture = committed()[name]
    base = copy.deepcopy(fixture["base"])
    rebuilt = hub_apply_delta(base, fixture["delta"])
    assert same_json(rebuilt, fixture["expected"]) is None
    assert base == fixture["base"]
    if list(fixture["expected"])[-1] == "time":  # as build_view writes it (the bench reads it there)
        assert list(rebuilt)[-1] == "time"


def test_the_hubs_apply_delta_turns_a_state_into_a_deletion_notice_without_a_time():
    from controller.runtime.delta import apply_delta as hub_apply_delta
    from rolloutui.consumers import make_delta

    state = committed()[sorted(committed())[0]]["expected"]
    notice = {"namespace": "default", "name": "demo", "deleted": True}
    delta = json.loads(json.dumps(make_delta(state, notice)))
    assert same_json(hub_apply_delta(state, delta), notice) is None


def test_the_hubs_apply_delta_refuses_a_list_the_format_does_not_know():
    from controller.runtime.delta import apply_delta as hub_apply_delta

    with pytest.raises(ValueError, match="unknown list 'pods'"):
        hub_apply_delta({"time": 1.0}, {"type": "state.delta", "set": {}, "unset": [], "lists": {"pods": {}}})


# Each field keeps one JSON type, as in build_view's view: make_delta compares with Python's ``==``,
# for which true == 1, so a field turning from true into 1 would not be sent (no view field does).
_fields = st.fixed_dictionaries(
    {},
    optional={
        "state": st.sampled_from(["Ready", "Creating", "Draining"]),
        "updated": st.booleans(),
        "note": st.one_of(st.none(), st.sampled_from(["a", "b"])),
        "revision": st.integers(-3, 3),
    },
)
_instance = st.builds(
    lambda g, r, o, f: {"group": g, "role": r, "ordinal": o, **f},
    st.integers(0, 3),
    st.sampled_from(["prefill", "decode"]),
    st.integers(0, 1),
    _fields,
)
_blocked = st.builds(
    lambda g, k, f: {"group": g, "role": None, "kind": k, **f},
    st.one_of(st.none(), st.integers(0, 3)),
    st.sampled_from(["budget", "gang"]),
    _fields,
)
_state = st.fixed_dictionaries(
    {
        "phase": st.sampled_from(["Progressing", "Paused", "Ready"]),
        "instances": st.lists(_instance, max_size=6).map(
            lambda xs: sorted(
                {(i["group"], i["role"], i["ordinal"]): i for i in xs}.values(),
                key=lambda i: (i["group"], i["role"], i["ordinal"]),
            )
        ),
        "groups": st.lists(st.builds(lambda o, f: {"ordinal": o, **f}, st.integers(0, 4), _fields), max_size=4).map(
            lambda xs: sorted({g["ordinal"]: g for g in xs}.values(), key=lambda g: g["ordinal"])
        ),
        "blocked": st.lists(_blocked, max_size=4),
        "drain": st.lists(
            st.builds(lambda p, n: {"pod": p, "inFlight": n}, st.sampled_from("pqr"), st.integers(0, 2)), max_size=3
        ),
    },
    optional={"paused": st.booleans()},
).map(lambda s: {**s, "time": 0.0})


@settings(max_examples=200, deadline=None)
@given(old=_state, new=_state, t=st.floats(1, 9))
def test_the_hubs_apply_delta_of_make_delta_rebuilds_any_new_state(old, new, t):
    """Property: whatever two states (sorted or planner-ordered lists, duplicate keys, removed
    fields and keys), applying ``make_delta(old, new)`` as it travels (JSON) to ``old`` gives
    ``new``."""
    from controller.runtime.delta import apply_delta as hub_apply_delta
    from rolloutui.consumers import make_delta

    new = {**new, "time": t}
    delta = json.loads(json.dumps(make_delta(old, new)))
    wire = lambda s: json.loads(json.dumps(s))  # noqa: E731  (the hub holds decoded JSON)
    assert same_json(hub_apply_delta(wire(old), delta), wire(new)) is None
