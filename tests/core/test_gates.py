"""Serving gates of a role instance, from its pods alone (``controller.core.gates``).

Each test builds the pods of one instance at some point of its life and checks the highest gate,
the time of each gate, what failed and what it waits on."""

from __future__ import annotations

import hashlib
import json

import pytest

from controller.core import naming
from controller.core.gates import GATES, instance_gates
from controller.core.observe import observe

T0 = "2026-11-30T10:00:00Z"


def at(seconds: int) -> str:
    return f"2026-11-30T10:{seconds // 60:02d}:{seconds % 60:02d}Z"


def pod(index: int, *, scheduled=None, started=None, ready=None, draining=False, verification=None, rv="1", **extra):
    conditions = []
    if scheduled is not None:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": at(scheduled)})
    if ready is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": at(ready)})
    state = (
        {"running": {"startedAt": at(started)}} if started is not None else {"waiting": {"reason": "ContainerCreating"}}
    )
    if extra.get("waiting_reason"):
        state = {"waiting": {"reason": extra["waiting_reason"]}}
    annotations = {}
    if draining:
        annotations[naming.ANNOTATION_DRAINING] = "100.0"
    if verification is not None:
        annotations[naming.ANNOTATION_VERIFICATION] = json.dumps(verification)
    status = {"phase": "Running" if started is not None else "Pending", "conditions": conditions}
    status["containerStatuses"] = [{"name": "engine", "ready": ready is not None, "restartCount": 0, "state": state}]
    if extra.get("unschedulable"):
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
        ]
    obj = {
        "metadata": {
            "name": f"ms-0-serve-0-{index}",
            "resourceVersion": rv,
            "creationTimestamp": T0,
            "annotations": annotations,
            "labels": {
                naming.LABEL_GROUP_ORDINAL: "0",
                naming.LABEL_ROLE: "serve",
                naming.LABEL_ROLE_ORDINAL: "0",
                naming.LABEL_POD_INDEX: str(index),
                naming.LABEL_REVISION: "rev1",
            },
        },
        "spec": {"nodeName": "n1" if scheduled is not None else None, "containers": [{"name": "engine", "image": "e"}]},
        "status": status,
    }
    # Parses are cached by (uid, resourceVersion): a pod that differs must have another uid.
    obj["metadata"]["uid"] = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
    return obj


def gates_of(*pods, expected=None, verification=False):
    inst = observe(list(pods)).groups[0].instances[("serve", 0)]
    return instance_gates(inst, expected or len(pods), verification_required=verification)


PASSED = {"revision": "rev1", "passed": True, "at": 1764496890.0, "status": 200}
FAILED = {"revision": "rev1", "passed": False, "at": 1764496890.0, "status": 500, "error": "status 500, expected 200"}


@pytest.mark.parametrize(
    "pods,verification,highest,failed,waiting",
    [
        ([pod(0)], False, "Created", None, "Scheduled"),
        ([pod(0, scheduled=2)], False, "Scheduled", None, "Started"),
        ([pod(0, scheduled=2, started=10)], False, "Started", None, "Loaded"),
        ([pod(0, scheduled=2, started=10, ready=40)], False, "Serving", None, None),
        ([pod(0, scheduled=2, started=10, ready=40)], True, "Routed", None, "Verified"),
        ([pod(0, scheduled=2, started=10, ready=40, verification=PASSED)], True, "Serving", None, None),
        ([pod(0, scheduled=2, started=10, ready=40, verification=FAILED)], True, "Routed", "Verified", "Verified"),
        ([pod(0, scheduled=2, started=10, ready=40, draining=True)], False, "Loaded", None, "Routed"),
        ([pod(0, unschedulable=True)], False, "Created", "Scheduled", "Scheduled"),
        ([pod(0, scheduled=2, waiting_reason="ImagePullBackOff")], False, "Scheduled", "Started", "Started"),
        (
            [pod(0, scheduled=2, started=10, ready=40), pod(1, scheduled=3, started=12)],
            False,
            "Started",
            None,
            "Loaded",
        ),
        ([pod(0, scheduled=2, started=10, ready=40)], False, None, None, "Created"),
    ],
    ids=[
        "a pod that exists but is not bound yet is Created and waits to be Scheduled",
        "a bound pod whose containers do not run yet is Scheduled",
        "a pod whose containers run but are not Ready is Started: the model is loading",
        "a Ready, routable pod without a verification spec is Serving",
        "with a verification spec a Ready pod is Routed until its verification passes",
        "a passed verification for the revision it runs makes it Serving",
        "a failed verification holds it at Routed with Verified failed",
        "a draining pod is Loaded but no longer Routed",
        "an unschedulable pod failed the Scheduled gate",
        "an image that cannot be pulled failed the Started gate",
        "an instance is at the gate its slowest pod reached",
        "an instance missing a pod is not even Created",
    ],
)
def test_the_highest_gate(pods, verification, highest, failed, waiting):
    expected = 2 if highest is None else None
    gates = gates_of(*pods, expected=expected, verification=verification)
    assert (gates.highest, gates.failed, gates.waiting) == (highest, failed, waiting)


def test_gates_are_reached_in_order_with_the_time_of_the_slowest_pod():
    gates = gates_of(pod(0, scheduled=2, started=10, ready=40), pod(1, scheduled=3, started=12, ready=35))
    assert list(gates.reached) == list(GATES)
    times = list(gates.reached.values())
    assert times == sorted(times)
    assert gates.reached["Loaded"] - gates.reached["Created"] == 40  # pod 0 was Ready last


def test_a_verification_of_another_revision_does_not_count():
    stale = {**PASSED, "revision": "rev0"}
    gates = gates_of(pod(0, scheduled=2, started=10, ready=40, verification=stale), verification=True)
    assert gates.highest == "Routed" and gates.failed is None


def routed_gates(*pods, routed, verification=False):
    inst = observe(list(pods)).groups[0].instances[("serve", 0)]
    return instance_gates(inst, len(pods), verification_required=verification, routed=routed)


READY_AT = 1796032840.0  # at(40)


@pytest.mark.parametrize(
    "routed,highest,waiting,routed_at",
    [
        (None, "Serving", None, READY_AT),
        ({}, "Loaded", "Routed", None),
        ({"ms-0-serve-0-1": None}, "Loaded", "Routed", None),
        ({"ms-0-serve-0-0": None}, "Serving", None, READY_AT),
        ({"ms-0-serve-0-0": READY_AT + 7.5}, "Serving", None, READY_AT + 7.5),
        ({"ms-0-serve-0-0": READY_AT - 30}, "Serving", None, READY_AT),
    ],
    ids=[
        "a router that keeps no table: Routed is inferred from the Ready pod, at its Ready time",
        "a Ready pod missing from the router's table is Loaded and waits to be Routed",
        "only the entry pod counts: a worker in the table does not route the instance",
        "an entry in the table with no time of its own is Routed when it became Ready",
        "an entry the router took 7.5 s after Ready is Routed then",
        "a table time before Ready (a pod Ready again) is Routed no earlier than Loaded",
    ],
)
def test_the_routed_gate_follows_the_routers_table(routed, highest, waiting, routed_at):
    gates = routed_gates(pod(0, scheduled=2, started=10, ready=40), routed=routed)
    assert (gates.highest, gates.waiting, gates.reached.get("Routed")) == (highest, waiting, routed_at)


def test_a_draining_pod_the_router_still_lists_is_not_routed():
    gates = routed_gates(pod(0, scheduled=2, started=10, ready=40, draining=True), routed={"ms-0-serve-0-0": None})
    assert gates.highest == "Loaded"


def test_the_funnel_shows_the_time_from_ready_to_routed():
    from controller.core.gates import funnel

    late = routed_gates(pod(0, scheduled=2, started=10, ready=40), routed={"ms-0-serve-0-0": READY_AT + 12})
    prompt = routed_gates(pod(0, scheduled=2, started=10, ready=40), routed={"ms-0-serve-0-0": None})
    waiting = routed_gates(pod(0, scheduled=2, started=10, ready=40), routed={})
    rows = {
        r["gate"]: r for r in funnel([((0, "serve", 0), late), ((1, "serve", 0), prompt), ((2, "serve", 0), waiting)])
    }
    assert rows["Routed"]["fromLoaded"] == {"instances": 2, "medianSeconds": 0.0, "maxSeconds": 12.0}
    assert rows["Loaded"]["count"] == 1 and rows["Loaded"]["slowest"]["group"] == 2
