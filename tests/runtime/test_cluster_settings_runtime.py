"""The live app supplies the cluster settings to every reconcile pass: from the environment on the
embedded cluster, from the ConfigMap (re-read, with the environment as fallback) on Kubernetes."""

from __future__ import annotations

import pytest

from controller.core.intorpercent import IntOrPercent
from controller.core.strategy import ClusterSettings
from controller.runtime import clustersettings
from rolloutui.runtime_config import cluster_settings_from_env


def test_the_four_environment_variables_become_the_settings():
    env = {
        "ROLLOUTUI_DEPLOYMENT_MODE": "Standard",
        "ROLLOUTUI_DEFAULT_MAX_UNAVAILABLE": "25%",
        "ROLLOUTUI_DEFAULT_MAX_SURGE": "1",
        "ROLLOUTUI_MULTI_NODE_OVERRIDE": "1",
    }
    assert cluster_settings_from_env(env) == ClusterSettings(
        "Standard", IntOrPercent(25, True), IntOrPercent(1, False), True
    )
    assert cluster_settings_from_env({}) == ClusterSettings()


def test_a_bad_environment_variable_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"^ROLLOUTUI_DEFAULT_MAX_SURGE: "):
        cluster_settings_from_env({"ROLLOUTUI_DEFAULT_MAX_SURGE": "lots"})


def test_settings_refuse_to_start_with_a_bad_variable():
    import subprocess
    import sys

    from tests.paths import REPO

    proc = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env={
            **__import__("os").environ,
            "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
            "ROLLOUTUI_DEPLOYMENT_MODE": "Fast",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "ROLLOUTUI_DEPLOYMENT_MODE: must be one of Standard" in proc.stderr


def test_on_the_embedded_cluster_the_pass_gets_the_environments_settings(settings):
    settings.ROLLOUTUI_BACKEND = "sim"
    settings.ROLLOUTUI_CLUSTER_SETTINGS = ClusterSettings(default_max_surge=IntOrPercent(2, False))
    current = clustersettings.current()
    assert current.origin == "environment" and current.settings.default_max_surge == IntOrPercent(2, False)


class FakeKubernetes:
    def __init__(self, data):
        self.data, self.reads = data, 0

    def read_configmap_data(self, namespace, name):
        self.reads += 1
        assert (namespace, name) == ("rolloutui", "rolloutui-cluster-settings")
        return self.data


def test_on_kubernetes_the_configmap_wins_is_cached_and_falls_back_to_the_environment(settings):
    settings.ROLLOUTUI_BACKEND = "kubernetes"
    settings.ROLLOUTUI_CLUSTER_SETTINGS = ClusterSettings(default_max_surge=IntOrPercent(2, False))
    clustersettings._cache.clear()
    cluster = FakeKubernetes({"defaultMaxSurge": "25%", "multiNodeOverride": "true"})
    current = clustersettings.current(cluster=cluster)
    assert current.origin == "configmap rolloutui/rolloutui-cluster-settings"
    assert current.settings == ClusterSettings(default_max_surge=IntOrPercent(25, True), multi_node_override=True)
    assert clustersettings.current(cluster=cluster) is current and cluster.reads == 1  # cached
    absent = clustersettings.current(cluster=FakeKubernetes(None), fresh=True)
    assert absent.origin == "environment" and absent.settings.default_max_surge == IntOrPercent(2, False)
    broken = clustersettings.current(cluster=FakeKubernetes({"defaultMaxSurge": "lots"}), fresh=True)
    assert broken.origin == "environment" and "defaultMaxSurge" in broken.error
    clustersettings._cache.clear()
