"""Gang scheduling with Volcano: the PodGroups the controller derives (pure), their lifecycle on the
simulated cluster (created before the group's pods, deleted with the group), and the simulated
scheduler's all-or-nothing placement with its reason ("gang of 8 pods cannot be placed: 5 GPUs
free") in the pods, the planner's blocked reasons and the trace of ``tests/scenarios/gang-*.yaml``."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.core import gang, naming
from controller.core.ports import PODGROUP, NoRouter
from controller.core.reconcile import reconcile
from controller.core.spec import parse_modelserving
from controller.simcluster import physics
from controller.simcluster.memory.clock import VirtualClock
from controller.simcluster.memory.store import InMemoryStore
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.factories import container, modelserving, pod_template, role

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "gang-all-or-nothing.yaml"


IMAGE = "e:1"


def manifest(*, scheduler="volcano", replicas=1, annotations=None, gang_policy=None) -> dict:
    """chat in llm: a prefill role (2 instances of an entry and a worker, 2 GPUs each) and a decode
    role (1 instance, 4 GPUs): 5 pods and 12 GPUs per ServingGroup."""
    scheduled = {"schedulerName": scheduler} if scheduler is not None else {}
    return modelserving(
        name="chat",
        namespace="llm",
        uid="u-1",
        annotations=annotations,
        replicas=replicas,
        roles=[role("prefill", replicas=2, workers=1, image=IMAGE, gpus=2), role("decode", image=IMAGE, gpus=4)],
        gang_policy=gang_policy,
        **scheduled,
    )


def figures(pgs):
    return [
        (p["metadata"]["name"], p["spec"]["minMember"], p["spec"]["minResources"][naming.GPU_RESOURCE]) for p in pgs
    ]


@pytest.mark.parametrize(
    "kwargs, extra, expected",
    [
        pytest.param({"scheduler": None}, (), [], id="without schedulerName volcano there is no PodGroup"),
        pytest.param({"scheduler": "default-scheduler"}, (), [], id="the default scheduler gets no PodGroup"),
        pytest.param({}, (), [("chat-0", 5, "12")], id="one PodGroup per ServingGroup counts every pod of every role"),
        pytest.param(
            {"gang_policy": {"prefill": 1}},
            (),
            [("chat-0", 3, "8")],
            id="minRoleReplicas lowers a role's share of minMember and minResources",
        ),
        pytest.param(
            {"replicas": 1},
            ((1, "prefill", 0),),
            [("chat-0", 5, "12"), ("chat-1", 5, "12")],
            id="a group being scaled away keeps its PodGroup while it has pods",
        ),
        pytest.param(
            {"annotations": {gang.ANNOTATION_SCOPE: "Instance"}},
            (),
            [("chat-0-decode-0", 1, "4"), ("chat-0-prefill-0", 2, "4"), ("chat-0-prefill-1", 2, "4")],
            id="the Instance scope makes one PodGroup per role instance",
        ),
    ],
)
def test_podgroups_follow_the_spec(kwargs, extra, expected):
    assert figures(gang.podgroups(parse_modelserving(manifest(**kwargs)), extra)) == expected


def test_a_podgroup_is_owned_by_its_modelserving_and_names_its_queue():
    pg = gang.podgroups(parse_modelserving(manifest(annotations={gang.ANNOTATION_QUEUE: "llm-queue"})))[0]
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1" and pg["kind"] == "PodGroup"
    assert pg["spec"]["queue"] == "llm-queue"
    assert pg["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert pg["metadata"]["labels"][naming.LABEL_NAME] == "chat"


FREE = {"node-0": 4, "node-1": 1}


@pytest.mark.parametrize(
    "needs, min_placed, expected",
    [
        pytest.param([2, 2, 2], 3, None, id="a gang that does not fit as a whole is placed not at all"),
        pytest.param([2, 2, 2], 2, ["node-0", "node-0", None], id="a gang placed up to its minimum is placed"),
        pytest.param(
            [1, 1, 1, 1, 1], 5, ["node-0", "node-0", "node-0", "node-0", "node-1"], id="fitting pods fill nodes"
        ),
        pytest.param([5], 1, None, id="a pod larger than any node never fits"),
    ],
)
def test_place_gang_is_all_or_nothing(needs, min_placed, expected):
    assert physics.place_gang(FREE, needs, min_placed) == expected


def gang_pod(name: str, node: str | None = None, gpus: int = 1) -> dict:
    return {
        "metadata": {"name": name, "annotations": {physics.ANNOTATION_GANG: "g"}},
        "spec": {"schedulerName": "volcano", "nodeName": node, "containers": [container(IMAGE, gpus=gpus)]},
    }


@pytest.mark.parametrize(
    "members, free, expected",
    [
        pytest.param(
            [gang_pod(f"p{i}") for i in range(8)],
            {"n0": 3, "n1": 2},
            ({}, "gang of 8 pods cannot be placed: 5 GPUs free (the gang needs 8 nvidia.com/gpu at once)"),
            id="eight pods of one GPU on five free GPUs all wait and say why",
        ),
        pytest.param(
            [gang_pod(f"p{i}") for i in range(3)],
            {"n0": 8},
            ({}, "gang of 8 pods cannot be placed: 3 of 8 pods created"),
            id="a gang waits until minMember pods exist",
        ),
        pytest.param(
            [gang_pod(f"p{i}", "n0") for i in range(8)] + [gang_pod("p8")],
            {"n0": 0},
            ({}, None),
            id="once minMember run the rest are placed one by one",
        ),
        pytest.param(
            [gang_pod(f"p{i}") for i in range(8)],
            {"n0": 4, "n1": 4},
            ({f"p{i}": "n0" if i % 2 == 0 else "n1" for i in range(8)}, None),
            id="a gang that fits is bound as a whole",
        ),
    ],
)
def test_schedule_gang_decides_for_the_whole_podgroup(members, free, expected):
    assert physics.schedule_gang({"spec": {"minMember": 8}}, members, free) == expected


# -- lifecycle on the memory sim ------------------------------------------------------------------------


def test_podgroups_are_created_before_their_pods_and_deleted_with_the_group():
    clock = VirtualClock()
    store = InMemoryStore(clock)
    order: list[tuple[str, str, str]] = []
    store.add_listener(lambda ch: order.append((ch.kind, ch.type, ch.name)))
    store.create_modelserving(manifest(replicas=2))
    reconcile(store, NoRouter(), clock, "llm", "chat")
    pgs = {p["metadata"]["name"]: p for p in store.list_owned(PODGROUP, "llm", "chat")}
    assert sorted(pgs) == ["chat-0", "chat-1"]
    pods = store.list_pods("llm", "chat")
    assert pods
    for pod in pods:
        group = pod["metadata"]["labels"][naming.LABEL_GROUP_NAME]
        assert pod["metadata"]["annotations"][gang.ANNOTATION_GROUP_NAME] == group
        assert pod["spec"]["schedulerName"] == "volcano"
        assert order.index(("PodGroup", "ADDED", group)) < order.index(("Pod", "ADDED", pod["metadata"]["name"]))
    # Scale to one group: chat-1's PodGroup stays while its pods terminate, then goes with them.
    store.patch_modelserving("llm", "chat", {"spec": {"replicas": 1}})
    reconcile(store, NoRouter(), clock, "llm", "chat")
    assert "chat-1" in {p["metadata"]["name"] for p in store.list_owned(PODGROUP, "llm", "chat")}
    for pod in store.list_pods("llm", "chat"):
        if pod["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == "1":
            store.remove_pod("llm", pod["metadata"]["name"], uid=pod["metadata"]["uid"])
    reconcile(store, NoRouter(), clock, "llm", "chat")
    assert [p["metadata"]["name"] for p in store.list_owned(PODGROUP, "llm", "chat")] == ["chat-0"]
    # A spec change that moves minMember is applied to the stored PodGroup.
    store.patch_modelserving("llm", "chat", {"spec": {"template": {"gangPolicy": {"minRoleReplicas": {"prefill": 1}}}}})
    reconcile(store, NoRouter(), clock, "llm", "chat")
    assert store.list_owned(PODGROUP, "llm", "chat")[0]["spec"]["minMember"] == 3
    store.delete_modelserving("llm", "chat")
    assert store.list_owned(PODGROUP, "llm", "chat") == []


def test_a_modelserving_not_scheduled_by_volcano_gets_no_podgroup_and_plain_pods():
    clock = VirtualClock()
    store = InMemoryStore(clock)
    store.create_modelserving(manifest(scheduler=None))
    reconcile(store, NoRouter(), clock, "llm", "chat")
    assert store.list_owned(PODGROUP, "llm", "chat") == []
    for pod in store.list_pods("llm", "chat"):
        assert gang.ANNOTATION_GROUP_NAME not in (pod["metadata"].get("annotations") or {})


# -- the scenario -----------------------------------------------------------------------------------------


def test_the_gang_scenario_places_each_servinggroup_whole_or_not_at_all():
    runner = Runner(load_scenario(str(SCENARIO)))
    bound_per_gang: dict[str, set[str]] = {}
    partial: list[tuple[float, str, int]] = []

    def watch(change):
        if change.kind != "Pod" or change.obj is None or change.old is None:
            return
        if (change.obj.get("spec") or {}).get("nodeName") and not (change.old.get("spec") or {}).get("nodeName"):
            group = physics.gang_of(change.obj)
            bound = bound_per_gang.setdefault(group, set())
            bound.add(change.name)
            # The scheduler binds a gang within one instant; by the next callback of the loop the
            # gang is complete. Record counts that are not a whole gang after the binding instant.
            runner.loop.call_later(0.001, lambda g=group: _check(g))

    def _check(group):
        count = len(bound_per_gang[group])
        if count % 8:
            partial.append((runner.loop.now(), group, count))

    runner.store.add_listener(watch)
    trace = runner.run()
    assert partial == []
    assert trace["converged"] is True
    assert {g: len(b) for g, b in bound_per_gang.items()} == {"gang-0": 8, "gang-1": 8}
    reason = "group 1 pod unschedulable: gang of 8 pods cannot be placed: 5 GPUs free"
    waiting = [f["t"] for f in trace["frames"] if any(b["reason"].startswith(reason) for b in f["blocked"])]
    assert waiting and max(waiting) < 200  # until the three nodes are added at t=200
    for frame in trace["frames"]:
        states = {i["state"] for i in frame["instances"] if i["group"] == 1}
        # Both instances of group 1 leave Pending together: never one placed and one waiting.
        assert not ("Pending" in states and len(states) > 1), frame
    assert trace["convergedAt"] > 200


def test_a_surge_group_gets_its_podgroup_before_its_pods():
    clock = VirtualClock()
    store = InMemoryStore(clock)
    obj = manifest(replicas=1)
    obj["spec"]["rolloutStrategy"] = {
        "type": "ServingGroupRollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1},
    }
    store.create_modelserving(obj)
    reconcile(store, NoRouter(), clock, "llm", "chat")
    for pod in store.list_pods("llm", "chat"):
        ready = {"type": "Ready", "status": "True"}
        store.write_pod_status(
            "llm", pod["metadata"]["name"], {"phase": "Running", "conditions": [ready]}, uid=pod["metadata"]["uid"]
        )
    order: list[tuple[str, str, str]] = []
    store.add_listener(lambda ch: order.append((ch.kind, ch.type, ch.name)))
    store.patch_modelserving(
        "llm",
        "chat",
        {
            "spec": {
                "template": {
                    "roles": [
                        {**r, "entryTemplate": pod_template(IMAGE, gpus=3)} if r["name"] == "decode" else r
                        for r in obj["spec"]["template"]["roles"]
                    ]
                }
            }
        },
    )
    reconcile(store, NoRouter(), clock, "llm", "chat")
    surge = [n for kind, t, n in order if kind == "Pod" and t == "ADDED" and n.startswith("chat-1-")]
    assert surge, order  # the rollout surged into group 1
    assert order.index(("PodGroup", "ADDED", "chat-1")) < order.index(("Pod", "ADDED", surge[0]))
