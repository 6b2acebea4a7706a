"""deploy/rbac.yaml enforced by the API double: the controller's ServiceAccount can run whole
rollouts (reconcile passes, the watch, the Lease) and the web's can do what the dashboard does,
while each is refused (403, ``Forbidden``) what belongs to the other."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from apiserver_double import MODELSERVINGS, RESOURCES, RunningApiServer
from crd_jsonschema import crd_schema, modelserving_causes
from manifests import DEPLOY, by_kind
from test_k8s_cluster_adapter import NS, manifest, pod
from test_k8s_rollout import Clock, converged_on, drive, modelserving

from controller.core import naming
from controller.k8s import Forbidden, KubernetesCluster, LeaseElector
from controller.k8s.watch import ClusterWatcher

WEB = "system:serviceaccount:rolloutui:rolloutui-web"
CONTROLLER = "system:serviceaccount:rolloutui:rolloutui-controller"


def controls_binding(namespace: str) -> dict[str, Any]:
    """The RoleBinding that lets the web account run the controls in ``namespace``: what
    ``kubectl -n NAMESPACE create rolebinding rolloutui-web-controls --clusterrole=rolloutui-web-controls
    --serviceaccount=rolloutui:rolloutui-web`` creates (deploy/README.md), and what the chart renders
    for each entry of rbac.controlNamespaces (test_helm_chart.py compares them)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "rolloutui-web-controls", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "rolloutui-web-controls"},
        "subjects": [{"kind": "ServiceAccount", "name": "rolloutui-web", "namespace": "rolloutui"}],
    }


# The command deploy/README.md and deploy/rbac.yaml give for a namespace the dashboard manages.
DOCUMENTED_BINDING_COMMAND = (
    "kubectl -n {namespace} create rolebinding rolloutui-web-controls"
    " --clusterrole=rolloutui-web-controls --serviceaccount=rolloutui:rolloutui-web"
)


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl renders the documented command")
def test_the_documented_kubectl_command_creates_exactly_the_controls_binding():
    command = DOCUMENTED_BINDING_COMMAND.format(namespace="team-a").split() + ["--dry-run=client", "-o", "yaml"]
    made = yaml.safe_load(subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout)
    made["metadata"].pop("creationTimestamp", None)
    assert made == controls_binding("team-a")
    readme = (DEPLOY / "README.md").read_text()
    assert " ".join(DOCUMENTED_BINDING_COMMAND.format(namespace="team-a").split()[3:]) in " ".join(readme.split())


class RbacFromManifests:
    """Kubernetes RBAC over the roles and bindings of deploy/ (rules are allow-only, unioned), and
    ``extra`` objects applied beside them (a namespace's controls binding)."""

    def __init__(self, extra: list[dict[str, Any]] = ()) -> None:
        def of_kind(kind: str) -> list[dict[str, Any]]:
            return by_kind(kind) + [doc for doc in extra if doc["kind"] == kind]

        cluster_roles = {r["metadata"]["name"]: r["rules"] for r in of_kind("ClusterRole")}
        roles = {(r["metadata"]["namespace"], r["metadata"]["name"]): r["rules"] for r in of_kind("Role")}
        # user -> [(namespace or None for every namespace, rule)]
        self.grants: dict[str, list[tuple[str | None, dict[str, Any]]]] = {}
        for binding in of_kind("ClusterRoleBinding"):
            for user in self._users(binding):
                self.grants.setdefault(user, []).extend((None, r) for r in cluster_roles[binding["roleRef"]["name"]])
        for binding in of_kind("RoleBinding"):
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


MANAGED = NS  # the namespace the tests' controls binding names
UNMANAGED = "team-b"


def _server(extra: list[dict[str, Any]]) -> RunningApiServer:
    return RunningApiServer(
        RESOURCES,
        {MODELSERVINGS},
        {MODELSERVINGS: modelserving_causes},
        {MODELSERVINGS: crd_schema()},
        authorizer=RbacFromManifests(extra),
    )


@pytest.fixture
def rbac_server() -> Iterator[RunningApiServer]:
    with _server([]) as server:
        yield server


@pytest.fixture
def managing_server() -> Iterator[RunningApiServer]:
    """deploy/'s RBAC plus the controls binding of MANAGED."""
    with _server([controls_binding(MANAGED)]) as server:
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


def test_the_webs_account_reads_what_the_dashboard_shows_in_every_namespace(as_web, admin):
    operator = KubernetesCluster(admin)
    operator.create_modelserving(manifest())
    operator.create_pod(pod("chat-0-decode-0-0"))
    web = KubernetesCluster(as_web)
    assert [m["metadata"]["name"] for m in web.list_modelservings()] == ["chat"]
    assert [m["metadata"]["name"] for m in web.list_modelservings(NS)] == ["chat"]
    assert web.get_modelserving(NS, "chat")["metadata"]["name"] == "chat"
    assert [p["metadata"]["name"] for p in web.list_pods(NS, "chat")] == ["chat-0-decode-0-0"]
    assert web.get_pod(NS, "chat-0-decode-0-0")["metadata"]["name"] == "chat-0-decode-0-0"
    assert web.list_revisions(NS, "chat") == []


def test_without_a_controls_binding_the_webs_account_changes_nothing(as_web, admin):
    # Hardening finding: the web account could patch ModelServings, InferenceServices and Deployments
    # in every namespace. deploy/ alone binds the controls' writes nowhere.
    KubernetesCluster(admin).create_modelserving(manifest())
    with pytest.raises(Forbidden, match='cannot patch resource "modelservings"'):
        KubernetesCluster(as_web).patch_modelserving(NS, "chat", {"spec": {"paused": True}})


def test_in_a_managed_namespace_the_webs_account_runs_the_controls_and_nowhere_else(managing_server):
    admin, as_web = managing_server.api_client(), managing_server.api_client(WEB)
    operator = KubernetesCluster(admin)
    for namespace in (MANAGED, UNMANAGED):
        body = manifest()
        body["metadata"]["namespace"] = namespace
        operator.create_modelserving(body)
    web = KubernetesCluster(as_web)
    ms = web.get_modelserving(MANAGED, "chat")
    paused = web.patch_modelserving(
        MANAGED, "chat", {"spec": {"paused": True}}, resource_version=ms["metadata"]["resourceVersion"]
    )
    assert paused["spec"]["paused"] is True
    assert web.get_modelserving(UNMANAGED, "chat")["metadata"]["namespace"] == UNMANAGED  # read: anywhere
    with pytest.raises(Forbidden, match=f'in the namespace "{UNMANAGED}"'):
        web.patch_modelserving(UNMANAGED, "chat", {"spec": {"paused": True}})
    admin.close()
    as_web.close()


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

    assert subject_may(as_web, user=WEB, groups=[], verb="get", namespace=NS) is True
    # The answer is the cluster's RBAC: deploy/ alone lets the web account patch nowhere.
    assert subject_may(as_web, user=WEB, groups=[], verb="patch", namespace=NS) is False
    assert subject_may(as_web, user="dash:alice", groups=[], verb="get", namespace=NS) is False
    with pytest.raises(Forbidden, match='cannot create resource "subjectaccessreviews"'):
        subject_may(as_controller, user="dash:alice", groups=[], verb="get", namespace=NS)


def test_the_dashboards_pause_goes_through_in_a_managed_namespace_and_is_refused_and_audited_elsewhere(
    managing_server, monkeypatch, operator_client, db
):
    import json

    from rolloutui.models import AuditRecord
    from rolloutui.services import controls, state

    admin = managing_server.api_client()
    operator = KubernetesCluster(admin)
    for namespace in (MANAGED, UNMANAGED):
        body = manifest()
        body["metadata"]["namespace"] = namespace
        operator.create_modelserving(body)
    web = KubernetesCluster(managing_server.api_client(WEB))
    # The web process's services, on the web account (as the web pod runs them).
    monkeypatch.setattr(controls, "get_cluster", lambda: web)
    monkeypatch.setattr(state, "get_cluster", lambda: web)
    monkeypatch.setattr("rolloutui.services.controls.enqueue.reconcile_soon", lambda ns, name: None)
    monkeypatch.setattr("rolloutui.api.views.state.get_state", lambda ns, name: {})

    def pause(namespace: str):
        return operator_client.post(
            f"/api/modelservings/{namespace}/chat/pause", json.dumps({"reason": "r"}), content_type="application/json"
        )

    assert pause(MANAGED).status_code == 200
    refused = pause(UNMANAGED)
    assert refused.status_code == 502 and refused.json()["cluster"] == "Forbidden"
    results = {r.namespace: r.result for r in AuditRecord.objects.filter(action="pause")}
    assert results == {MANAGED: "ok", UNMANAGED: "error"}
    admin.close()
