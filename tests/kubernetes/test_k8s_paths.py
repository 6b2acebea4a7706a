"""Request paths on Kubernetes, through the real reconcile pass and the API server double: the pods'
revision compatibility labels (created with them, patched when a new revision appears), and the
requests a drain timeout cuts off, counted from the router's in-flight figures and recorded as an
Event on the ModelServing."""

from __future__ import annotations

import importlib.util

import kubernetes
import pytest
from test_k8s_rollout import NS, Clock, kubelet

from controller.core import naming
from controller.k8s import KubernetesCluster
from tests import factories

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("controller.core.reconcile") is None, reason="no reconcile pass"
)


class Router:
    """The router's in-flight counts, as a test sets them."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def in_flight(self, namespace: str, pod_name: str) -> int:
        return self.counts.get(pod_name, 0)


def modelserving(image: str = "engine:v1", decode_image: str | None = None, **spec) -> dict:
    roles = factories.prefill_decode(image, gpus=None)
    if decode_image:
        roles[1] = factories.role("decode", replicas=2, image=decode_image)
    return factories.modelserving(
        name="chat",
        namespace=NS,
        replicas=1,
        strategy=factories.coordinated(),
        roles=roles,
        traffic={"path": ["prefill", "decode"]},
        **spec,
    )


def drive(cluster, core, clock, router, *, until, max_passes: int = 60):
    from controller.core.reconcile import reconcile

    for _ in range(max_passes):
        result = reconcile(cluster, router, clock, NS, "chat", build_state_view=False)
        assert result.error is None, result.error
        kubelet(core)
        clock.t += 1
        if until():
            return
    raise AssertionError(f"not reached; status: {cluster.get_modelserving(NS, 'chat').get('status')}")


def converged(cluster) -> bool:
    status = cluster.get_modelserving(NS, "chat").get("status") or {}
    return bool(status.get("converged")) and status.get("currentRevision") == status.get("updateRevision")


def compat(pod) -> set[str]:
    return naming.compat_revisions(pod["metadata"].get("labels"))


@pytest.fixture
def core(api_client) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client)


@pytest.fixture
def cluster(api_client) -> KubernetesCluster:
    return KubernetesCluster(api_client)


def test_pods_carry_the_revision_labels_and_an_unchanged_role_gets_the_new_revisions_label_by_a_patch(cluster, core):
    clock, router = Clock(), Router()
    cluster.create_modelserving(modelserving())
    drive(cluster, core, clock, router, until=lambda: converged(cluster))
    old = cluster.get_modelserving(NS, "chat")["status"]["updateRevision"]
    assert all(compat(p) == {old} for p in cluster.list_pods(NS, "chat"))
    prefill = {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in cluster.list_pods(NS, "chat")
        if p["metadata"]["labels"][naming.LABEL_ROLE] == "prefill"
    }

    cluster.patch_modelserving(
        NS, "chat", {"spec": {"template": modelserving(decode_image="engine:v2")["spec"]["template"]}}
    )
    drive(cluster, core, clock, router, until=lambda: converged(cluster))

    new = cluster.get_modelserving(NS, "chat")["status"]["updateRevision"]
    assert new != old
    pods = cluster.list_pods(NS, "chat")
    for pod in pods:
        role = pod["metadata"]["labels"][naming.LABEL_ROLE]
        assert compat(pod) == ({old, new} if role == "prefill" else {new}), pod["metadata"]["name"]
    # Patched in place: the same prefill pods.
    assert {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in pods
        if p["metadata"]["labels"][naming.LABEL_ROLE] == "prefill"
    } == prefill


def test_the_api_server_double_refuses_a_label_key_kubernetes_would_refuse(cluster, core):
    clock, router = Clock(), Router()
    cluster.create_modelserving(modelserving())
    drive(cluster, core, clock, router, until=lambda: converged(cluster))
    name = cluster.list_pods(NS, "chat")[0]["metadata"]["name"]
    with pytest.raises(Exception, match="not a valid label"):
        cluster.patch_pod(NS, name, {"metadata": {"labels": {"revision.serving.rolloutui.io/" + "x" * 64: "true"}}})
