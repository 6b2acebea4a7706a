"""The autoscaler's decision (``controller.core.scaling.decide``) as a table whose rows are sentences,
and the merge patches of the scale and autoscale controls."""

from __future__ import annotations

import json

import pytest

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.scaling import (
    MAX_REPLICAS,
    Autoscale,
    autoscale_of,
    check_bounds,
    decide,
    disable_autoscale,
    enable_autoscale,
    scale,
)
from tests.factories import modelserving

WHY = "decode: 40 requests in flight now ... need 4 instances"

# (sentence, inputs, expected replicas, words the reason holds)
DECISIONS = [
    (
        "a recommendation within the bounds is applied",
        dict(current=2, recommended=3, min=1, max=5, since=None),
        3,
        ["Autoscale 2 -> 3, scale up", "3 recommended, within 1..5", WHY],
    ),
    (
        "a recommendation above max is capped at max",
        dict(current=2, recommended=9, min=1, max=4, since=None),
        4,
        ["Autoscale 2 -> 4", "9 recommended, capped at the maximum 4"],
    ),
    (
        "never below min even when the recommendation is lower",
        dict(current=5, recommended=1, min=2, max=6, since=1000.0),
        2,
        ["Autoscale 5 -> 2, scale down", "drain like any delete", "1 recommended, raised to the minimum 2"],
    ),
    (
        "no recommendation changes nothing",
        dict(current=2, recommended=None, min=1, max=4, since=None, why="the safe concurrency is unknown"),
        None,
        ["No change: no recommendation (the safe concurrency is unknown)"],
    ),
    (
        "no recommendation changes nothing, even outside the bounds",
        dict(current=9, recommended=None, min=1, max=4, since=None, why="no release"),
        None,
        ["No change: no recommendation"],
    ),
    (
        "within the cooldown nothing changes",
        dict(current=2, recommended=4, min=1, max=6, since=120.0),
        None,
        ["changed 120 s ago, within the 300 s cooldown", "2 -> 4 once it passes"],
    ),
    (
        "after the cooldown the change is made",
        dict(current=2, recommended=4, min=1, max=6, since=300.0),
        4,
        ["Autoscale 2 -> 4"],
    ),
    (
        "a rollout in progress is not scaled",
        dict(current=2, recommended=4, min=1, max=6, since=None, busy="a rollout is in progress (phase Progressing)"),
        None,
        ["No change: a rollout is in progress (phase Progressing)."],
    ),
    (
        "at the target nothing changes, cooldown or not",
        dict(current=4, recommended=7, min=1, max=4, since=5.0),
        None,
        ["No change: 4 ServingGroups run, as wanted (7 recommended, capped at the maximum 4)"],
    ),
    (
        "a lower recommendation scales down to it",
        dict(current=4, recommended=2, min=1, max=6, since=None),
        2,
        ["Autoscale 4 -> 2, scale down"],
    ),
]


@pytest.mark.parametrize("sentence, given, expected, words", DECISIONS, ids=[row[0] for row in DECISIONS])
def test_the_autoscaler_decides(sentence, given, expected, words):
    decision = decide(
        current=given["current"],
        recommended=given["recommended"],
        why=given.get("why", WHY),
        bounds=Autoscale(given["min"], given["max"]),
        since_last_change=given["since"],
        cooldown=300.0,
        busy=given.get("busy"),
    )
    assert decision.replicas == expected, decision.reason
    for w in words:
        assert w in decision.reason, (w, decision.reason)


# --- The scale control's patch -------------------------------------------------------------------------
SCALE_REFUSALS = [
    ("text is not a number", "three", {}, "replicas must be an integer, got 'three'"),
    ("true is not a number", True, {}, "replicas must be an integer, got True"),
    ("a negative count", -1, {}, "replicas must not be negative, got -1"),
    ("above the maximum", MAX_REPLICAS + 1, {}, f"replicas must be {MAX_REPLICAS} or less, got {MAX_REPLICAS + 1}"),
    ("zero without allowZero", 0, {}, "replicas 0 stops every ServingGroup (scale to zero): give allowZero"),
    ("the count it already has", 4, {}, "already at 4 ServingGroups"),
]


@pytest.mark.parametrize("sentence, replicas, kw, message", SCALE_REFUSALS, ids=[r[0] for r in SCALE_REFUSALS])
def test_scale_refuses_naming_replicas(sentence, replicas, kw, message):
    with pytest.raises(ControlError) as refused:
        scale(modelserving(replicas=4), replicas=replicas, **kw)
    assert refused.value.field == "replicas"
    assert message in str(refused.value)


def test_scale_sets_spec_replicas_and_zero_only_when_asked_for():
    assert scale(modelserving(replicas=4), replicas=2) == {"spec": {"replicas": 2}}
    assert scale(modelserving(replicas=4), replicas=0, allow_zero=True) == {"spec": {"replicas": 0}}


# --- The autoscale setting ---------------------------------------------------------------------------------
def annotated(text):
    ms = modelserving(replicas=2)
    ms["metadata"]["annotations"] = {naming.ANNOTATION_AUTOSCALE: text}
    return ms


def test_autoscale_is_off_without_the_annotation_and_on_with_it():
    assert autoscale_of(modelserving()) is None
    patch = enable_autoscale(modelserving(), max_replicas=5)
    text = patch["metadata"]["annotations"][naming.ANNOTATION_AUTOSCALE]
    assert json.loads(text) == {"minReplicas": 1, "maxReplicas": 5}  # min 1 by default
    assert autoscale_of(annotated(text)) == Autoscale(1, 5)
    assert disable_autoscale(annotated(text)) == {"metadata": {"annotations": {naming.ANNOTATION_AUTOSCALE: None}}}


BOUNDS = [
    ("max is required to turn it on", None, None, "maxReplicas", "maxReplicas is required"),
    ("min zero: the autoscaler never scales to zero", 0, 3, "minReplicas", "minReplicas must be 1 or more"),
    ("max below min", 4, 2, "maxReplicas", "maxReplicas must be at least minReplicas (4), got 2"),
    ("max above the maximum", 1, MAX_REPLICAS + 1, "maxReplicas", f"maxReplicas must be {MAX_REPLICAS} or less"),
    ("min not a number", "one", 3, "minReplicas", "minReplicas must be an integer"),
]


@pytest.mark.parametrize("sentence, low, high, field, message", BOUNDS, ids=[b[0] for b in BOUNDS])
def test_autoscale_bounds_are_checked_naming_the_field(sentence, low, high, field, message):
    with pytest.raises(ControlError) as refused:
        check_bounds(low, high)
    assert refused.value.field == field and message in str(refused.value)


def test_the_same_bounds_again_and_off_when_off_are_refused():
    on = annotated(json.dumps({"minReplicas": 1, "maxReplicas": 5}))
    with pytest.raises(ControlError, match="already on with minReplicas 1 and maxReplicas 5"):
        enable_autoscale(on, min_replicas=1, max_replicas=5)
    with pytest.raises(ControlError, match="autoscale is not on") as refused:
        disable_autoscale(modelserving())
    assert refused.value.field == "disable"


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"minReplicas": 0, "maxReplicas": 3}', '{"minReplicas": 2}'])
def test_a_malformed_hand_written_annotation_is_an_error_on_field_autoscale(text):
    with pytest.raises(ControlError) as refused:
        autoscale_of(annotated(text))
    assert refused.value.field == "autoscale" and naming.ANNOTATION_AUTOSCALE in str(refused.value)
