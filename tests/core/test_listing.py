"""The list row of a ModelServing is a pure function of the object (``controller.core.listing``)."""

from __future__ import annotations

import pytest

from controller.core import phases
from controller.core.listing import ms_summary
from tests.factories import modelserving


def _with(status=None, **spec):
    obj = modelserving(name="chat", namespace="prod", replicas=3, **spec)
    obj["metadata"]["generation"] = 4
    if status is not None:
        obj["status"] = status
    return obj


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            _with(),
            {"phase": phases.PENDING, "ready": 0, "updated": 0, "blocked": 0, "observedGeneration": None},
        ),
        (
            _with(paused=True, status={"phase": "Progressing"}),
            {"phase": phases.PAUSED, "paused": True},
        ),
        (
            _with(
                status={
                    "phase": "Progressing",
                    "availableReplicas": 2,
                    "updatedReplicas": 1,
                    "currentRevision": "chat-a",
                    "updateRevision": "chat-b",
                    "observedGeneration": 4,
                    "waiting": [{"reason": "budget", "groups": [1, 2]}, {"reason": "gang"}],
                }
            ),
            {
                "phase": "Progressing",
                "ready": 2,
                "updated": 1,
                "currentRevision": "chat-a",
                "updateRevision": "chat-b",
                "observedGeneration": 4,
                "blocked": 3,
            },
        ),
    ],
    ids=["before the first pass it is pending", "a paused spec shows paused", "the status fills the row"],
)
def test_the_list_row_is_read_from_the_object_alone(obj, expected):
    row = ms_summary(obj)
    assert row["namespace"] == "prod" and row["name"] == "chat"
    assert row["replicas"] == row["desired"] == 3 and row["generation"] == 4
    assert {k: row[k] for k in expected} == expected


def test_the_list_row_never_changes_its_input():
    obj = _with(status={"phase": "Available"})
    before = repr(obj)
    ms_summary(obj)
    assert repr(obj) == before
