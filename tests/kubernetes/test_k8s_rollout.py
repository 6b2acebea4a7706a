"""A whole rollout driven by the real reconcile pass through KubernetesCluster, over HTTP.

The API server double stores everything; a tiny fake kubelet in the test plays the node: every
pod it sees becomes Running, its containers run the image in its spec, and its Ready condition is
recomputed from the containers and the readiness gates, all written through ``pods/status`` like a
kubelet does. The controller sees nothing but the Kubernetes API.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import kubernetes
import pytest
import yaml

from controller.core import naming
from controller.core.ports import NoRouter
from controller.k8s import KubernetesCluster
from tests import factories

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("controller.core.reconcile") is None,
    reason="controller.core.reconcile (the lead's reconcile pass) does not exist yet",
)

NS = "default"
MERGE = "application/merge-patch+json"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


def kubelet(core: kubernetes.client.CoreV1Api) -> None:
    """One pass of a node agent over every pod of ours: report it running the image in its spec."""
    pods = core.list_namespaced_pod(NS, label_selector=naming.LABEL_NAME, _preload_content=False)
    for pod in json.loads(pods.data)["items"]:
        status = pod.get("status") or {}
        old = {cs["name"]: cs for cs in status.get("containerStatuses") or []}
        container_statuses = []
        for c in pod["spec"]["containers"]:
            before = old.get(c["name"])
            changed = before is not None and before["image"] != c["image"]
            container_statuses.append(
                {
                    "name": c["name"],
                    "image": c["image"],
                    "imageID": f"docker.io/library/{c['image']}@sha256:{abs(hash(c['image'])):x}",
                    "ready": True,
                    "started": True,
                    # An image patch restarts the container in place (same pod, one more restart).
                    "restartCount": (before or {}).get("restartCount", 0) + (1 if changed else 0),
                    "state": {"running": {"startedAt": "2026-11-29T00:00:00Z"}},
                }
            )
        conditions = [
            c for c in status.get("conditions") or [] if c["type"] not in ("Ready", "ContainersReady", "PodScheduled")
        ]
        gates_ok = all(
            any(c["type"] == g["conditionType"] and c["status"] == "True" for c in conditions)
            for g in pod["spec"].get("readinessGates") or []
        )
        conditions += [
            {"type": "PodScheduled", "status": "True"},
            {"type": "ContainersReady", "status": "True"},
            {"type": "Ready", "status": "True" if gates_ok else "False"},
        ]
        new_status = {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "containerStatuses": container_statuses,
            "conditions": conditions,
        }
        if new_status != {k: status.get(k) for k in new_status}:
            core.patch_namespaced_pod_status(
                pod["metadata"]["name"],
                NS,
                {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": new_status},
                _content_type=MERGE,
                _preload_content=False,
            )


def modelserving(strategy: dict, image: str = "engine:v1") -> dict:
    return factories.modelserving(
        name="chat", namespace=NS, replicas=2, strategy=strategy, roles=factories.prefill_decode(image, gpus=None)
    )


def drive(cluster: KubernetesCluster, core, clock: Clock, *, until, max_passes: int = 80):
    from controller.core.reconcile import reconcile

    results = []
    for _ in range(max_passes):
        result = reconcile(cluster, NoRouter(), clock, NS, "chat", build_state_view=False)
        assert result.error is None, result.error
        results.append(result)
        kubelet(core)
        clock.t += 1
        if until():
            return results
    raise AssertionError(
        f"no convergence in {max_passes} passes; last status: {cluster.get_modelserving(NS, 'chat').get('status')}"
    )


def images(cluster: KubernetesCluster) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in cluster.list_pods(NS, "chat")}


def converged_on(cluster: KubernetesCluster, image: str) -> bool:
    pods = cluster.list_pods(NS, "chat")
    status = cluster.get_modelserving(NS, "chat").get("status") or {}
    ready = all(
        any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])) for p in pods
    )
    return (
        len(pods) == 2 * (2 + 2)  # 2 groups x (prefill entry + worker, 2 decode entries)
        and all(p["spec"]["containers"][0]["image"] == image for p in pods)
        and ready
        and status.get("updatedReplicas") == 2
        and status.get("availableReplicas") == 2
        and status.get("currentRevision") == status.get("updateRevision")
        and bool(status.get("converged"))
    )


@pytest.fixture
def core(api_client) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client)


@pytest.fixture
def cluster(api_client) -> KubernetesCluster:
    return KubernetesCluster(api_client)


def test_a_group_rolling_update_converges_through_the_kubernetes_adapter(cluster, core, apiserver):
    clock = Clock()
    cluster.create_modelserving(
        modelserving({"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}})
    )
    drive(cluster, core, clock, until=lambda: converged_on(cluster, "engine:v1"))
    first_uids = {p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ModelServing" for p in cluster.list_pods(NS, "chat"))

    cluster.patch_modelserving(NS, "chat", {"spec": {"template": modelserving({}, "engine:v2")["spec"]["template"]}})
    drive(cluster, core, clock, until=lambda: converged_on(cluster, "engine:v2"))

    pods = cluster.list_pods(NS, "chat")
    assert not first_uids & {p["metadata"]["uid"] for p in pods}  # whole groups were replaced
    revisions = cluster.list_revisions(NS, "chat")
    assert len(revisions) == 2 and sorted(r["revision"] for r in revisions) == [1, 2]
    status = cluster.get_modelserving(NS, "chat")["status"]
    assert status["observedGeneration"] == 2
    reasons = {obj["reason"] for (res, _, _), obj in apiserver.emu.store.items() if res == "/v1/events"}
    assert "RolloutStarted" in reasons


def test_an_in_place_update_patches_images_on_the_same_pods_through_the_kubernetes_adapter(cluster, core):
    clock = Clock()
    cluster.create_modelserving(modelserving({"type": "InPlaceRollingUpdate"}))
    drive(cluster, core, clock, until=lambda: converged_on(cluster, "engine:v1"))
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    assert all(
        naming.CONDITION_INPLACE_READY in [g["conditionType"] for g in p["spec"].get("readinessGates", [])]
        for p in cluster.list_pods(NS, "chat")
    )

    cluster.patch_modelserving(NS, "chat", {"spec": {"template": modelserving({}, "engine:v2")["spec"]["template"]}})
    drive(cluster, core, clock, until=lambda: converged_on(cluster, "engine:v2"))

    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in cluster.list_pods(NS, "chat")}
    assert after == before  # same pods, same UIDs: updated in place
    for p in cluster.list_pods(NS, "chat"):
        gate = next(c for c in p["status"]["conditions"] if c["type"] == naming.CONDITION_INPLACE_READY)
        assert gate["status"] == "True"
        assert p["status"]["containerStatuses"][0]["restartCount"] == 1


KTHENA_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kthena"


def test_a_real_kthena_manifest_comes_up_on_the_cluster_with_its_pod_specs_as_written(cluster, core):
    # It writes `nvidia.com/gpu: 1` (a number), as most Kthena examples do: the pods must carry it.
    doc = next(
        d
        for d in yaml.safe_load_all((KTHENA_EXAMPLES / "model-serving__gpu-pd-disaggregation.yaml").read_text())
        if d and d.get("kind") == "ModelServing"
    )
    doc["metadata"] = {"name": "chat", "namespace": NS}
    cluster.create_modelserving(doc)  # a Kthena apiVersion is stored under ours
    roles = doc["spec"]["template"]["roles"]
    expected_pods = doc["spec"].get("replicas", 1) * sum(
        r.get("replicas", 1) * (1 + r.get("workerReplicas", 0)) for r in roles
    )

    def up() -> bool:
        status = cluster.get_modelserving(NS, "chat").get("status") or {}
        return len(cluster.list_pods(NS, "chat")) == expected_pods and status.get("availableReplicas") == doc[
            "spec"
        ].get("replicas", 1)

    drive(cluster, core, Clock(), until=up)
    for p in cluster.list_pods(NS, "chat"):
        role = next(r for r in roles if r["name"] == p["metadata"]["labels"][naming.LABEL_ROLE])
        template = (
            role["entryTemplate"]
            if p["metadata"]["labels"].get(naming.LABEL_ENTRY) == "true"
            else role["workerTemplate"]
        )
        assert p["spec"]["containers"][0]["resources"] == template["spec"]["containers"][0]["resources"]
        assert p["spec"]["containers"][0]["image"] == template["spec"]["containers"][0]["image"]
