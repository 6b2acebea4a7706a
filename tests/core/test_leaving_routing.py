"""Which pods the pass asks the router about: those leaving routing (``PodObs.leaving_routing``,
read while the pod is parsed, and ``Observed.leaving_routing``, in the order the pods are listed)."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.core.observe import observe, parse_pod
from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.core.view import build_view
from controller.runtime.state import in_flight_of

from .harness import FixedClock, manifest, role
from .support import NAME, NS, change_image, deploy

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


class BatchRouter(NoRouter):
    """A router that gives many counts in one round trip (as the Redis router does), noting each ask."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.single: list[str] = []
        self.batches: list[list[str]] = []

    def in_flight(self, namespace: str, pod_name: str) -> int:
        self.single.append(pod_name)
        return self.counts.get(pod_name, 0)

    def in_flight_many(self, namespace: str, pod_names) -> dict[str, int]:
        self.batches.append(list(pod_names))
        return {n: self.counts.get(n, 0) for n in pod_names}


def _view_in_flight(view: dict) -> dict[tuple[int, str, int], int]:
    return {(i["group"], i["role"], i["ordinal"]): i["inFlight"] for i in view["instances"]}


@pytest.mark.parametrize("acted", [False, True], ids=["a pass that did nothing", "a pass that acted"])
def test_the_pass_view_shows_every_pods_load_as_the_dashboards_read_of_the_state_does(acted):
    """The plan needs only the leaving pods' counts; the page's view shows every pod's, the same
    figures as ``current_state`` (REST, control publishes), so the page does not flip between them."""
    cluster, clock = deploy(manifest(replicas=2, roles=[role("serve", workers=1)]))
    if acted:
        change_image(cluster, "engine:v2")
    names = [p["metadata"]["name"] for p in cluster.list_pods(NS, NAME)]
    router = BatchRouter({names[0]: 3, names[-1]: 2})
    result = reconcile(cluster, router, FixedClock(clock.t), NS, NAME)
    assert bool(result.actions) is acted
    assert router.single == []  # no pod leaves routing: the plan asked about none
    shown = _view_in_flight(result.view)
    assert sum(shown.values()) == 5
    pods = cluster.list_pods(NS, NAME)
    dashboards = build_view(
        cluster.get_modelserving(NS, NAME), pods, cluster.list_revisions(NS, NAME), in_flight_of(router, NS, pods), 0.0
    )
    assert shown == _view_in_flight(dashboards)


def test_a_pass_without_a_state_view_asks_the_router_about_no_pod():
    cluster, clock = deploy(manifest(replicas=2, roles=[role("serve", workers=1)]))
    router = BatchRouter({})
    reconcile(cluster, router, FixedClock(clock.t), NS, NAME, build_state_view=False)
    assert router.single == [] and router.batches == []
