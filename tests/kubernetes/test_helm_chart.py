"""deploy/helm/rolloutui, rendered by Helm's own engine (helm-python-sdk: the Helm v4 Go SDK in a
shared library; no `helm` binary is installable from the registries these machines reach), compared
object by object with the kustomization as kustomize renders it, and its values exercised."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
import yaml
from manifests import DEPLOY, container_env, containers_of, deployment, kustomize_build, kustomize_command
from test_production_settings import SECRETS, check_deploy

helm_python = pytest.importorskip(
    "helm_python", reason="helm-python-sdk renders the chart (pip install helm-python-sdk)"
)
helm_python.disable_logging()

CHART = DEPLOY / "helm" / "rolloutui"
# Labels Helm charts carry by convention and kustomize cannot know (release bookkeeping).
HELM_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}

needs_kustomize = pytest.mark.skipif(
    kustomize_command() is None, reason="kubectl (with its embedded kustomize) or kustomize renders deploy/"
)


def render(values: dict[str, Any] | None = None, *, crds: bool = True) -> list[dict[str, Any]]:
    chart = helm_python.Chart.load(str(CHART))
    docs: list[dict[str, Any]] = []
    if crds:
        for crd in chart.crds:
            docs += [d for d in yaml.safe_load_all(crd["data"]) if d]
    for name, text in sorted(chart.render(values or {}, name="rolloutui", namespace="rolloutui").items()):
        if name.endswith(".yaml"):
            docs += [d for d in yaml.safe_load_all(text) if d]
    return docs


def keyed(docs: list[dict[str, Any]]) -> dict[tuple[str, str | None, str], dict[str, Any]]:
    out = {}
    for doc in docs:
        doc = copy.deepcopy(doc)
        labels = doc["metadata"].get("labels") or {}
        for label in HELM_ONLY_LABELS:
            labels.pop(label, None)
        out[(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])] = doc
    return out


@needs_kustomize
def test_the_chart_renders_every_object_of_the_kustomization_with_the_same_content():
    chart = keyed(render({"namespace": {"create": True}}))
    kustomized = keyed(kustomize_build())
    assert sorted(chart) == sorted(kustomized)
    for key, expected in kustomized.items():
        assert chart[key] == expected, f"{key} differs between the chart and the kustomization"


def test_by_default_the_chart_leaves_the_namespace_to_the_user():
    assert "Namespace" not in {d["kind"] for d in render()}
    assert "Secret" not in {d["kind"] for d in render()}


def test_the_chart_passes_helm_lint_in_strict_mode():
    report = helm_python.lint(str(CHART), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_image_and_replicas_come_from_the_values():
    docs = render({"image": {"repository": "registry.example.com/rolloutui", "tag": "1.2.0"}, "web": {"replicas": 3}})
    assert deployment("rolloutui-web", docs)["spec"]["replicas"] == 3
    for name in ("rolloutui-web", "rolloutui-worker"):
        for c in containers_of(deployment(name, docs)):
            assert c["image"] == "registry.example.com/rolloutui:1.2.0"


def config_of(docs: list[dict[str, Any]]) -> dict[str, str]:
    return next(d for d in docs if d["kind"] == "ConfigMap")["data"]


def test_an_ingress_with_tls_serves_its_host_over_https(tmp_path):
    values = {
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "host": "rollouts.example.com",
            "tls": {"enabled": True, "secretName": "rollouts-tls"},
        }
    }
    docs = render(values)
    (ingress,) = [d for d in docs if d["kind"] == "Ingress"]
    assert ingress["spec"]["tls"] == [{"hosts": ["rollouts.example.com"], "secretName": "rollouts-tls"}]
    assert ingress["spec"]["rules"][0]["host"] == "rollouts.example.com"
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"] == {
        "name": "rolloutui-web",
        "port": {"name": "http"},
    }
    config = config_of(docs)
    assert config["ROLLOUTUI_ALLOWED_HOSTS"].split(",")[0] == "rollouts.example.com"
    assert config["ROLLOUTUI_HTTPS"] == "1"
    # The production environment the chart gives the web pods passes `manage.py check --deploy`.
    (web,) = containers_of(deployment("rolloutui-web", docs), init=False)
    env = container_env(web, {"rolloutui-config": config}, SECRETS)
    result = check_deploy(tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_tls_the_dashboard_is_not_told_it_is_behind_https():
    docs = render({"ingress": {"enabled": True, "host": "rollouts.example.com"}})
    assert config_of(docs)["ROLLOUTUI_HTTPS"] == "0"


def test_the_cluster_settings_become_the_configmap_the_app_reads_and_both_accounts_may_get_it():
    values = {
        "clusterSettings": {
            "deploymentMode": "Serverless",
            "defaultMaxUnavailable": 1,
            "defaultMaxSurge": "25%",
            "multiNodeOverride": True,
        }
    }
    docs = render(values)
    (settings_map,) = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-cluster-settings")
    ]
    assert settings_map["data"] == {
        "deploymentMode": "Serverless",
        "defaultMaxUnavailable": "1",
        "defaultMaxSurge": "25%",
        "multiNodeOverride": "true",
    }
    ref = f"{settings_map['metadata']['namespace']}/{settings_map['metadata']['name']}"
    assert config_of(docs)["ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP"] == ref
    # What the controller makes of it (controller.runtime.clustersettings).
    from controller.runtime.clustersettings import from_configmap_data

    parsed = from_configmap_data(settings_map["data"], where="configmap " + ref)
    assert parsed.to_json() == {
        "deploymentMode": "Serverless",
        "defaultRollout": {"maxUnavailable": 1, "maxSurge": "25%"},
        "multiNodeOverride": True,
    }
    (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"].endswith("-cluster-settings-reader")]
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [settings_map["metadata"]["name"]],
            "verbs": ["get"],
        }
    ]
    for name in ("rolloutui-web", "rolloutui-worker"):
        for c in containers_of(deployment(name, docs), init=False):
            assert {"configMapRef": {"name": "rolloutui-config"}} in c["envFrom"]


def test_the_chart_refuses_to_allow_every_host():
    with pytest.raises(helm_python.HelmError, match='not \\\\?"\\*\\\\?"'):
        render({"config": {"allowedHosts": "*"}})


def test_the_chart_can_create_the_secret_and_then_needs_the_database_url():
    with pytest.raises(helm_python.HelmError, match="secrets.databaseUrl is required"):
        render({"secrets": {"create": True}})
    docs = render({"secrets": {"create": True, "databaseUrl": "postgres://u:p@db:5432/r"}})
    (secret,) = [d for d in docs if d["kind"] == "Secret"]
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["DATABASE_URL"] == "postgres://u:p@db:5432/r"
    assert len(data["ROLLOUTUI_SECRET_KEY"]) >= 50
    assert data["REDIS_PASSWORD"].isalnum() and len(data["REDIS_PASSWORD"]) >= 32  # safe inside a URL
    assert data["ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS"]


def test_the_router_redis_can_point_elsewhere():
    docs = render({"config": {"routerRedisUrl": "redis://kthena-router-redis.kthena:6379/0"}})
    for name in ("rolloutui-web", "rolloutui-worker"):
        for c in containers_of(deployment(name, docs), init=False):
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert env["ROLLOUTUI_ROUTER_REDIS_URL"] == "redis://kthena-router-redis.kthena:6379/0"


# --- The web edge: trusted proxies, body limit, the controls' namespaces, egress ---------------------
def test_with_its_ingress_the_app_trusts_exactly_that_one_proxy_and_without_it_none():
    # Hardening finding: the client's address came from X-Forwarded-For as the client wrote it. The
    # chart's Ingress appends the address it saw: one trusted proxy, no more (origin.client_ip).
    assert config_of(render())["ROLLOUTUI_TRUSTED_PROXIES"] == "0"
    assert config_of(render({"ingress": {"enabled": True}}))["ROLLOUTUI_TRUSTED_PROXIES"] == "1"
    # A load balancer in front of the Ingress that appends too: say so.
    behind_two = render({"ingress": {"enabled": True}, "config": {"trustedProxies": 2}})
    assert config_of(behind_two)["ROLLOUTUI_TRUSTED_PROXIES"] == "2"
    assert (
        config_of(render({"config": {"trustedProxies": 0}, "ingress": {"enabled": True}}))["ROLLOUTUI_TRUSTED_PROXIES"]
        == "0"
    )


def test_the_chart_refuses_a_number_of_trusted_proxies_that_is_not_a_whole_number():
    with pytest.raises(helm_python.HelmError, match="config.trustedProxies"):
        render({"config": {"trustedProxies": "one"}})


def test_the_ingress_refuses_bodies_over_the_apps_largest_limit_before_they_reach_the_pod():
    # Daphne (Twisted) takes a request's whole body before the app sees it: only the Ingress can
    # refuse a large upload before it reaches the pod. ingress-nginx reads proxy-body-size.
    from django.conf import settings

    (ingress,) = [d for d in render({"ingress": {"enabled": True}}) if d["kind"] == "Ingress"]
    size = ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-body-size"]
    assert size == "4m"
    largest = max(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, settings.ROLLOUTUI_RECORDS_MAX_BODY_BYTES)
    assert int(size[:-1]) * 1024 * 1024 == largest  # nginx's "m" is MiB
    # The value, and annotations of one's own beside it (which win on the same key).
    values = {"ingress": {"enabled": True, "maxBodySize": "1m", "annotations": {"a.example/x": "y"}}}
    (ingress,) = [d for d in render(values) if d["kind"] == "Ingress"]
    assert ingress["metadata"]["annotations"] == {
        "nginx.ingress.kubernetes.io/proxy-body-size": "1m",
        "a.example/x": "y",
    }


def test_the_chart_binds_the_controls_in_each_listed_namespace_and_nowhere_else():
    from test_rbac_enforced import controls_binding

    docs = render({"rbac": {"controlNamespaces": ["team-a", "team-b"]}})
    bindings = [d for d in docs if d["kind"].endswith("Binding") and d["roleRef"]["name"] == "rolloutui-web-controls"]
    assert [b["kind"] for b in bindings] == ["RoleBinding", "RoleBinding"]
    for binding, namespace in zip(bindings, ("team-a", "team-b"), strict=True):
        expected = controls_binding(namespace)
        assert {k: binding[k] for k in ("roleRef", "subjects")} == {k: expected[k] for k in ("roleRef", "subjects")}
        assert (binding["metadata"]["name"], binding["metadata"]["namespace"]) == ("rolloutui-web-controls", namespace)
    assert not [
        d for d in render() if d["kind"].endswith("Binding") and d["roleRef"]["name"] == "rolloutui-web-controls"
    ]


def _egress_policies(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [d for d in render(values) if d["kind"] == "NetworkPolicy"]


def test_the_api_server_database_and_prometheus_are_named_by_the_values():
    from test_deploy_security import WEB, WORKER, External, Pod, can_connect

    values = {
        "networkPolicy": {
            "apiServer": {"cidrs": ["172.18.0.2/32"], "ports": [6443]},
            "database": {
                "port": 5433,
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "db"}},
                        "podSelector": {"matchLabels": {"app": "postgres"}},
                    }
                ],
            },
            "prometheus": {
                "port": 9091,
                "to": [{"ipBlock": {"cidr": "192.0.2.10/32"}}],
            },
        }
    }
    policies = _egress_policies(values)
    postgres = Pod("db", {"app": "postgres"})
    assert can_connect(WEB, External("172.18.0.2"), 6443, policies=policies)
    assert not can_connect(WEB, External("172.18.0.3"), 6443, policies=policies)
    assert not can_connect(WEB, External("172.18.0.2"), 443, policies=policies)
    assert can_connect(WORKER, postgres, 5433, policies=policies)
    assert not can_connect(WORKER, Pod("db", {"app": "other"}), 5433, policies=policies)
    assert not can_connect(WORKER, External("10.20.0.5"), 5432, policies=policies)
    assert can_connect(WORKER, External("192.0.2.10"), 9091, policies=policies)
    assert not can_connect(WORKER, External("192.0.2.11"), 9091, policies=policies)


@needs_kustomize
def test_the_ingress_component_renders_what_the_chart_renders_with_its_ingress(tmp_path):
    import shutil

    # What deploy/README.md says to do: `kustomize edit add component ingress` in deploy/.
    deploy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, deploy, symlinks=True)
    kustomization = yaml.safe_load((deploy / "kustomization.yaml").read_text())
    kustomization["components"] = ["ingress"]
    (deploy / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    chart = keyed(render({"namespace": {"create": True}, "ingress": {"enabled": True}}))
    kustomized = keyed(kustomize_build(deploy))
    assert sorted(chart) == sorted(kustomized)
    for key, expected in kustomized.items():
        assert chart[key] == expected, f"{key} differs between the chart and deploy/ with its ingress component"


def test_the_notification_values_become_the_mounted_file_the_settings_read_and_check():
    from rolloutui.services import notifications

    destinations = [
        {
            "name": "oncall",
            "type": "slack",
            "urlFrom": {"env": "SLACK_ROLLOUTS_URL"},
            "filters": {"namespaces": ["prod"], "kinds": ["aborted", "release_failed"]},
        }
    ]
    docs = render({"notifications": {"destinations": destinations, "publicUrl": "https://rollouts.example.com"}})
    objects = keyed(docs)
    text = objects[("ConfigMap", "rolloutui", "rolloutui-notifications")]["data"]["notifications.yaml"]
    [oncall] = notifications.parse(
        yaml.safe_load(text), environ={"SLACK_ROLLOUTS_URL": "https://hooks.slack.example/services/T/B/x"}
    )
    assert (oncall.name, oncall.type, oncall.host, oncall.kinds) == (
        "oncall",
        "slack",
        "hooks.slack.example",
        frozenset({"aborted", "release_failed"}),
    )
    config = config_of(docs)
    assert config["ROLLOUTUI_PUBLIC_URL"] == "https://rollouts.example.com"
    web = deployment("rolloutui-web", docs)
    mounts = {m["mountPath"] for c in containers_of(web) for m in c.get("volumeMounts") or []}
    assert config["ROLLOUTUI_NOTIFICATIONS"].startswith(
        next(p for p in mounts if p.startswith("/etc/rolloutui/notifications")) + "/"
    )
    # The URLs' Secret is optional for every container (envFrom secretRef, optional).
    for container in containers_of(web) + containers_of(deployment("rolloutui-worker", docs)):
        refs = [s["secretRef"] for s in container.get("envFrom") or [] if "secretRef" in s]
        assert refs == [{"name": "rolloutui-notification-urls", "optional": True}], container["name"]


def test_notification_endpoints_get_an_egress_rule_only_when_named():
    def egress_of(values):
        objects = keyed(render(values, crds=False))
        return objects[("NetworkPolicy", "rolloutui", "rolloutui-app-egress")]["spec"]["egress"]

    default = egress_of(None)
    named = egress_of({"networkPolicy": {"notifications": {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}}})
    assert named[:-1] == default
    assert named[-1] == {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}
