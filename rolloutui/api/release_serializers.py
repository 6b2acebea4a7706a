"""Schemas of the release records' endpoints (``releases.py``), for the OpenAPI document.

As with the state payloads, the bodies are produced and checked by the services
(``rolloutui.services.releases.records`` and ``rolloutui.releases.contract``: a bad value is a 400
naming the field, with the same words as the CLI); these classes describe them.
"""

from __future__ import annotations

from rest_framework import serializers

from rolloutui.releases.models import DeploymentRevision, ModelVersion

from .audit_serializers import AuditRecordSerializer


def _json(help_text: str, *, required: bool = False) -> serializers.JSONField:
    return serializers.JSONField(required=required, help_text=help_text)


class ModelVersionCreateSerializer(serializers.Serializer):
    """A model version to register (immutable once registered: a change is a new version)."""

    model = serializers.CharField(help_text="Model name, a DNS label (demo-llm).")
    version = serializers.CharField(help_text="Version, unique per model (v12).")
    artifactUri = serializers.CharField(help_text="Where the weights are: s3://, gs://, hf://, pvc://, https://.")
    artifactChecksum = serializers.CharField(help_text="sha256:<64 hex digits> of the artifact.")
    format = serializers.CharField(help_text="Model format: safetensors, gguf, onnx, ...")
    frameworkVersion = serializers.CharField(required=False, help_text="e.g. vllm 0.9.1.")
    preprocessing = _json('{"ref": tokenizer or preprocessing reference, "checksum": "sha256:..."}.')
    inputSchemaVersion = serializers.CharField()
    outputSchemaVersion = serializers.CharField()
    runtimeImage = serializers.CharField(
        help_text="Pinned by digest: registry/repository[:tag]@sha256:<64 hex>. A tag alone is refused."
    )
    resources = _json('What one pod needs: {"cpu": "8", "memory": "64Gi", "gpus": 1}.')
    batching = _json('{"maxBatchSize": 16, "maxConcurrentSequences": 256}.')
    timeouts = _json('{"requestSeconds": 60, "loadSeconds": 600}.')
    source = _json('{"trainingJob": "...", "dataVersion": "..."}.')
    evaluationId = serializers.CharField(required=False)
    labels = _json("Free-form string labels.")
    reason = serializers.CharField(required=False, help_text="Why it is registered (audit trail).")


class ModelVersionSerializer(ModelVersionCreateSerializer):
    """A registered model version: its contract, its approval state and (detail) its releases."""

    reason = None
    key = serializers.CharField(help_text="model:version")
    status = serializers.ChoiceField(choices=ModelVersion.Status.choices)
    approval = _json('{"by", "at", "reason"} once approved, else null.')
    deprecation = _json('{"by", "at", "reason"} once deprecated, else null.')
    createdAt = serializers.DateTimeField()
    createdBy = serializers.CharField()
    deployments = _json("Detail only: its releases, newest first.")


class TargetSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["ModelServing", "InferenceService"], default="ModelServing")
    namespace = serializers.CharField()
    name = serializers.CharField()
    roles = serializers.ListField(child=serializers.CharField(), required=False, help_text="ModelServing roles.")
    container = serializers.CharField(required=False, help_text="Container name; default each template's first.")
    component = serializers.CharField(required=False, help_text="InferenceService component (predictor).")


class EnvironmentCreateSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="A DNS label: staging, production.")
    description = serializers.CharField(required=False)
    requiresApproval = serializers.BooleanField(required=False, default=False)
    resourceProfiles = _json('{"gpu-small": {"resources": {"gpus": 1}, "replicas": 2, "roles": {"prefill": {...}}}}.')
    rank = serializers.IntegerField(required=False, min_value=0, help_text="Listing order.")
    targets = TargetSerializer(many=True, required=False)
    reason = serializers.CharField(required=False)


class EnvironmentSerializer(EnvironmentCreateSerializer):
    reason = None
    targets = _json("Targets, each with the release live on it (active).")


class ReleaseCreateSerializer(serializers.Serializer):
    """A release to plan (status Pending; POST .../deploy starts it)."""

    environment = serializers.CharField()
    modelVersion = serializers.CharField(help_text="MODEL:VERSION, e.g. demo-llm:v2.")
    target = serializers.CharField(required=False, help_text="namespace/name; optional when the environment has one.")
    resourceProfile = serializers.CharField(required=False, help_text="A resource profile of the environment.")
    config = _json('Batching/timeout overrides: {"batching": {...}, "timeouts": {...}}.')
    reason = serializers.CharField(help_text="Why this release is made.")
    deploy = serializers.BooleanField(
        required=False,
        help_text=(
            "Deploy it at once, in the same action: a refused deploy leaves no Pending release behind "
            "(the answer's audit record is then the deploy's)."
        ),
    )


class ReleaseSerializer(serializers.Serializer):
    """One DeploymentRevision."""

    number = serializers.IntegerField(help_text="Per target, increasing: r1, r2, ...")
    label = serializers.CharField(help_text="r31 · v12")
    environment = serializers.CharField()
    modelVersion = _json('{"key", "model", "version", "status"}.')
    target = TargetSerializer()
    roles = serializers.ListField(child=serializers.CharField())
    container = serializers.CharField()
    resourceProfile = serializers.CharField()
    profile = _json("The resource profile as it was when the release was made.")
    config = _json("Batching/timeout overrides.")
    status = serializers.ChoiceField(choices=DeploymentRevision.Status.choices)
    statusReason = serializers.CharField()
    statusChangedAt = serializers.DateTimeField()
    reason = serializers.CharField()
    createdAt = serializers.DateTimeField()
    createdBy = serializers.CharField()
    deployedAt = serializers.DateTimeField(allow_null=True)
    deployedBy = serializers.CharField()
    controllerRevision = _json('{"hash", "number"} of the controller revision it produced, or null.')
    restores = serializers.IntegerField(allow_null=True, help_text="The release a rollback restored.")
    promotedFrom = _json('{"environment", "namespace", "name", "number"} or null.')
    events = _json('[{"status", "at", "by", "reason"}], oldest first.')


class ReleaseChangeSerializer(serializers.Serializer):
    """What deploying or restoring a release would change now, per layer."""

    release = ReleaseSerializer()
    live = _json("The release live on the target now, or null.")
    layers = _json(
        '[{"layer": "model"|"image"|"config"|"resources"|"schema", "changes": [{"role", "field", "from", "to"}]}]'
    )
    changed = serializers.ListField(child=serializers.CharField())


class ModelServingReleasesSerializer(serializers.Serializer):
    environment = serializers.CharField(allow_null=True)
    requiresApproval = serializers.BooleanField(required=False)
    active = ReleaseSerializer(allow_null=True)
    byRevision = _json('Controller revision hash -> {"number", "label": "r31 · v12", "status", ...}.')
    history = _json("Its releases, newest first (at most 50).")


class ModelVersionResultSerializer(serializers.Serializer):
    audit = AuditRecordSerializer()
    modelVersion = ModelVersionSerializer(required=False)


class ReleaseResultSerializer(serializers.Serializer):
    audit = AuditRecordSerializer()
    deploymentRevision = ReleaseSerializer(required=False)


class EnvironmentResultSerializer(serializers.Serializer):
    audit = AuditRecordSerializer()
    environment = EnvironmentSerializer()


# Target kind (``services.actions.Target.kind``) -> the answer of its actions.
ANSWERS = {"modelversion": ModelVersionResultSerializer, "deploymentrevision": ReleaseResultSerializer}


class ModelVersionQuerySerializer(serializers.Serializer):
    model = serializers.CharField(required=False, allow_blank=True)
    status = serializers.ChoiceField(choices=ModelVersion.Status.choices, required=False, allow_blank=True)
    q = serializers.CharField(required=False, allow_blank=True, help_text="Substring of model, version or evaluation.")


class ReleaseQuerySerializer(serializers.Serializer):
    environment = serializers.CharField(required=False, allow_blank=True)
    model = serializers.CharField(required=False, allow_blank=True)
    version = serializers.CharField(required=False, allow_blank=True)
    namespace = serializers.CharField(required=False, allow_blank=True)
    name = serializers.CharField(required=False, allow_blank=True)
    status = serializers.ChoiceField(choices=DeploymentRevision.Status.choices, required=False, allow_blank=True)
