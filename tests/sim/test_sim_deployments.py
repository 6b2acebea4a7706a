"""The simulated ReplicaSet and Deployment controllers, driven pass by pass against the in-memory
API server (no physics: the test decides when a pod becomes Ready). Table tests for each rule,
and a property: whatever order pods become Ready in, a RollingUpdate stays within its budgets and
finishes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core.kserve import apps
from controller.simcluster import deployments as kube
from controller.simcluster.memory.clock import VirtualClock
from controller.simcluster.memory.store import InMemoryStore
from controller.simcluster.objects import DEPLOYMENT, REPLICASET, rfc3339

NS = "default"
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


class Cluster:
    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.store = InMemoryStore(self.clock, seed=1)

    def deployment(self, replicas=4, surge=None, unavailable=None, image="engine:v1", **spec) -> dict:
        rolling = {}
        if surge is not None:
            rolling["maxSurge"] = surge
        if unavailable is not None:
            rolling["maxUnavailable"] = unavailable
        body = {
            "apiVersion": "apps/v1",
            "kind": DEPLOYMENT,
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": image}]},
                },
                "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                **spec,
            },
        }
        return self.store.create_object(body)

    def set_image(self, image: str) -> None:
        containers = [{"name": "c", "image": image}]
        self.store.patch_object(DEPLOYMENT, NS, "web", {"spec": {"template": {"spec": {"containers": containers}}}})

    def patch(self, spec: dict) -> None:
        self.store.patch_object(DEPLOYMENT, NS, "web", {"spec": spec})

    def sync_deployment(self):
        return kube.sync_deployment(self.store, NS, "web", self.clock.now())

    def sync_replica_sets(self) -> None:
        for rs in self.store.list_objects(REPLICASET, NS):
            kube.sync_replicaset(self.store, NS, rs["metadata"]["name"], self.clock.now())

    def settle(self, passes: int = 6) -> None:
        for _ in range(passes):
            self.sync_deployment()
            self.sync_replica_sets()

    def pods(self) -> list[dict]:
        return [p for p in self.store.all_pods() if apps.is_active(p)]

    def make_ready(self, pods=None) -> None:
        for p in pods if pods is not None else self.pods():
            if not apps.is_ready(p):
                self.store.write_pod_status(NS, p["metadata"]["name"], READY)

    def replica_sets(self) -> dict[str, dict]:
        return {apps.revision_of(rs): rs for rs in self.store.list_objects(REPLICASET, NS)}

    def status(self) -> dict:
        return self.store.get_object(DEPLOYMENT, NS, "web")["status"]

    def progressing(self) -> dict:
        return apps.condition(self.store.get_object(DEPLOYMENT, NS, "web"), "Progressing") or {}

    def advance(self, seconds: float) -> None:
        self.clock._advance_to(self.clock.now() + seconds)


def running(replicas=4, **kwargs) -> Cluster:
    c = Cluster()
    c.deployment(replicas, **kwargs)
    c.settle()
    c.make_ready()
    c.settle()
    return c


def test_a_new_deployment_gets_one_replica_set_with_revision_1_and_its_pods():
    c = running(3)
    (rs,) = c.store.list_objects(REPLICASET, NS)
    assert apps.revision_of(rs) == 1
    assert rs["metadata"]["name"] == f"web-{rs['metadata']['labels']['pod-template-hash']}"
    assert len(c.pods()) == 3
    assert all(p["metadata"]["name"].startswith(rs["metadata"]["name"] + "-") for p in c.pods())
    assert c.status()["availableReplicas"] == 3
    assert c.progressing()["reason"] == "NewReplicaSetAvailable"


def test_the_pass_that_creates_the_new_replica_set_sizes_it_within_the_surge_and_scales_old_ones_down():
    c = running(8)  # 25%/25%: surge 2, unavailable 2
    c.set_image("engine:v2")
    c.sync_deployment()
    rss = c.replica_sets()
    assert (apps.replicas_of(rss[2]), apps.replicas_of(rss[1])) == (2, 6)


def test_a_pass_that_scales_the_new_replica_set_up_does_nothing_else():
    c = running(8)
    c.set_image("engine:v2")
    c.sync_deployment()
    c.sync_replica_sets()
    c.make_ready([p for p in c.pods() if p["metadata"]["name"].startswith(c.replica_sets()[2]["metadata"]["name"])])
    c.sync_replica_sets()
    c.sync_deployment()  # 6 old + 2 new available: the new one grows to 4, the old one stays at 6
    rss = c.replica_sets()
    assert (apps.replicas_of(rss[2]), apps.replicas_of(rss[1])) == (4, 6)
    c.sync_deployment()  # the next pass scales the old one down: 8 available - floor 6 = 2
    rss = c.replica_sets()
    assert (apps.replicas_of(rss[2]), apps.replicas_of(rss[1])) == (4, 4)


def test_a_replica_set_deletes_not_ready_pods_first():
    c = running(4)
    c.set_image("engine:v2")
    c.settle()
    (new,) = [rs for rs in c.store.list_objects(REPLICASET, NS) if apps.revision_of(rs) == 2]
    new_pods = [p for p in c.pods() if p["metadata"]["name"].startswith(new["metadata"]["name"])]
    c.make_ready(new_pods[:1])
    c.sync_replica_sets()
    c.store.patch_object(REPLICASET, NS, new["metadata"]["name"], {"spec": {"replicas": 1}})
    kube.sync_replicaset(c.store, NS, new["metadata"]["name"], 0.0)
    left = [p for p in c.pods() if p["metadata"]["name"].startswith(new["metadata"]["name"])]
    assert [p["metadata"]["name"] for p in left] == [new_pods[0]["metadata"]["name"]]


def test_a_failed_pod_is_replaced():
    c = running(2)
    victim = c.pods()[0]
    c.store.write_pod_status(NS, victim["metadata"]["name"], {"phase": "Failed", "conditions": []})
    c.sync_replica_sets()
    names = {p["metadata"]["name"] for p in c.pods()}
    assert victim["metadata"]["name"] not in names and len(names) == 2


def test_a_paused_deployment_takes_no_rollout_step_and_resuming_continues():
    c = running(4)
    c.patch({"paused": True})
    c.set_image("engine:v2")
    c.settle()
    assert list(c.replica_sets()) == [1]  # not even the new ReplicaSet
    assert c.progressing()["reason"] == "DeploymentPaused"
    c.patch({"paused": False})
    c.settle()
    assert c.progressing()["reason"] in ("DeploymentResumed", "NewReplicaSetCreated", "ReplicaSetUpdated")
    assert 2 in c.replica_sets()


def test_going_back_to_an_older_template_reuses_its_replica_set_with_the_next_revision():
    c = running(2)
    c.set_image("engine:v2")
    for _ in range(6):
        c.settle()
        c.make_ready()
    c.set_image("engine:v1")
    c.settle()
    rss = c.replica_sets()
    assert sorted(rss) == [2, 3]
    assert rss[3]["spec"]["template"]["spec"]["containers"][0]["image"] == "engine:v1"
    assert (
        c.store.get_object(DEPLOYMENT, NS, "web")["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    )


def test_old_replica_sets_beyond_the_revision_history_limit_are_deleted_oldest_first():
    c = running(1, revisionHistoryLimit=2)
    for version in range(2, 7):
        c.set_image(f"engine:v{version}")
        for _ in range(4):
            c.settle()
            c.make_ready()
    assert sorted(c.replica_sets()) == [4, 5, 6]  # 2 old ones kept at 0, plus the current one


def test_no_progress_for_the_deadline_is_reported_as_progress_deadline_exceeded():
    c = running(2, surge=1, unavailable=0, progressDeadlineSeconds=60)
    c.set_image("engine:v2")
    requeue = None
    for _ in range(3):
        c.sync_replica_sets()
        requeue = c.sync_deployment()
    assert c.progressing()["status"] == "True" and 59 <= requeue <= 62
    c.advance(61.5)
    assert c.sync_deployment() is None
    cond = c.progressing()
    assert (cond["status"], cond["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert cond["lastUpdateTime"] == rfc3339(61.5)
    # Progress clears it.
    c.make_ready()
    c.settle()
    assert c.progressing()["reason"] in ("ReplicaSetUpdated", "NewReplicaSetAvailable")


@pytest.mark.parametrize("replicas,surge,unavailable", [(8, None, None), (4, 0, 1), (4, 1, 0), (5, "50%", "20%")])
def test_a_rollout_finishes_with_only_the_new_replica_set_holding_pods(replicas, surge, unavailable):
    c = running(replicas, surge=surge, unavailable=unavailable)
    c.set_image("engine:v2")
    for _ in range(30):
        c.settle(2)
        c.make_ready()
    rss = c.replica_sets()
    assert apps.replicas_of(rss[2]) == replicas and apps.replicas_of(rss[1]) == 0
    assert apps.is_complete(c.store.get_object(DEPLOYMENT, NS, "web"))


budget = st.one_of(st.integers(0, 3), st.sampled_from(["0%", "10%", "25%", "50%", "100%"]))


@settings(max_examples=60, deadline=None)
@given(
    replicas=st.integers(1, 9),
    surge=budget,
    unavailable=budget,
    steps=st.lists(
        st.tuples(st.sampled_from(["deployment", "replicasets", "ready"]), st.integers(0, 50)), max_size=120
    ),
)
def test_whatever_order_pods_become_ready_a_rollout_stays_within_its_budgets_and_finishes(
    replicas, surge, unavailable, steps
):
    c = running(replicas, surge=surge, unavailable=unavailable)
    max_surge, max_unavailable = apps.fenceposts(c.store.get_object(DEPLOYMENT, NS, "web"))
    c.set_image("engine:v2")

    def check():
        pods = c.pods()
        assert len(pods) <= replicas + max_surge
        assert sum(1 for p in pods if apps.is_ready(p)) >= replicas - max_unavailable

    for what, pick in steps:
        if what == "deployment":
            c.sync_deployment()
        elif what == "replicasets":
            c.sync_replica_sets()
        else:
            waiting = [p for p in c.pods() if not apps.is_ready(p)]
            if waiting:
                c.make_ready([waiting[pick % len(waiting)]])
        check()
    for _ in range(4 * replicas + 10):
        c.settle(1)
        check()
        c.make_ready()
        check()
    assert apps.is_complete(c.store.get_object(DEPLOYMENT, NS, "web"))
    assert {p["spec"]["containers"][0]["image"] for p in c.pods()} == {"engine:v2"}


def test_kserve_removes_from_the_deployment_what_the_spec_no_longer_has():
    from controller.simcluster.kserve import controller as kserve_controller
    from controller.simcluster.objects import INFERENCESERVICE

    c = Cluster()
    c.store.create_object(kserve_controller.config_map('{"defaultDeploymentMode": "Standard"}'))
    containers = [{"name": "kserve-container", "image": "engine:v1", "env": [{"name": "A", "value": "1"}]}]
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": INFERENCESERVICE,
        "metadata": {"name": "llm", "namespace": NS},
        "spec": {"predictor": {"containers": containers}},
    }
    c.store.create_object(isvc)
    kserve_controller.sync_inferenceservice(c.store, NS, "llm", 0.0)
    c.store.patch_object(
        INFERENCESERVICE,
        NS,
        "llm",
        {"spec": {"predictor": {"containers": [{"name": "kserve-container", "image": "engine:v1"}]}}},
    )
    kserve_controller.sync_inferenceservice(c.store, NS, "llm", 0.0)
    (container,) = c.store.get_object(DEPLOYMENT, NS, "llm-predictor")["spec"]["template"]["spec"]["containers"]
    assert container == {"name": "kserve-container", "image": "engine:v1"}
