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
from controller.core.ports import NoRouter
from controller.k8s import KubernetesCluster
from tests import factories

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("controller.core.reconcile") is None, reason="no reconcile pass"
)


class Router(NoRouter):
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


def events(apiserver, reason: str) -> list[dict]:
    return [obj for (res, _, _), obj in apiserver.emu.store.items() if res == "/v1/events" and obj["reason"] == reason]


def test_requests_a_drain_timeout_cuts_off_are_counted_from_the_router_as_an_event_and_reported(
    api_client, core, apiserver
):
    reported = []
    cluster = KubernetesCluster(api_client, on_interrupted=lambda *args: reported.append(args))
    clock, router = Clock(), Router()
    cluster.create_modelserving(modelserving(drain={"timeoutSeconds": 5}))
    drive(cluster, core, clock, router, until=lambda: converged(cluster))
    # The router keeps 3 requests in flight on every decode pod: nothing ever finishes in time.
    for pod in cluster.list_pods(NS, "chat"):
        if pod["metadata"]["labels"][naming.LABEL_ROLE] == "decode":
            router.counts[pod["metadata"]["name"]] = 3
    before = {p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    cluster.patch_modelserving(
        NS, "chat", {"spec": {"template": modelserving(decode_image="engine:v2")["spec"]["template"]}}
    )
    drive(cluster, core, clock, router, until=lambda: converged(cluster))

    gone = before - {p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    assert len(gone) == 2  # both decode pods were replaced, each at its drain timeout
    interrupted = events(apiserver, "RequestsInterrupted")
    assert len(interrupted) == 2
    for event in interrupted:
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "ModelServing" and event["involvedObject"]["name"] == "chat"
        assert event["message"].startswith("3 request(s) in flight on chat-0-decode-")
        assert "drain timeout" in event["message"]
    assert sorted((ns, ms, count, reason) for ns, ms, _, count, reason in reported) == [
        (NS, "chat", 3, "drain timeout"),
        (NS, "chat", 3, "drain timeout"),
    ]


def test_a_drain_the_router_saw_finish_interrupts_nothing(api_client, core, apiserver):
    cluster = KubernetesCluster(api_client)
    clock, router = Clock(), Router()
    cluster.create_modelserving(modelserving(drain={"timeoutSeconds": 5}))
    drive(cluster, core, clock, router, until=lambda: converged(cluster))
    cluster.patch_modelserving(
        NS, "chat", {"spec": {"template": modelserving(decode_image="engine:v2")["spec"]["template"]}}
    )
    drive(cluster, core, clock, router, until=lambda: converged(cluster))
    assert events(apiserver, "RequestsInterrupted") == []


@pytest.mark.django_db
def test_on_the_kubernetes_backend_the_interrupted_requests_reach_the_rollouts_audit(
    api_client, apiserver, settings, monkeypatch
):
    from controller.runtime import backend
    from rolloutui.models import AuditRecord

    settings.ROLLOUTUI_BACKEND = "kubernetes"
    monkeypatch.setattr(backend, "_api_client", lambda: api_client)
    cluster = backend.get_cluster(actor="controller")
    assert isinstance(cluster, KubernetesCluster)
    cluster.create_modelserving(modelserving())

    cluster.report_interrupted(NS, "chat", "chat-0-decode-1-0", 4, "drain timeout")

    record = AuditRecord.objects.get(action="drain_timeout")
    assert (record.source, record.namespace, record.name, record.details) == (
        "system",
        NS,
        "chat",
        {"pod": "chat-0-decode-1-0", "interrupted": 4},
    )
    assert "4 request(s) in flight on chat-0-decode-1-0" in record.reason
    assert [e["message"] for e in events(apiserver, "RequestsInterrupted")] == [
        "4 request(s) in flight on chat-0-decode-1-0 were interrupted (drain timeout)"
    ]
