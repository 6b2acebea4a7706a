"""Schema checks of everything in deploy/, with no cluster and no downloads.

- Built-in kinds are validated against the Kubernetes OpenAPI models shipped in the ``kubernetes``
  client (pydantic models: required fields enforced, unknown fields rejected).
- The CRD's openAPIV3Schema is checked against the structural-schema rules the API server applies,
  then used (as JSON Schema, via ``jsonschema``) to validate every Kthena example and every
  scenario's ModelServing, and to reject invalid ones; its CEL rules are evaluated with cel-python.
"""

from __future__ import annotations

import copy
import functools
import glob
import os
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from crd_jsonschema import crd, crd_schema, schema_errors
from crd_structural import schema_violations
from manifests import DEPLOY, ROOT, by_kind, containers_of, documents, manifest_files

from controller.core import naming

KTHENA_EXAMPLES = sorted(glob.glob(str(ROOT / "examples" / "kthena" / "*.yaml")))
# The shipped scenarios and the test suite's own: a ModelServing the simulator runs must also be one a
# real API server stores whole.
SCENARIOS = sorted(
    glob.glob(str(ROOT / "examples" / "scenarios" / "*.yaml")) + glob.glob(str(ROOT / "tests" / "scenarios" / "*.yaml"))
)

MODELS = {
    "Namespace": kubernetes.client.V1Namespace,
    "ServiceAccount": kubernetes.client.V1ServiceAccount,
    "ClusterRole": kubernetes.client.V1ClusterRole,
    "ClusterRoleBinding": kubernetes.client.V1ClusterRoleBinding,
    "Role": kubernetes.client.V1Role,
    "RoleBinding": kubernetes.client.V1RoleBinding,
    "ConfigMap": kubernetes.client.V1ConfigMap,
    "Secret": kubernetes.client.V1Secret,
    "Deployment": kubernetes.client.V1Deployment,
    "Service": kubernetes.client.V1Service,
    "NetworkPolicy": kubernetes.client.V1NetworkPolicy,
    "CustomResourceDefinition": kubernetes.client.V1CustomResourceDefinition,
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}


# ---------------------------------------------------------------------------------------- built-ins


def test_every_manifest_parses_and_names_its_api_version_kind_and_metadata():
    docs = documents()
    assert len(docs) >= 12
    for path, doc in docs:
        where = f"{path.relative_to(ROOT)}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        assert doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"), where
        if doc["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in doc["metadata"], where
        else:
            assert doc["metadata"].get("namespace") == "rolloutui", where


@pytest.mark.parametrize(
    "path_doc", documents(), ids=lambda pd: f"{pd[0].name}:{pd[1]['kind']}/{pd[1]['metadata']['name']}"
)
def test_every_manifest_matches_the_kubernetes_openapi_model_of_its_kind(path_doc):
    path, doc = path_doc
    model = MODELS.get(doc["kind"])
    assert model is not None, f"{path.name}: no model registered for kind {doc['kind']}"
    obj = model.model_validate(doc)  # raises on a missing required field or an unknown one
    assert obj.kind == doc["kind"]
    # The same object also deserializes the way the client reads API responses.
    again = kubernetes.client.ApiClient().sanitize_for_serialization(obj)
    assert again["metadata"]["name"] == doc["metadata"]["name"]


def test_the_kustomization_lists_every_manifest_and_nothing_missing():
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    listed = {DEPLOY / r for r in kustomization["resources"]}
    assert listed == set(manifest_files())
    assert kustomization["namespace"] == "rolloutui"
    assert any(img["name"] == "rolloutui" for img in kustomization["images"])


def test_deployments_select_their_own_pods_and_every_container_has_resources():
    for deployment in by_kind("Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items(), deployment["metadata"]["name"]
        for container in containers_of(deployment):
            res = container.get("resources") or {}
            assert res.get("requests", {}).get("memory") and res.get("limits", {}).get("memory"), container["name"]
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, container["name"]


def test_the_web_and_worker_run_one_image_with_the_kubernetes_backend_and_the_database_secret():
    config = next(c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "rolloutui-config")
    assert config["data"]["ROLLOUTUI_BACKEND"] == "kubernetes"
    service_accounts = {sa["metadata"]["name"] for sa in by_kind("ServiceAccount")}
    apps = {d["metadata"]["name"]: d for d in by_kind("Deployment")}
    assert {"rolloutui-web", "rolloutui-worker", "rolloutui-redis"} <= apps.keys()
    for name in ("rolloutui-web", "rolloutui-worker"):
        pod = apps[name]["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] in service_accounts
        for container in containers_of(apps[name]):
            assert container["image"] == "rolloutui:latest"
            assert {"configMapRef": {"name": "rolloutui-config"}} in container["envFrom"]
            env = {e["name"]: e for e in container["env"]}
            assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
                "name": "rolloutui-secrets",
                "key": "DATABASE_URL",
            }
    commands = {c["name"]: c.get("command") for d in apps.values() for c in containers_of(d)}
    assert commands["web"][0] == "daphne" and "rolloutui.asgi:application" in commands["web"]
    assert commands["worker"][:4] == ["celery", "-A", "rolloutui", "worker"]
    assert commands["preview"][:4] == ["celery", "-A", "rolloutui", "worker"]
    assert commands["beat"][:4] == ["celery", "-A", "rolloutui", "beat"]
    assert commands["watch"][:4] == ["python", "-m", "controller.k8s", "watch"]


def test_the_web_reads_inferenceservices_from_a_watch_and_the_worker_does_not_try():
    """The web account may list and watch InferenceServices and Deployments; the worker's may not, so
    only the web container turns the watched cache on."""
    apps = {d["metadata"]["name"]: d for d in by_kind("Deployment")}
    for name, wanted in (("rolloutui-web", "1"), ("rolloutui-worker", None)):
        for container in containers_of(apps[name]):
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            if container["name"] in ("web", "worker", "preview", "beat", "watch"):
                assert env.get("ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE") == wanted, container["name"]


def test_the_reconcile_worker_reads_pods_from_its_watch_and_no_other_process_keeps_one():
    apps = {d["metadata"]["name"]: d for d in by_kind("Deployment")}
    for name in ("rolloutui-web", "rolloutui-worker"):
        for container in containers_of(apps[name]):
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            wanted = "1" if container["name"] == "worker" else None
            assert env.get("ROLLOUTUI_KUBERNETES_POD_CACHE") == wanted, container["name"]


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_previews_run_on_a_worker_of_their_own_with_one_slot_that_the_reconcile_worker_leaves_alone():
    from rolloutui.celery import PREVIEW_WORKER_QUEUES, RECONCILE_WORKER_QUEUES

    worker = next(d for d in by_kind("Deployment") if d["metadata"]["name"] == "rolloutui-worker")
    containers = {c["name"]: c for c in containers_of(worker)}
    reconcile, preview = containers["worker"]["command"], containers["preview"]["command"]
    assert preview[:4] == ["celery", "-A", "rolloutui", "worker"]
    assert tuple(_option(reconcile, "-Q").split(",")) == RECONCILE_WORKER_QUEUES
    assert tuple(_option(preview, "-Q").split(",")) == PREVIEW_WORKER_QUEUES
    assert _option(preview, "--concurrency") == "1"
    # Its own node name, and the liveness ping asks that node (not the reconcile worker's).
    node = _option(preview, "-n")
    assert node == "preview@%h"
    assert "-d preview@$HOSTNAME" in containers["preview"]["livenessProbe"]["exec"]["command"][-1]
    assert "-d celery@$HOSTNAME" in containers["worker"]["livenessProbe"]["exec"]["command"][-1]
    # The same pod: the same ServiceAccount, NetworkPolicies and restricted security context.
    assert containers["preview"]["securityContext"] == containers["worker"]["securityContext"]
    assert containers["preview"]["volumeMounts"] == containers["worker"]["volumeMounts"]
    # The same environment, but for the reconcile worker's pod cache (the previews run on a copy).
    assert containers["preview"]["env"] == [
        e for e in containers["worker"]["env"] if e["name"] != "ROLLOUTUI_KUBERNETES_POD_CACHE"
    ]


def test_daphne_refuses_incoming_websocket_frames_far_below_its_message_size():
    web = next(d for d in by_kind("Deployment") if d["metadata"]["name"] == "rolloutui-web")
    command = next(c for c in containers_of(web) if c["name"] == "web")["command"]
    frame = int(_option(command, "--websocket-max-frame-size"))
    assert 4 * 4096 <= frame < int(_option(command, "--websocket-max-message-size"))


def _shipped_daphne_commands() -> dict[str, list[str]]:
    """Every Daphne command line deploy/ ships: the web Deployment's and the image's default CMD
    (the chart's is compared with the Deployment's by test_helm_chart.py)."""
    import json
    import re

    web = next(d for d in by_kind("Deployment") if d["metadata"]["name"] == "rolloutui-web")
    cmd = re.search(r"^CMD (\[.*\])$", (DEPLOY / "Dockerfile").read_text(), re.MULTILINE)
    return {
        "deploy/web.yaml": next(c for c in containers_of(web) if c["name"] == "web")["command"],
        "deploy/Dockerfile": json.loads(cmd.group(1)),
    }


@pytest.mark.parametrize("where", ["deploy/web.yaml", "deploy/Dockerfile"])
def test_daphne_takes_the_peer_address_and_keeps_no_access_log_of_whole_urls(where):
    # Hardening finding: with --proxy-headers Daphne puts the leftmost X-Forwarded-For entry (the one
    # the client chose) in the ASGI scope's client, which Django serves as REMOTE_ADDR. Without it the
    # peer is the TCP peer, and origin.client_ip alone reads X-Forwarded-For, as far as
    # ROLLOUTUI_TRUSTED_PROXIES trusts it. Daphne's access log (on at its default verbosity) writes
    # whole URLs, a sign-on callback's code included; rolloutui.access logs them masked instead.
    from daphne.cli import CommandLineInterface

    command = _shipped_daphne_commands()[where]
    assert command[0] == "daphne"
    args = CommandLineInterface().parser.parse_args(command[1:])
    assert args.proxy_headers is False
    assert args.access_log == os.devnull
    assert args.application == "rolloutui.asgi:application"


def test_the_web_is_probed_on_healthz_and_readyz_and_exposed_by_a_service():
    web = next(d for d in by_kind("Deployment") if d["metadata"]["name"] == "rolloutui-web")
    container = next(c for c in web["spec"]["template"]["spec"]["containers"] if c["name"] == "web")
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    port_names = {p["name"] for p in container["ports"]}
    for service in by_kind("Service"):
        target = next(
            d
            for d in by_kind("Deployment")
            if service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        )
        names = {p["name"] for c in target["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= names, service["metadata"]["name"]
    assert "http" in port_names


# Every API call the reconcile pass, the watcher and the elector make: (apiGroup, resource, verb).
# test_rbac_enforced.py checks the same against the API double with the roles enforced.
CONTROLLER_CALLS = {
    ("serving.rolloutui.io", "modelservings", "get"),
    ("serving.rolloutui.io", "modelservings", "list"),
    ("serving.rolloutui.io", "modelservings", "watch"),
    # The canary analysis pauses or rolls back; the opt-in autoscaler scales.
    ("serving.rolloutui.io", "modelservings", "patch"),
    ("serving.rolloutui.io", "modelservings/status", "update"),
    # ownerReferences with blockOwnerDeletion (OwnerReferencesPermissionEnforcement).
    ("serving.rolloutui.io", "modelservings/finalizers", "update"),
    ("", "pods", "get"),
    ("", "pods", "list"),
    ("", "pods", "watch"),
    ("", "pods", "create"),
    ("", "pods", "delete"),
    ("", "pods", "patch"),
    ("", "pods/status", "patch"),
    ("apps", "controllerrevisions", "list"),
    ("apps", "controllerrevisions", "create"),
    ("apps", "controllerrevisions", "patch"),
    ("apps", "controllerrevisions", "delete"),
    # The headless Service of each ModelServing (pod DNS) and Volcano PodGroups (gang scheduling).
    ("", "services", "list"),
    ("", "services", "create"),
    ("", "services", "patch"),
    ("", "services", "delete"),
    ("scheduling.volcano.sh", "podgroups", "list"),
    ("scheduling.volcano.sh", "podgroups", "create"),
    ("scheduling.volcano.sh", "podgroups", "patch"),
    ("scheduling.volcano.sh", "podgroups", "delete"),
    # The Routed gate reads the EndpointSlices of the ModelServing's Services.
    ("discovery.k8s.io", "endpointslices", "list"),
    # Canary weights: the HTTPRoute the weights are written to, and the InferencePool backends.
    ("gateway.networking.k8s.io", "httproutes", "get"),
    ("gateway.networking.k8s.io", "httproutes", "create"),
    ("gateway.networking.k8s.io", "httproutes", "patch"),
    ("inference.networking.k8s.io", "inferencepools", "get"),
    ("inference.networking.k8s.io", "inferencepools", "create"),
    ("inference.networking.k8s.io", "inferencepools", "patch"),
    ("", "events", "create"),
}
# What the web process (the dashboard, the REST API, `manage.py rollout` run in its pod) reads,
# wherever the objects are: everything it shows, and the SubjectAccessReviews it asks.
WEB_READS = {
    ("serving.rolloutui.io", "modelservings", "get"),
    ("serving.rolloutui.io", "modelservings", "list"),
    ("", "pods", "get"),
    ("", "pods", "list"),
    # A pod's log in the topology cell's pod panel, and the Events page's events.
    ("", "pods/log", "get"),
    ("", "events", "list"),
    ("apps", "controllerrevisions", "get"),
    ("apps", "controllerrevisions", "list"),
    # KServe: InferenceServices, the Deployments and ReplicaSets KServe made, and the
    # inferenceservice-config ConfigMap (by name).
    ("serving.kserve.io", "inferenceservices", "get"),
    ("serving.kserve.io", "inferenceservices", "list"),
    ("apps", "deployments", "get"),
    ("apps", "deployments", "list"),
    ("apps", "replicasets", "get"),
    ("apps", "replicasets", "list"),
    # ROLLOUTUI_KUBERNETES_WORKLOAD_CACHE=1: InferenceServices and their Deployments from a watch
    # (controller.k8s.kserve_cache).
    ("serving.kserve.io", "inferenceservices", "watch"),
    ("apps", "deployments", "watch"),
    ("apps", "replicasets", "watch"),
    ("", "configmaps", "get"),
    # ROLLOUTUI_K8S_ACCESS_REVIEW=1: the SubjectAccessReview of a dashboard user (controller.k8s.access).
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
}
# What the web process writes, and only for the controls, in the namespaces the product manages:
# a ModelServing's merge patch (rolloutui.services.controls, releases.deploy, manifests' apply of an
# existing object), an InferenceService's merge patch (kserve_controls, releases.deploy) and a
# Deployment's spec.paused (kserve_controls' pause and resume, as `kubectl rollout pause`).
WEB_CONTROL_WRITES = {
    ("serving.rolloutui.io", "modelservings", "patch"),
    ("serving.kserve.io", "inferenceservices", "patch"),
    ("apps", "deployments", "patch"),
}
WEB_CONTROLS_ROLE = "rolloutui-web-controls"


# Both accounts read the cluster settings (controller.runtime.clustersettings), one ConfigMap by name.
SETTINGS_READ = ("", "configmaps", "get")


def granted(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def bound_rules(service_account: str) -> dict[str, set[tuple[str, str, str]]]:
    """{"cluster": grants of every ClusterRole bound to the ServiceAccount, "namespaced": Roles}."""
    subject = {"kind": "ServiceAccount", "name": service_account, "namespace": "rolloutui"}
    cluster_roles = {r["metadata"]["name"]: r for r in by_kind("ClusterRole")}
    roles = {r["metadata"]["name"]: r for r in by_kind("Role")}
    out: dict[str, set[tuple[str, str, str]]] = {"cluster": set(), "namespaced": set()}
    for binding in by_kind("ClusterRoleBinding"):
        if subject in binding["subjects"]:
            out["cluster"] |= granted(cluster_roles[binding["roleRef"]["name"]]["rules"])
    for binding in by_kind("RoleBinding"):
        if subject in binding["subjects"]:
            ref = binding["roleRef"]
            source = roles if ref["kind"] == "Role" else cluster_roles
            out["namespaced"] |= granted(source[ref["name"]]["rules"])
    return out


def pod_spec(name: str) -> dict[str, Any]:
    return next(d for d in by_kind("Deployment") if d["metadata"]["name"] == name)["spec"]["template"]["spec"]


def test_the_web_and_the_controller_run_under_separate_service_accounts():
    # Hardening finding: the web pods ran with the controller's ServiceAccount, so a code-execution bug in
    # the web stack could create and delete pods cluster-wide.
    web, worker = pod_spec("rolloutui-web"), pod_spec("rolloutui-worker")
    assert web["serviceAccountName"] == "rolloutui-web"
    assert worker["serviceAccountName"] == "rolloutui-controller"
    assert pod_spec("rolloutui-redis").get("automountServiceAccountToken") is False
    assert {sa["metadata"]["name"] for sa in by_kind("ServiceAccount")} == {"rolloutui-web", "rolloutui-controller"}


def test_the_web_account_may_read_what_it_shows_everywhere_and_write_nothing_cluster_wide():
    # Hardening finding: the web account could patch apps/deployments (and ModelServings and
    # InferenceServices) in every namespace of the cluster.
    rules = bound_rules("rolloutui-web")
    assert rules["cluster"] == WEB_READS
    assert rules["namespaced"] == {SETTINGS_READ}
    writes = {grant for grant in rules["cluster"] | rules["namespaced"] if grant[2] not in ("get", "list", "watch")}
    assert writes == {("authorization.k8s.io", "subjectaccessreviews", "create")}


def test_the_controls_writes_are_a_cluster_role_that_deploy_binds_in_no_namespace():
    # Bound per managed namespace by a RoleBinding (the Helm value rbac.controlNamespaces, or the
    # kubectl command of deploy/README.md), never by a ClusterRoleBinding.
    (role,) = [r for r in by_kind("ClusterRole") if r["metadata"]["name"] == WEB_CONTROLS_ROLE]
    assert granted(role["rules"]) == WEB_CONTROL_WRITES
    bound = [
        b for b in by_kind("ClusterRoleBinding") + by_kind("RoleBinding") if b["roleRef"]["name"] == WEB_CONTROLS_ROLE
    ]
    assert bound == []


def test_the_web_may_create_subjectaccessreviews_cluster_wide_and_the_controller_may_not():
    # Hardening finding: ROLLOUTUI_K8S_ACCESS_REVIEW=1 could not work with the shipped manifests (every
    # review refused, so every permission refused: fail closed).
    review = ("authorization.k8s.io", "subjectaccessreviews", "create")
    assert review in bound_rules("rolloutui-web")["cluster"]
    assert (
        review not in bound_rules("rolloutui-controller")["cluster"] | bound_rules("rolloutui-controller")["namespaced"]
    )


def test_the_controller_may_do_what_the_reconcile_and_the_watch_call_and_nothing_else():
    rules = bound_rules("rolloutui-controller")
    assert rules["cluster"] == CONTROLLER_CALLS
    # It patches a spec (the analysis' pause or rollback, the autoscaler) but never creates or deletes one.
    assert {("serving.rolloutui.io", "modelservings", v) for v in ("create", "delete", "update")}.isdisjoint(
        rules["cluster"]
    )


def test_nobody_may_create_or_delete_modelservings():
    # Hardening finding: a ModelServing create/delete grant nothing uses was bound to the shared account.
    for role in by_kind("ClusterRole") + by_kind("Role"):
        for _group, resource, verb in granted(role["rules"]):
            assert not (resource == "modelservings" and verb in ("create", "delete", "deletecollection")), role


def test_no_rule_uses_wildcards():
    for role in by_kind("ClusterRole") + by_kind("Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]


def test_both_accounts_may_read_the_cluster_settings_configmap_and_no_other():
    (role,) = [r for r in by_kind("Role") if r["metadata"]["name"] == "rolloutui-cluster-settings-reader"]
    assert role["metadata"]["namespace"] == "rolloutui"
    assert granted(role["rules"]) == {SETTINGS_READ}
    assert [r["resourceNames"] for r in role["rules"]] == [["rolloutui-cluster-settings"]]
    for account in ("rolloutui-web", "rolloutui-controller"):
        assert SETTINGS_READ in bound_rules(account)["namespaced"]
    (configmap,) = [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "rolloutui-cluster-settings"]
    assert set(configmap["data"]) == {"deploymentMode", "defaultMaxUnavailable", "defaultMaxSurge", "multiNodeOverride"}
    (config,) = [c for c in by_kind("ConfigMap") if c["metadata"]["name"] == "rolloutui-config"]
    assert config["data"]["ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP"] == "rolloutui/rolloutui-cluster-settings"


def test_the_lease_role_is_limited_to_the_controllers_namespace_and_lease():
    (role,) = [r for r in by_kind("Role") if r["metadata"]["name"] == "rolloutui-leader-election"]
    assert role["metadata"]["namespace"] == "rolloutui"
    assert granted(role["rules"]) == {
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "update"),
    }
    named = [r for r in role["rules"] if "get" in r["verbs"]]
    assert named[0]["resourceNames"] == ["rolloutui-controller"]
    assert bound_rules("rolloutui-controller")["namespaced"] == granted(role["rules"]) | {SETTINGS_READ}


def test_the_dockerfile_builds_from_files_that_exist_and_runs_as_non_root():
    text = (DEPLOY / "Dockerfile").read_text()
    assert "FROM python:3.12-slim" in text
    assert "USER 10001" in text
    assert '"rolloutui.asgi:application"' in text
    for needed in ("manage.py", "static", "templates", "pyproject.toml"):
        assert (ROOT / needed).exists(), needed
        assert needed in text
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert ".venv" in ignore and ".git" in ignore


# ---------------------------------------------------------------------------------------- the CRD


def test_the_crd_names_scope_subresources_and_printer_columns():
    c = crd()
    spec = c["spec"]
    assert c["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}" == "modelservings.serving.rolloutui.io"
    assert spec["group"] == naming.API_GROUP and spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == naming.KIND and spec["names"]["plural"] == naming.PLURAL
    assert spec["names"]["shortNames"] == ["msv"]
    (version,) = spec["versions"]
    assert f"{spec['group']}/{version['name']}" == naming.API_VERSION
    assert version["served"] and version["storage"]
    assert version["subresources"]["status"] == {}
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.labelSelector",
    }
    columns = [col["name"] for col in version["additionalPrinterColumns"]]
    assert columns == ["Replicas", "Available", "Updated", "Current revision", "Update revision", "Paused", "Age"]
    for col in version["additionalPrinterColumns"]:
        assert node_at(crd_schema(), col["jsonPath"]) is not None or col["jsonPath"] == ".metadata.creationTimestamp", (
            col
        )
    for path, kind in (
        (".spec.replicas", "integer"),
        (".status.replicas", "integer"),
        (".status.labelSelector", "string"),
    ):
        assert node_at(crd_schema(), path)["type"] == kind


def node_at(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for part in json_path.strip(".").split("."):
        node = (node or {}).get("properties", {}).get(part)
    return node


def test_the_crd_schema_is_structural():
    # The full rule set, and broken copies it refuses: test_crd_structural.py.
    assert schema_violations(crd_schema()) == []


def cel_rules(schema: dict[str, Any], value: Any, path: str = "") -> list[tuple[str, str, Any]]:
    """(path, rule, message, value) for every x-kubernetes-validations rule that applies to ``value``."""
    found = [(path, r["rule"], r["message"], value) for r in schema.get("x-kubernetes-validations", [])]
    if isinstance(value, dict):
        for key, child in (schema.get("properties") or {}).items():
            if key in value:
                found += cel_rules(child, value[key], f"{path}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found += cel_rules(schema["items"], item, f"{path}[{index}]")
    return found


def celpy_or_none() -> Any:
    # cel-python (pip install cel-python) evaluates the CRD's CEL rules; without it the schema
    # checks still run and the CEL-specific tests are skipped.
    try:
        import celpy
    except ImportError:
        return None
    return celpy


@functools.cache
def cel_program(rule: str) -> Any:
    celpy = celpy_or_none()
    env = celpy.Environment()
    return env.program(env.compile(rule))


def validation_errors(obj: dict[str, Any]) -> list[str]:
    """What the API server would refuse (schema and CEL) or silently prune (unknown fields)."""
    errors = schema_errors(obj, strict=True)
    if errors:
        return errors  # CEL runs only on schema-valid objects, as on the API server
    celpy = celpy_or_none()
    if celpy is None:
        return errors
    for path, rule, message, value in cel_rules(crd_schema(), obj):
        if not bool(cel_program(rule).evaluate({"self": celpy.json_to_cel(value)})):
            errors.append(f"{path}: {message}")
    return errors


def kthena_samples() -> list[tuple[str, dict[str, Any]]]:
    samples = []
    for path in KTHENA_EXAMPLES:
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if doc and doc.get("kind") == "ModelServing":
                doc = copy.deepcopy(doc)
                assert doc["apiVersion"] == naming.KTHENA_API_VERSION
                doc["apiVersion"] = naming.API_VERSION
                samples.append((Path(path).name, doc))
    return samples


def scenario_samples() -> list[tuple[str, dict[str, Any]]]:
    # Scenarios of an InferenceService carry no ModelServing.
    loaded = [(str(Path(p).relative_to(ROOT)), yaml.safe_load(Path(p).read_text())) for p in SCENARIOS]
    return [(name, doc["modelServing"]) for name, doc in loaded if "modelServing" in doc]


@pytest.mark.parametrize("name_doc", kthena_samples(), ids=lambda nd: nd[0])
def test_every_kthena_example_is_accepted_whole_after_changing_its_api_version(name_doc):
    _, doc = name_doc
    assert validation_errors(doc) == []


@pytest.mark.parametrize("name_doc", scenario_samples(), ids=lambda nd: nd[0])
def test_every_scenario_modelserving_is_accepted(name_doc):
    _, doc = name_doc
    assert validation_errors(doc) == []


def base() -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "ModelServing",
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": "25%", "maxSurge": 1, "partition": 0},
            },
            "template": {
                "roles": [
                    {
                        "name": "prefill",
                        "replicas": 1,
                        "workerReplicas": 1,
                        "entryTemplate": {
                            "metadata": {"labels": {"a": "b"}},
                            "spec": {"containers": [{"name": "e", "image": "i"}]},
                        },
                        "workerTemplate": {"spec": {"containers": [{"name": "e", "image": "i"}]}},
                    },
                    {
                        "name": "decode",
                        "replicas": 2,
                        "entryTemplate": {"spec": {"containers": [{"name": "e", "image": "i"}]}},
                        "maxUnavailable": 1,
                        "maxSurge": "100%",
                        "partition": "50%",
                    },
                ]
            },
            "recoveryPolicy": "RoleRecreate",
            "revisionHistoryLimit": 10,
            "paused": False,
            "drain": {"timeoutSeconds": 300},
        },
    }


def test_a_full_modelserving_using_every_field_is_accepted():
    assert validation_errors(base()) == []


def with_change(path: str, value: Any) -> dict[str, Any]:
    obj = base()
    *parents, last = path.split(".")
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    elif value is ...:
        del node[last]
    else:
        node[last] = value
    return obj


INVALID = {
    "negative replicas": ("spec.replicas", -1, "spec.replicas"),
    "no template": ("spec.template", ..., "'template' is a required property"),
    "no roles": ("spec.template.roles", [], "spec.template.roles"),
    "five roles": (
        "spec.template.roles",
        [{"name": f"r{i}", "entryTemplate": {}} for i in range(5)],
        "spec.template.roles",
    ),
    "role name with capitals": ("spec.template.roles.0.name", "Prefill", "spec.template.roles.0.name"),
    "role name of 13 characters": ("spec.template.roles.0.name", "abcdefghijklm", "spec.template.roles.0.name"),
    "role name starting with a digit": ("spec.template.roles.0.name", "1prefill", "spec.template.roles.0.name"),
    "role without an entry template": (
        "spec.template.roles.1.entryTemplate",
        ...,
        "'entryTemplate' is a required property",
    ),
    "unknown strategy type": ("spec.rolloutStrategy.type", "BlueGreen", "spec.rolloutStrategy.type"),
    "percent above 100": ("spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable", "150%", "maxUnavailable"),
    "a word for a budget": ("spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge", "some", "maxSurge"),
    "negative budget": ("spec.template.roles.1.maxUnavailable", -1, "maxUnavailable"),
    "a float budget": ("spec.template.roles.1.partition", 0.5, "partition"),
    "unknown recovery policy": ("spec.recoveryPolicy", "Restart", "spec.recoveryPolicy"),
    "negative history limit": ("spec.revisionHistoryLimit", -1, "spec.revisionHistoryLimit"),
    "paused as a string": ("spec.paused", "yes", "spec.paused"),
    "negative drain timeout": ("spec.drain.timeoutSeconds", -5, "spec.drain.timeoutSeconds"),
    "a misspelt field the server would prune": ("spec.replica", 3, "Additional properties"),
}


@pytest.mark.parametrize("case", sorted(INVALID), ids=str)
def test_an_invalid_modelserving_is_rejected_by_the_schema(case):
    path, value, expected = INVALID[case]
    errors = validation_errors(with_change(path, value))
    assert errors, f"{case} was accepted"
    assert any(expected in e for e in errors), errors


def test_duplicate_role_names_are_rejected_by_the_cel_rule():
    pytest.importorskip("celpy", reason="cel-python evaluates the CRD's CEL rules (pip install cel-python)")
    obj = base()
    obj["spec"]["template"]["roles"][1]["name"] = "prefill"
    assert validation_errors(obj) == [".spec.template.roles: role names must be unique within spec.template.roles"]


def test_group_recreate_recovery_with_role_rolling_updates_is_rejected_with_the_reason():
    pytest.importorskip("celpy", reason="cel-python evaluates the CRD's CEL rules (pip install cel-python)")
    obj = base()
    obj["spec"]["recoveryPolicy"] = "ServingGroupRecreate"
    obj["spec"]["rolloutStrategy"] = {"type": "RoleRollingUpdate"}
    (error,) = validation_errors(obj)
    assert "ServingGroupRecreate cannot be combined with rolloutStrategy.type RoleRollingUpdate" in error
    assert "restart the whole ServingGroup" in error
    obj["spec"]["recoveryPolicy"] = "RoleRecreate"
    assert validation_errors(obj) == []
    obj["spec"]["recoveryPolicy"] = "ServingGroupRecreate"
    obj["spec"]["rolloutStrategy"] = {"type": "ServingGroupRollingUpdate"}
    assert validation_errors(obj) == []


def test_status_written_by_the_controller_is_kept_whole():
    obj = base()
    obj["status"] = {
        "observedGeneration": 3,
        "replicas": 2,
        "availableReplicas": 1,
        "updatedReplicas": 1,
        "currentReplicas": 1,
        "currentRevision": "abc",
        "updateRevision": "def",
        "collisionCount": None,
        "labelSelector": "x=y",
        "conditions": [
            {"type": "Available", "status": "True", "reason": "R", "message": "m", "lastTransitionTime": 12.5}
        ],
        "phase": "Progressing",
        "groups": [{"ordinal": 0, "roles": [{"name": "prefill", "ready": 1}]}],
        "blocked": [],
    }
    assert validation_errors(obj) == []
