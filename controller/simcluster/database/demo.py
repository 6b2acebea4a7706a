"""The demo: 6 nodes x 8 GPUs, ModelServing ``default/demo`` and InferenceService ``default/llm``, with traffic.

``demo`` has 4 ServingGroups of two roles: ``prefill`` (1 instance = an entry pod and 1 worker pod,
2 GPUs each) and ``decode`` (2 instances of one 1-GPU pod), so a group holds 2*2 + 2*1 = 6 GPUs and the
demo 24 of the 48: room for surge and for a failed node. ``maxUnavailable: 1`` replaces one group at a
time; replaced pods are drained (up to 60 s) while 4 requests a second stream through a prefill
then a decode entry pod of one group (``spec.traffic.path``), each with token figures (``TOKENS``,
the images' ``ttftMs`` / ``tpotMs``) for the Paths panel and the TTFT/TPOT comparison. Three
extra images show the physics: ``...-crash`` never becomes Ready, ``...-slow``
loads for 40-60 s, ``...-flaky`` answers one request in five with an error (a bad build for the
canary analysis to catch).

Releases pin runtime images by digest (``name@sha256:<64 hex>``), and the simulated cluster knows an
image by its exact reference, so every demo image also has a digest-pinned twin in ``DIGESTS``
(``vllm/vllm-openai@sha256:`` + the SHA-256 of the tag's reference, a stand-in digest: nothing is
pulled) with the same behaviour. The release demo
(``rolloutui.services.releases.demo``) registers model versions with these images.

Next to it, KServe: the ``inferenceservice-config`` ConfigMap (Standard mode, a default rollout
of ``maxSurge: 50%``) and InferenceService ``default/llm`` with 4 predictor replicas of 1 GPU
(2 requests a second), run by the simulated KServe and Deployment controllers. Its effective
strategy shows two sources: maxSurge 50% = 2 from the ConfigMap, maxUnavailable 25% = 1 from
KServe's default. 4 more GPUs, 2 of surge and 1 for a Standard-mode canary still fit.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from typing import Any

from django.db import transaction

from controller.core import naming
from controller.models import SimClock, SimNode, SimObject, SimTraffic
from controller.simcluster.kserve import controller as kserve_controller

from .config import DEFAULT_TIMING
from .store import DatabaseCluster

IMAGE = "vllm/vllm-openai:v0.9.1"


def pinned(tag_reference: str) -> str:
    """The demo's digest-pinned twin of a tag reference: ``vllm/vllm-openai:v0.9.1`` ->
    ``vllm/vllm-openai@sha256:<SHA-256 of "vllm/vllm-openai:v0.9.1">``."""
    repository = tag_reference.rsplit(":", 1)[0]
    return f"{repository}@sha256:{hashlib.sha256(tag_reference.encode()).hexdigest()}"


# Tag reference -> its digest-pinned twin, for the release demo and `manage.py demo_images`.
DIGESTS = {
    tag: pinned(tag)
    for tag in (
        "vllm/vllm-openai:v0.9.1",
        "vllm/vllm-openai:v0.9.2",
        "vllm/vllm-openai:v0.9.2-crash",
        "vllm/vllm-openai:v0.9.2-slow",
        "vllm/vllm-openai:v0.9.2-flaky",
        "vllm/vllm-openai:v0.9.2-slow-ttft",
        "vllm/vllm-openai:v0.10.0",
    )
}
# Token figures (time to first token on the prefill hop, time per output token on the decode hop)
# and the KV cache format. v0.9.2 is a patch release that keeps v0.9.1's KV format, so one role can move
# to it alone (the README's first rollout updates decode only). v0.10.0 writes a new format: a request
# from a v0.10.0 prefill to a v0.9.x decode, or the other way, fails (kvMismatch) if the router lets it;
# the demo's revision-affine path never does, `routing: blind` does (the README's paths walkthrough).
_TOKENS_V091: dict[str, Any] = {"kvFormat": "v1", "ttftMs": [120, 260], "tpotMs": [18, 30]}
_TOKENS_V092: dict[str, Any] = {"kvFormat": "v1", "ttftMs": [90, 200], "tpotMs": [15, 25]}
_TOKENS_V0100: dict[str, Any] = {"kvFormat": "v2", "ttftMs": [70, 160], "tpotMs": [12, 20]}
_PROFILES: dict[str, dict[str, Any]] = {
    "vllm/vllm-openai:v0.9.1": dict(_TOKENS_V091),
    "vllm/vllm-openai:v0.9.2": dict(_TOKENS_V092),
    "vllm/vllm-openai:v0.10.0": dict(_TOKENS_V0100),
    "vllm/vllm-openai:v0.9.2-crash": {"crash": True},
    "vllm/vllm-openai:v0.9.2-slow": {"load": [40, 60], **_TOKENS_V092},
    "vllm/vllm-openai:v0.9.2-flaky": {"errorRate": 0.2, **_TOKENS_V092},
    # Gets Ready like a good build, then takes 20x longer to the first token: most of its requests are
    # still waiting for one when a window is judged, which is what the latency checks count.
    "vllm/vllm-openai:v0.9.2-slow-ttft": {**_TOKENS_V092, "ttftMs": [2500, 6000]},
}
_DIGEST_PROFILES: dict[str, dict[str, Any]] = {DIGESTS[tag]: profile for tag, profile in _PROFILES.items()}
TRAFFIC = {"rps": 4.0, "duration_low": 2.0, "duration_high": 20.0}
# Tokens per request (drawn uniformly; the cluster config's ``tokens``): with the images' ttftMs and
# tpotMs a request lasts ttft + output x tpot, about 2-18 s, as ``TRAFFIC``'s durations did.
TOKENS = {"input": [200, 2000], "output": [100, 600]}
CONFIG: dict[str, Any] = {"timing": DEFAULT_TIMING, "images": {**_PROFILES, **_DIGEST_PROFILES}, "tokens": TOKENS}


def _container(gpus: int, image: str = IMAGE) -> dict[str, Any]:
    return {"name": "engine", "image": image, "resources": {"limits": {naming.GPU_RESOURCE: str(gpus)}}}


DEMO_MANIFEST: dict[str, Any] = {
    "apiVersion": naming.API_VERSION,
    "kind": naming.KIND,
    "metadata": {"name": "demo", "namespace": "default"},
    "spec": {
        "replicas": 4,
        "drain": {"timeoutSeconds": 60},
        # Every request goes prefill -> decode inside one ServingGroup, on one revision (the Paths panel).
        "traffic": {"path": ["prefill", "decode"]},
        "rolloutStrategy": {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}},
        "template": {
            "roles": [
                {
                    "name": "prefill",
                    "replicas": 1,
                    "workerReplicas": 1,
                    "entryTemplate": {"spec": {"containers": [_container(2)]}},
                    "workerTemplate": {"spec": {"containers": [_container(2)]}},
                },
                {
                    "name": "decode",
                    "replicas": 2,
                    "workerReplicas": 0,
                    "entryTemplate": {"spec": {"containers": [_container(1)]}},
                },
            ]
        },
    },
}


KSERVE_DEPLOY = json.dumps(
    {"defaultDeploymentMode": "Standard", "deploymentRolloutStrategy": {"defaultRollout": {"maxSurge": "50%"}}}
)
DEMO_INFERENCESERVICE: dict[str, Any] = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llm", "namespace": "default"},
    "spec": {
        "predictor": {
            "minReplicas": 4,
            "model": {
                "modelFormat": {"name": "vLLM"},
                "image": IMAGE,
                "storageUri": "s3://models/llama-3.1-8b-instruct",
                "resources": {"limits": {naming.GPU_RESOURCE: "1"}},
            },
        }
    },
}
ISVC_TRAFFIC = {"rps": 2.0, "duration_low": 1.0, "duration_high": 8.0}


def load_demo(
    cluster: DatabaseCluster,
    *,
    nodes: int = 6,
    gpus: int = 8,
    manifest: dict[str, Any] | None = None,
    isvc: dict[str, Any] | None = None,
) -> list[str]:
    """Fill an empty simulated cluster. Returns what was done (empty: nothing to do).

    ``cluster``: the database-backed cluster, wired by the runtime so the new ModelServing is
    reconciled at once (``controller.runtime.backend.sim_cluster``)."""
    done = []
    clock = cluster.clock
    clock.forget()  # re-read (or create) the clock row now
    clock.now()
    with transaction.atomic():
        wall = time.time()
        SimClock.objects.get_or_create(pk=1, defaults={"wall_base": wall, "sim_base": wall, "speed": clock.speed})
        row = SimClock.objects.select_for_update().get(pk=1)
        if not row.config:
            row.config = copy.deepcopy(CONFIG)
            row.save(update_fields=["config"])
            done.append("stored the simulated cluster's timings and image behaviour")
        else:
            # A cluster stored before a demo image existed (the digest-pinned twins, the flaky tag)
            # learns it (and nothing an operator configured is overwritten).
            images = dict(row.config.get("images") or {})
            missing = {image: p for image, p in CONFIG["images"].items() if image not in images}
            if missing:
                row.config = {**row.config, "images": {**images, **copy.deepcopy(missing)}}
                row.save(update_fields=["config"])
                done.append(f"stored the behaviour of {len(missing)} demo image{'s' if len(missing) != 1 else ''}")
            if "tokens" not in row.config:
                # A cluster stored before requests had token figures learns the demo's.
                row.config = {**row.config, "tokens": copy.deepcopy(TOKENS)}
                row.save(update_fields=["config"])
                done.append("stored the demo's token figures per request")
    if not SimNode.objects.exists():
        for _ in range(nodes):
            cluster.add_node(gpus)
        done.append(f"created {nodes} nodes with {gpus} GPUs each")
    if not SimObject.objects.filter(kind=SimObject.KIND_MODELSERVING).exists():
        done.append(create_with_traffic(cluster, manifest or DEMO_MANIFEST))
    if not SimObject.objects.filter(kind=SimObject.KIND_INFERENCESERVICE).exists():
        if not SimObject.objects.filter(
            kind=SimObject.KIND_CONFIGMAP,
            namespace=kserve_controller.CONFIG_NAMESPACE,
            name=kserve_controller.CONFIG_NAME,
        ).exists():
            cluster.create_object(kserve_controller.config_map(KSERVE_DEPLOY))
            config_map = f"{kserve_controller.CONFIG_NAMESPACE}/{kserve_controller.CONFIG_NAME}"
            done.append(f"created ConfigMap {config_map} (Standard mode)")
        body = copy.deepcopy(isvc or DEMO_INFERENCESERVICE)
        meta = body["metadata"]
        cluster.create_object(body)
        SimTraffic.objects.update_or_create(
            kind=SimTraffic.KIND_INFERENCESERVICE,
            namespace=meta.get("namespace", "default"),
            name=meta["name"],
            defaults=ISVC_TRAFFIC,
        )
        done.append(
            f"created InferenceService {meta.get('namespace', 'default')}/{meta['name']} with "
            f"{ISVC_TRAFFIC['rps']:g} requests/s of traffic"
        )
    return done


def create_with_traffic(cluster: DatabaseCluster, manifest: dict[str, Any], traffic: dict | None = None) -> str:
    """Create a demo ModelServing and its simulated traffic (``TRAFFIC`` by default). Returns what was done."""
    body = copy.deepcopy(manifest)
    meta = body["metadata"]
    traffic = TRAFFIC if traffic is None else traffic
    cluster.create_modelserving(body)
    SimTraffic.objects.update_or_create(
        kind=SimTraffic.KIND_MODELSERVING,
        namespace=meta.get("namespace", "default"),
        name=meta["name"],
        defaults=traffic,
    )
    return (
        f"created ModelServing {meta.get('namespace', 'default')}/{meta['name']} with {traffic['rps']:g} "
        "requests/s of traffic"
    )
