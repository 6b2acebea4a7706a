"""After an in-place update, restart counts are judged against the recorded baseline."""

from __future__ import annotations

import json

import pytest

from controller.core import naming
from controller.core.observe import parse_pod


def _pod(*, restarts: int, ready: bool, completed: bool = True, baseline: int = 2) -> dict:
    state = {
        "targetRevision": "r2",
        "completed": completed,
        "containers": {"engine": {"restartCount": baseline, "imageID": "sha256:old"}},
    }
    labels = {
        naming.LABEL_GROUP_ORDINAL: "0",
        naming.LABEL_ROLE: "serve",
        naming.LABEL_ROLE_ORDINAL: "0",
        naming.LABEL_POD_INDEX: "0",
        naming.LABEL_REVISION: "r2",
    }
    return {
        "metadata": {
            "name": "ms-0-serve-0-0",
            "uid": "u1",
            "labels": labels,
            "annotations": {naming.ANNOTATION_INPLACE_STATE: json.dumps(state)},
        },
        "spec": {"containers": [{"name": "engine", "image": "engine:v2"}], "nodeName": "n0"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": "engine",
                    "ready": ready,
                    "restartCount": restarts,
                    "imageID": "sha256:new",
                    "state": {"running": {}},
                }
            ],
        },
    }


@pytest.mark.parametrize(
    "restarts, ready, completed, failing",
    [
        pytest.param(3, False, True, None, id="the one restart the update caused is expected"),
        pytest.param(4, False, True, "RestartsAboveInPlaceBaseline", id="a second restart and not Ready is a crash"),
        pytest.param(9, True, True, None, id="a container that is Ready again is not failing"),
        pytest.param(9, False, False, None, id="during the update the protocol judges, not the baseline"),
    ],
)
def test_restart_counts_are_judged_against_the_in_place_baseline(restarts, ready, completed, failing):
    assert parse_pod(_pod(restarts=restarts, ready=ready, completed=completed)).failing_reason == failing
