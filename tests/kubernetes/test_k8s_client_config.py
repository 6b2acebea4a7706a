"""build_api_client: which cluster the process talks to."""

from __future__ import annotations

import pytest
import yaml

from controller.core.ports import ClusterError
from controller.k8s import KubernetesCluster, build_api_client


def kubeconfig(path, server: str) -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "double",
                "clusters": [{"name": "double", "cluster": {"server": server}}],
                "users": [{"name": "tester", "user": {"token": "not-a-secret"}}],
                "contexts": [
                    {"name": "double", "context": {"cluster": "double", "user": "tester", "namespace": "default"}}
                ],
            }
        )
    )
    return str(path)


def test_kubeconfig_from_the_environment_points_the_adapter_at_that_cluster(apiserver, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path / "config", apiserver.url))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    cluster = KubernetesCluster()  # no client given: built from KUBECONFIG
    assert cluster.list_modelservings() == []
    assert cluster.api_client.configuration.host == apiserver.url
    assert apiserver.emu.calls  # the request reached the double


def test_an_explicit_kubeconfig_path_wins_over_the_environment(apiserver, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    client = build_api_client(kubeconfig(tmp_path / "explicit", apiserver.url))
    assert client.configuration.host == apiserver.url


def test_no_configuration_at_all_is_an_error_that_lists_the_options(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setattr("kubernetes.config.KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "nothing-here"))
    with pytest.raises(ClusterError, match="KUBECONFIG.*in-cluster"):
        build_api_client()
