"""Which pods the pass asks the router about: those leaving routing (``PodObs.leaving_routing``,
read while the pod is parsed, and ``Observed.leaving_routing``, in the order the pods are listed)."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.core.observe import observe, parse_pod

GATE = naming.CONDITION_INPLACE_READY


def pod(name="ms-0-serve-0-0", *, draining=None, gate_conditions=(), index=0):
    annotations = {} if draining is None else {naming.ANNOTATION_DRAINING: draining}
    conditions = [{"type": "Ready", "status": "True"}] + [{"type": GATE, "status": s} for s in gate_conditions]
    return {
        "metadata": {
            "name": name,
            "annotations": annotations,
            "labels": {
                naming.LABEL_GROUP_ORDINAL: "0",
                naming.LABEL_ROLE: "serve",
                naming.LABEL_ROLE_ORDINAL: "0",
                naming.LABEL_POD_INDEX: str(index),
                naming.LABEL_REVISION: "rev1",
            },
        },
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running", "conditions": conditions},
    }


@pytest.mark.parametrize(
    "kwargs, leaving",
    [
        ({}, False),
        ({"draining": "100.0"}, True),
        ({"draining": "not a time"}, True),  # an unreadable mark still means "do not route"
        ({"draining": ""}, True),  # present, even empty
        ({"gate_conditions": ["False"]}, True),
        ({"gate_conditions": ["True"]}, False),
        ({"gate_conditions": ["Unknown"]}, False),
        ({"gate_conditions": ["False", "True"]}, True),  # any condition saying False
    ],
)
def test_a_pod_leaves_routing_when_marked_draining_or_its_in_place_gate_says_false(kwargs, leaving):
    assert parse_pod(pod(**kwargs)).leaving_routing is leaving


def test_observe_lists_the_pods_leaving_routing_in_the_order_they_were_listed():
    pods = [
        pod("ms-0-serve-0-0", index=0, draining="5"),
        pod("ms-0-serve-0-1", index=1),
        pod("ms-0-serve-0-2", index=2, gate_conditions=["False"]),
    ]
    assert [p.name for p in observe(pods).leaving_routing] == ["ms-0-serve-0-0", "ms-0-serve-0-2"]
