"""deploy/rbac.yaml enforced by the API double: the controller's ServiceAccount can run whole
rollouts (reconcile passes, the watch, the Lease) and the web's can do what the dashboard does,
while each is refused (403, ``Forbidden``) what belongs to the other."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer
from crd_jsonschema import crd_schema, modelserving_causes
from manifests import by_kind
from test_k8s_cluster_adapter import NS, manifest, pod
from test_k8s_rollout import Clock, converged_on, drive, modelserving

from controller.core import naming
from controller.k8s import Forbidden, KubernetesCluster, LeaseElector
from controller.k8s.watch import ClusterWatcher

WEB = "system:serviceaccount:rolloutui:rolloutui-web"
CONTROLLER = "system:serviceaccount:rolloutui:rolloutui-controller"


class RbacFromManifests:
    """Kubernetes RBAC over the roles and bindings of deploy/ (rules are allow-only, unioned)."""

    def __init__(self) -> None:
        cluster_roles = {r["metadata"]["name"]: r["rules"] for r in by_kind("ClusterRole")}
        roles = {(r["metadata"]["namespace"], r["metadata"]["name"]): r["rules"] for r in by_kind("Role")}
        # user -> [(namespace or None for every namespace, rule)]
        self.grants: dict[str, list[tuple[str | None, dict[str, Any]]]] = {}
        for binding in by_kind("ClusterRoleBinding"):
            for user in self._users(binding):
                self.grants.setdefault(user, []).extend((None, r) for r in cluster_roles[binding["roleRef"]["name"]])
        for binding in by_kind("RoleBinding"):
            ns = binding["metadata"]["namespace"]
            ref = binding["roleRef"]
            rules = roles[(ns, ref["name"])] if ref["kind"] == "Role" else cluster_roles[ref["name"]]
            for user in self._users(binding):
                self.grants.setdefault(user, []).extend((ns, r) for r in rules)

    @staticmethod
    def _users(binding: dict[str, Any]) -> list[str]:
        return [
            f"system:serviceaccount:{s['namespace']}:{s['name']}"
            for s in binding["subjects"]
            if s["kind"] == "ServiceAccount"
        ]

    def __call__(self, user, verb, group, resource, namespace, name) -> bool:
        for scope, rule in self.grants.get(user, []):
            if scope is not None and scope != namespace:
                continue
            if group not in rule["apiGroups"] or resource not in rule["resources"] or verb not in rule["verbs"]:
                continue
            if rule.get("resourceNames") and name not in rule["resourceNames"]:
                continue
            return True
        return False


@pytest.fixture
def rbac_server() -> Iterator[RunningApiServer]:
    with RunningApiServer(
        RESOURCES,
        {MODELSERVINGS},
        {MODELSERVINGS: modelserving_causes},
        {MODELSERVINGS: crd_schema()},
        authorizer=RbacFromManifests(),
    ) as server:
        yield server


@pytest.fixture
def admin(rbac_server):
    client = rbac_server.api_client()
    yield client
    client.close()


@pytest.fixture
def as_controller(rbac_server):
    client = rbac_server.api_client(CONTROLLER)
    yield client
    client.close()


@pytest.fixture
def as_web(rbac_server):
    client = rbac_server.api_client(WEB)
    yield client
    client.close()


def test_the_controllers_account_runs_a_whole_rollout(admin, as_controller):
    import kubernetes

    # An operator (admin here) creates and changes the ModelServing; the controller does the rest.
    operator = KubernetesCluster(admin)
    controller = KubernetesCluster(as_controller)
    kubelet = kubernetes.client.CoreV1Api(admin)
    operator.create_modelserving(
        modelserving({"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}})
    )
    clock = Clock()
    drive(controller, kubelet, clock, until=lambda: converged_on(controller, "engine:v1"))
    operator.patch_modelserving(NS, "chat", {"spec": {"template": modelserving({}, "engine:v2")["spec"]["template"]}})
    drive(controller, kubelet, clock, until=lambda: converged_on(controller, "engine:v2"))


def test_the_controllers_account_watches_and_holds_the_lease(as_controller, admin):
    KubernetesCluster(admin).create_modelserving(manifest())
    seen: list[tuple[str, str]] = []
    got = threading.Event()

    def enqueue(ns: str, name: str) -> None:
        seen.append((ns, name))
        got.set()

    watcher = ClusterWatcher(as_controller, enqueue).start()
    try:
        assert got.wait(10)
        assert (NS, "chat") in seen
        assert watcher.stats["modelservings"]["errors"] == 0 and watcher.stats["pods"]["errors"] == 0
    finally:
        watcher.stop(timeout=5)
    elector = LeaseElector(as_controller, "rolloutui", "rolloutui-controller", identity="me")
    assert elector.try_acquire_or_renew() is True
    elector.release()
    # get and update only on rolloutui-controller (create cannot be limited by name in RBAC).
    other_lease = LeaseElector(as_controller, "rolloutui", "someone-elses-lease", identity="me")
    with pytest.raises(Forbidden, match='cannot get resource "leases"'):
        other_lease.try_acquire_or_renew()
    elsewhere = LeaseElector(as_controller, "kube-system", "rolloutui-controller", identity="me")
    with pytest.raises(Forbidden, match='in the namespace "kube-system"'):
        elsewhere.try_acquire_or_renew()


def test_the_controllers_account_may_patch_a_spec_as_the_analysis_and_the_autoscaler_do(as_controller, admin):
    KubernetesCluster(admin).create_modelserving(manifest())
    controller = KubernetesCluster(as_controller)
    # What reconcile._apply_spec_patch sends when the canary analysis pauses a failing canary.
    cause = {naming.ANNOTATION_CHANGE_CAUSE: "analysis: pause: canary error rate 30.0% is above the limit 5.0%"}
    paused = controller.patch_modelserving(NS, "chat", {"spec": {"paused": True}, "metadata": {"annotations": cause}})
    assert paused["spec"]["paused"] is True
    assert controller.patch_modelserving(NS, "chat", {"spec": {"replicas": 3}})["spec"]["replicas"] == 3


def test_the_webs_account_does_what_the_dashboard_does(as_web, admin):
    operator = KubernetesCluster(admin)
    operator.create_modelserving(manifest())
    operator.create_pod(pod("chat-0-decode-0-0"))
    web = KubernetesCluster(as_web)
    assert [m["metadata"]["name"] for m in web.list_modelservings()] == ["chat"]
    assert [m["metadata"]["name"] for m in web.list_modelservings(NS)] == ["chat"]
    ms = web.get_modelserving(NS, "chat")
    assert [p["metadata"]["name"] for p in web.list_pods(NS, "chat")] == ["chat-0-decode-0-0"]
    assert web.get_pod(NS, "chat-0-decode-0-0")["metadata"]["name"] == "chat-0-decode-0-0"
    assert web.list_revisions(NS, "chat") == []
    paused = web.patch_modelserving(
        NS, "chat", {"spec": {"paused": True}}, resource_version=ms["metadata"]["resourceVersion"]
    )
    assert paused["spec"]["paused"] is True


ESCALATIONS = {
    "create a pod": lambda c: c.create_pod(pod("chat-0-decode-0-9")),
    "delete a pod": lambda c: c.delete_pod(NS, "chat-0-decode-0-0"),
    "patch a pod": lambda c: c.patch_pod(NS, "chat-0-decode-0-0", {"metadata": {"annotations": {"x": "y"}}}),
    "create a modelserving": lambda c: c.create_modelserving(manifest("other")),
    "delete a modelserving": lambda c: c.delete_modelserving(NS, "chat"),
    "write a status": lambda c: c.replace_modelserving_status(NS, "chat", {"phase": "x"}, resource_version="1"),
    "delete a revision": lambda c: c.delete_revision(NS, "chat-abc"),
}


@pytest.mark.parametrize("case", list(ESCALATIONS), ids=str)
def test_the_webs_account_is_refused_everything_that_changes_pods_or_creates_objects(case, as_web, admin):
    operator = KubernetesCluster(admin)
    operator.create_modelserving(manifest())
    operator.create_pod(pod("chat-0-decode-0-0"))
    with pytest.raises(Forbidden, match=f'User "{WEB}" cannot'):
        ESCALATIONS[case](KubernetesCluster(as_web))


def test_nobody_may_create_or_delete_modelservings_any_more(as_controller, admin):
    KubernetesCluster(admin).create_modelserving(manifest())
    for client in (as_controller,):
        with pytest.raises(Forbidden, match='cannot delete resource "modelservings"'):
            KubernetesCluster(client).delete_modelserving(NS, "chat")
    assert naming.PLURAL == "modelservings"


def test_the_webs_account_may_ask_access_reviews_and_the_controllers_may_not(as_web, as_controller):
    # ROLLOUTUI_K8S_ACCESS_REVIEW=1 asks with the web's account; deploy/ did not let it ask.
    from controller.k8s.access import subject_may

    assert subject_may(as_web, user=WEB, groups=[], verb="patch", namespace=NS) is True
    assert subject_may(as_web, user="dash:alice", groups=[], verb="get", namespace=NS) is False
    with pytest.raises(Forbidden, match='cannot create resource "subjectaccessreviews"'):
        subject_may(as_controller, user="dash:alice", groups=[], verb="get", namespace=NS)
