"""The release demo `make run` loads: two versions of the demo model, staging and production, and
the demo ModelServings serving the first version, so a new user can deploy the other version, watch
its gates, approve it, promote it and roll back from the browser.

Loaded once, into an empty release registry (``manage.py load_release_demo``, which ``runall`` runs
after ``load_demo``):

- ModelVersions ``demo-llm:v1`` (Approved) and ``demo-llm:v2`` (Registered), their runtime images
  the digest-pinned twins of ``vllm/vllm-openai:v0.9.1`` and ``:v0.9.2``
  (``DIGESTS``, through ``controller.runtime.simulator``: the simulated cluster knows their behaviour);
- Environment ``staging`` (no approval needed) with target ``default/demo`` (roles prefill and
  decode) and ``production`` (approval required) with target ``production/demo``, a two-group copy of
  the demo created here; both with the resource profile ``pd-standard`` (prefill 2 GPUs, decode 1);
- release r1 of ``demo-llm:v1`` deployed to both.

The acting user is the operator account (``ROLLOUTUI_ADMIN_USER``, default ``admin``); the demo also
puts it in the ``approvers`` group so one person can try the whole flow (in a real installation the
approver is someone else). The versions are registered by ``demo-trainer``, an account standing for
the training pipeline (in ``operators``, without a password: nobody signs in as it), because four
eyes forbid approving a version one registered oneself.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from django.contrib.auth.models import Group

from controller.runtime.simulator import DEMO_MANIFEST, DIGESTS, create_with_traffic
from rolloutui.releases.models import Environment, ModelVersion
from rolloutui.releases.permissions import APPROVERS_GROUP

from ..cluster import get_cluster
from . import deploy, records

MODEL = "demo-llm"
PROFILES = {"pd-standard": {"roles": {"prefill": {"resources": {"gpus": 2}}, "decode": {"resources": {"gpus": 1}}}}}
ROLES = ["prefill", "decode"]
PRODUCTION = ("production", "demo")
PRODUCTION_TRAFFIC = {"rps": 2.0, "duration_low": 2.0, "duration_high": 20.0}
TRAINER = "demo-trainer"


def _sha256(text: str) -> str:
    # Stand-in checksums of artifacts that do not exist: the SHA-256 of their names.
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def version(name: str, tag: str, *, schema: str, batch: int) -> dict[str, Any]:
    uri = f"s3://models/{MODEL}/{name}/"
    return {
        "model": MODEL,
        "version": name,
        "artifactUri": uri,
        "artifactChecksum": _sha256(uri),
        "format": "safetensors",
        "frameworkVersion": f"vllm {tag.rsplit(':v', 1)[-1]}",
        "preprocessing": {"ref": f"hf://demo/tokenizer@{name}", "checksum": _sha256(f"tokenizer {name}")},
        "inputSchemaVersion": schema,
        "outputSchemaVersion": schema,
        "runtimeImage": DIGESTS[tag],
        "resources": {"cpu": "8", "memory": "64Gi", "gpus": 1},
        "batching": {"maxBatchSize": batch, "maxConcurrentSequences": 128},
        "timeouts": {"requestSeconds": 60, "loadSeconds": 600},
        "source": {"trainingJob": f"train-{MODEL}-{name}", "dataVersion": "2025-06"},
        "evaluationId": f"eval-{MODEL}-{name}",
        "labels": {"team": "demo"},
    }


VERSIONS = [
    version("v1", "vllm/vllm-openai:v0.9.1", schema="chat-v1", batch=16),
    version("v2", "vllm/vllm-openai:v0.9.2", schema="chat-v2", batch=32),
]


def production_manifest() -> dict[str, Any]:
    body = copy.deepcopy(DEMO_MANIFEST)
    body["metadata"] = {"namespace": PRODUCTION[0], "name": PRODUCTION[1]}
    body["spec"]["replicas"] = 2
    return body


def _trainer():
    """The account that registers the demo's versions (see the module docstring)."""
    from django.contrib.auth import get_user_model

    from ..accounts import OPERATORS_GROUP

    trainer, created = get_user_model().objects.get_or_create(username=TRAINER)
    if created:
        trainer.set_unusable_password()
        trainer.save(update_fields=["password"])
        trainer.groups.add(Group.objects.get(name=OPERATORS_GROUP))
    return trainer


def load_release_demo(user) -> list[str]:
    """Fill an empty release registry (see the module docstring). Returns what was done."""
    if ModelVersion.objects.exists() or Environment.objects.exists():
        return []
    done = []
    user.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    done.append(f"put {user.get_username()} in the approvers group (the demo's one person approves too)")
    cluster = get_cluster()
    try:
        cluster.get_modelserving(*PRODUCTION)
    except Exception:
        done.append(create_with_traffic(cluster, production_manifest(), PRODUCTION_TRAFFIC))
    trainer = _trainer()
    for values in VERSIONS:
        records.register_model_version(trainer, values, reason="demo model version", source="system")
    records.approve(user, MODEL, "v1", reason="demo: evaluation passed", source="system")
    done.append(f"registered {MODEL}:v1 (Approved) and {MODEL}:v2 (Registered)")
    for name, rank, approval, (namespace, ms) in (
        ("staging", 1, False, ("default", "demo")),
        ("production", 2, True, PRODUCTION),
    ):
        records.create_environment(
            user,
            {
                "name": name,
                "rank": rank,
                "requiresApproval": approval,
                "description": f"demo {name}",
                "resourceProfiles": PROFILES,
                "targets": [{"namespace": namespace, "name": ms, "roles": ROLES}],
            },
            reason="demo environment",
            source="system",
        )
        dr, _ = records.create_release(
            user,
            {
                "environment": name,
                "modelVersion": f"{MODEL}:v1",
                "resourceProfile": "pd-standard",
                "reason": "demo: first release",
            },
            source="system",
        )
        deploy.deploy(user, namespace, ms, dr.number, reason="demo: first release", source="system")
        done.append(f"deployed r{dr.number} ({MODEL}:v1) to {name} ({namespace}/{ms})")
    return done
