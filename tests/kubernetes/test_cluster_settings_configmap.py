"""The cluster settings on Kubernetes: the ConfigMap rolloutui-cluster-settings, read through the
adapter by both accounts (deploy/rbac.yaml enforced by the API double), becomes the settings of the
reconcile pass, and the status says which budget came from the cluster."""

from __future__ import annotations

import kubernetes
import pytest
from test_k8s_rollout import Clock, modelserving
from test_rbac_enforced import admin, as_controller, as_web, rbac_server  # noqa: F401 - fixtures

from controller.core.ports import NoRouter
from controller.core.reconcile import reconcile
from controller.k8s import Forbidden, KubernetesCluster
from controller.runtime.clustersettings import from_configmap_data

NAMESPACE, NAME = "rolloutui", "rolloutui-cluster-settings"


def put_configmap(api_client, name: str, data: dict[str, str]) -> None:
    kubernetes.client.CoreV1Api(api_client).create_namespaced_config_map(
        NAMESPACE, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    )


def test_both_accounts_read_the_settings_configmap_and_no_other(admin, as_controller, as_web):  # noqa: F811
    assert KubernetesCluster(as_controller).read_configmap_data(NAMESPACE, NAME) is None  # absent: None, not an error
    put_configmap(admin, NAME, {"deploymentMode": "Standard", "defaultMaxSurge": "1", "multiNodeOverride": "false"})
    put_configmap(admin, "someone-elses", {"secret": "x"})
    for client in (as_controller, as_web):
        data = KubernetesCluster(client).read_configmap_data(NAMESPACE, NAME)
        assert data == {"deploymentMode": "Standard", "defaultMaxSurge": "1", "multiNodeOverride": "false"}
        with pytest.raises(Forbidden):
            KubernetesCluster(client).read_configmap_data(NAMESPACE, "someone-elses")


def test_the_configmaps_default_surge_is_what_the_reconcile_pass_applies_with_its_source(admin, as_controller):  # noqa: F811
    put_configmap(admin, NAME, {"defaultMaxSurge": "1", "defaultMaxUnavailable": "0"})
    controller = KubernetesCluster(as_controller)
    settings = from_configmap_data(controller.read_configmap_data(NAMESPACE, NAME), where="configmap")
    KubernetesCluster(admin).create_modelserving(modelserving({"type": "ServingGroupRollingUpdate"}))
    result = reconcile(controller, NoRouter(), Clock(), "default", "chat", settings=settings)
    group = result.status["strategy"]["group"]
    assert group["maxSurge"] == {"value": 1, "count": 1, "source": "cluster"}
    assert group["maxUnavailable"] == {"value": 0, "count": 0, "source": "cluster"}


@pytest.mark.parametrize(
    "data, message",
    [
        ({"defaultMaxSurge": "lots"}, "configmap.defaultMaxSurge: expected an integer or a percentage"),
        ({"deploymentMode": "standard"}, "configmap.deploymentMode: must be one of Standard"),
        ({"multiNodeOverride": "maybe"}, "configmap.multiNodeOverride: expected true or false"),
        ({"maxSurge": "1"}, "configmap.maxSurge: unknown key"),
    ],
)
def test_a_bad_value_in_the_configmap_is_an_error_naming_its_key(data, message):
    with pytest.raises(ValueError, match=message):
        from_configmap_data(data, where="configmap")
