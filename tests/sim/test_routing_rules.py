"""The routing rules both drivers apply (controller.simcluster.routing)."""

from __future__ import annotations

import random

import pytest

from controller.core import naming
from controller.simcluster import routing
from controller.simcluster.config import ClusterConfig, ImageBehaviour, Span


def pod(name, *, index="0", ready=True, phase="Running", draining=False, deleting=False, image="engine:v1"):
    meta = {
        "name": name,
        "uid": f"uid-{name}",
        "labels": {naming.LABEL_POD_INDEX: index, naming.LABEL_REVISION: "r1"},
        "annotations": {naming.ANNOTATION_DRAINING: "10"} if draining else {},
    }
    if deleting:
        meta["deletionTimestamp"] = "1970-01-01T00:00:10Z"
    return {
        "metadata": meta,
        "spec": {"containers": [{"name": "engine", "image": image}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


ROUTABLE = [
    ("a Ready running entry pod takes requests", pod("a"), True),
    ("a worker pod never takes requests", pod("a", index="1"), False),
    ("a pod that is not Ready takes none", pod("a", ready=False), False),
    ("a pod still Pending takes none", pod("a", phase="Pending"), False),
    ("a draining pod takes no new requests", pod("a", draining=True), False),
    ("a terminating pod takes no new requests", pod("a", deleting=True), False),
]


@pytest.mark.parametrize(("case", "candidate", "routable"), ROUTABLE, ids=[r[0] for r in ROUTABLE])
def test_only_ready_entry_pods_that_are_neither_draining_nor_terminating_take_requests(case, candidate, routable):
    assert (routing.routable_entries([candidate]) == [candidate]) is routable


def test_a_request_goes_to_the_least_busy_pod_and_ties_go_to_the_first_name():
    pods = [pod("c"), pod("a"), pod("b")]
    busy = {"a": 2, "b": 1, "c": 1}
    assert routing.pick(pods, lambda p: busy[p["metadata"]["name"]])["metadata"]["name"] == "b"
    assert routing.pick([], lambda p: 0) is None


ENGINES = [
    ("an entry pod stops its own requests", "g-0-serve-0-0", "g-0-serve-0-0"),
    ("a worker pod stops its entry's requests", "g-0-serve-0-1", "g-0-serve-0-0"),
    ("the third pod of an engine too", "g-3-decode-1-2", "g-3-decode-1-0"),
    ("a name without a pod index is its own engine", "solo", "solo"),
]


@pytest.mark.parametrize(("case", "stopping", "entry"), ENGINES, ids=[e[0] for e in ENGINES])
def test_a_pod_that_stops_serving_interrupts_the_requests_of_its_engine(case, stopping, entry):
    assert routing.engine_entry(stopping) == entry


def test_an_error_answer_frees_the_pod_after_its_latency_and_a_good_one_after_its_duration():
    config = ClusterConfig(images={"engine:flaky": ImageBehaviour(error_rate=1.0, latency_ms=Span.fixed(200))})
    rng = random.Random(1)
    error = routing.send(1, 10.0, 30.0, pod("a", image="engine:flaky"), config, rng)
    assert (error.answer, error.busy, error.revision) == (routing.ERROR, 0.2, "r1")
    good = routing.send(2, 10.0, 30.0, pod("a"), config, rng)
    assert good.answer == routing.OK and good.busy == 30.0 and 80 <= good.latency_ms <= 300
    rejected = routing.send(3, 10.0, 30.0, None, config, rng)
    assert (rejected.result, rejected.end) == (routing.REJECTED, 10.0)
