"""Release records: ModelVersion, Environment (with its Targets) and DeploymentRevision.

Place in the flow: a trained model is registered as a ModelVersion (immutable: a change is a new
version), approved by someone allowed to approve, and deployed as a DeploymentRevision of an
Environment's Target; the deploy writes it into the target ModelServing's templates
(``rolloutui.services.releases.deploy``), and the controller's passes move its status
(``rolloutui.services.releases.status``). The contract is docs/releases.md, "Records"; the
field checks are ``rolloutui.releases.contract``.

Rows are written by the services only (the API, the CLI, the pages and the admin call them); the
models guard what must never change: a ModelVersion's contract and a DeploymentRevision's content
are refused on update (``ImmutableRecord``), and a status moves only along ``TRANSITIONS``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from controller.core.controls import ControlError

from . import contract


class ImmutableRecord(ControlError):
    """An update tried to change a field that is fixed once the record exists."""


def _changed_fields(instance: models.Model, fields: tuple[str, ...]) -> list[str]:
    if instance._state.adding or instance.pk is None:
        return []
    stored = type(instance).objects.filter(pk=instance.pk).values(*fields).first()
    if stored is None:
        return []
    return [f for f in fields if stored[f] != getattr(instance, f)]


class ModelVersion(models.Model):
    """One trained model release with its whole runtime contract (seed 004, section 2)."""

    class Status(models.TextChoices):
        REGISTERED = "Registered"
        APPROVED = "Approved"
        DEPRECATED = "Deprecated"

    model = models.CharField(max_length=63, help_text="Model name (a DNS label).")
    version = models.CharField(max_length=63, help_text="Version name, unique per model (v12, 2025.06.1).")
    artifact_uri = models.CharField(max_length=2048, help_text="Where the weights are (s3://, gs://, hf://, pvc://).")
    artifact_checksum = models.CharField(max_length=80, help_text="sha256:<64 hex> of the artifact.")
    format = models.CharField(max_length=64, help_text="Model format, e.g. safetensors, gguf, onnx.")
    framework_version = models.CharField(max_length=64, blank=True, help_text="e.g. vllm 0.9.1.")
    preprocessing = models.JSONField(default=dict, blank=True, help_text='{"ref": tokenizer reference, "checksum"}.')
    input_schema_version = models.CharField(max_length=64)
    output_schema_version = models.CharField(max_length=64)
    runtime_image = models.CharField(max_length=1024, help_text="Pinned by digest: name@sha256:<64 hex>.")
    resources = models.JSONField(default=dict, blank=True, help_text='{"cpu", "memory", "gpus"} it needs.')
    batching = models.JSONField(default=dict, blank=True, help_text='{"maxBatchSize", "maxConcurrentSequences"}.')
    timeouts = models.JSONField(default=dict, blank=True, help_text='{"requestSeconds", "loadSeconds"}.')
    source = models.JSONField(default=dict, blank=True, help_text='{"trainingJob", "dataVersion"}.')
    evaluation_id = models.CharField(max_length=128, blank=True)
    labels = models.JSONField(default=dict, blank=True)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REGISTERED)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_by_name = models.CharField(max_length=150, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approval_reason = models.TextField(blank=True)
    deprecated_by_name = models.CharField(max_length=150, blank=True)
    deprecated_at = models.DateTimeField(null=True, blank=True)
    deprecation_reason = models.TextField(blank=True)

    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_name = models.CharField(max_length=150, blank=True)

    # The contract: fixed once registered (a change is a new version).
    CONTRACT = tuple(attr for _, attr in contract.MODEL_VERSION_FIELDS.values())

    class Meta:
        constraints = [models.UniqueConstraint(fields=["model", "version"], name="modelversion_model_version_unique")]
        ordering = ["model", "-created_at", "-id"]
        # add/view through the services and the admin; no change or delete of a release record.
        default_permissions = ("add", "view")
        permissions = [("approve_modelversion", "Can approve and deprecate model versions for release")]

    def __str__(self) -> str:
        return f"{self.model}:{self.version}"

    @property
    def key(self) -> str:
        """``model:version``, how the CLI and the audit name it."""
        return f"{self.model}:{self.version}"

    @property
    def label_value(self) -> str:
        return contract.model_version_label(self.model, self.version)

    @property
    def was_approved(self) -> bool:
        """Approved now, or approved before it was deprecated."""
        return self.status == self.Status.APPROVED or self.approved_at is not None

    def contract_values(self) -> dict[str, Any]:
        """API field name -> value, in the contract's order."""
        return {api: getattr(self, attr) for api, (_, attr) in contract.MODEL_VERSION_FIELDS.items()}

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        try:
            contract.model_version(self.contract_values())
        except ControlError as err:
            attr = contract.MODEL_VERSION_FIELDS.get((err.field or "").split(".")[0], (None, None))[1]
            raise ValidationError({attr or "__all__": str(err)}) from None

    def save(self, *args, **kwargs) -> None:
        changed = _changed_fields(self, self.CONTRACT)
        if changed:
            api = {attr: name for name, (_, attr) in contract.MODEL_VERSION_FIELDS.items()}
            first = api[changed[0]]
            raise ImmutableRecord(
                f"{first}: model version {self.key} is immutable; register a new version to change "
                + ", ".join(api[c] for c in changed),
                field=first,
            )
        super().save(*args, **kwargs)


class Environment(models.Model):
    """A named set of targets (staging, production) with its resource profiles and approval rule."""

    name = models.CharField(max_length=63, unique=True)
    description = models.CharField(max_length=500, blank=True)
    requires_approval = models.BooleanField(
        default=False, help_text="Only Approved model versions may be deployed here."
    )
    resource_profiles = models.JSONField(
        default=dict, blank=True, help_text='Named profiles: {"gpu-small": {"resources": {...}, "replicas": 2}}.'
    )
    rank = models.PositiveIntegerField(default=0, help_text="Listing order (staging before production).")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["rank", "name"]
        default_permissions = ("add", "change", "view")
        # Held in a namespace (services.access), it lets a direct control put an image no approved
        # version carries on that namespace's targets of an environment that requires approval.
        permissions = [("bypass_approval", "Can change a target that requires approval without an approved release")]

    def __str__(self) -> str:
        return self.name


class Target(models.Model):
    """Where an environment's releases go: a ModelServing and the roles that run the model, or an
    InferenceService component (its model or container gets the release)."""

    class Kind(models.TextChoices):
        MODELSERVING = contract.KIND_MODELSERVING
        INFERENCESERVICE = contract.KIND_INFERENCESERVICE

    environment = models.ForeignKey(Environment, on_delete=models.CASCADE, related_name="targets")
    kind = models.CharField(max_length=32, choices=Kind.choices, default=Kind.MODELSERVING)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=253)
    roles = models.JSONField(default=list, blank=True, help_text="ModelServing roles that run the model.")
    container = models.CharField(max_length=253, blank=True, help_text="Container name; default the first.")
    component = models.CharField(max_length=63, blank=True, help_text="InferenceService component.")

    class Meta:
        # One ModelServing belongs to one environment: its page can say which releases it runs.
        constraints = [models.UniqueConstraint(fields=["kind", "namespace", "name"], name="target_object_unique")]
        ordering = ["environment__rank", "namespace", "name"]
        default_permissions = ("add", "change", "view")

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


class DeploymentRevision(models.Model):
    """One concrete release: this model version, with this profile and config, on this target."""

    class Status(models.TextChoices):
        PENDING = "Pending"
        DEPLOYING = "Deploying"
        SERVING = "Serving"
        FAILED = "Failed"
        SUPERSEDED = "Superseded"
        ROLLED_BACK = "RolledBack"

    # Which status may follow which. Serving and Failed end a rollout; Superseded and RolledBack
    # end a release's life (a later deploy, or a rollback away from it, took its place).
    TRANSITIONS: dict[str, frozenset[str]] = {
        Status.PENDING: frozenset({Status.DEPLOYING}),
        Status.DEPLOYING: frozenset({Status.SERVING, Status.FAILED, Status.SUPERSEDED, Status.ROLLED_BACK}),
        Status.SERVING: frozenset({Status.SUPERSEDED, Status.ROLLED_BACK}),
        Status.FAILED: frozenset({Status.SUPERSEDED, Status.ROLLED_BACK}),
        Status.SUPERSEDED: frozenset(),
        Status.ROLLED_BACK: frozenset(),
    }
    # The release that is (or was last) live on its target: at most one per target.
    ACTIVE = (Status.DEPLOYING, Status.SERVING, Status.FAILED)

    environment = models.ForeignKey(Environment, on_delete=models.PROTECT, related_name="deployments")
    model_version = models.ForeignKey(ModelVersion, on_delete=models.PROTECT, related_name="deployments")
    target = models.ForeignKey(Target, on_delete=models.PROTECT, related_name="deployments")
    number = models.PositiveIntegerField(help_text="Per target, increasing: r1, r2, ...")
    roles = models.JSONField(default=list, help_text="The target's roles at creation.")
    container = models.CharField(max_length=253, blank=True)
    resource_profile = models.CharField(max_length=63, blank=True)
    profile = models.JSONField(default=dict, blank=True, help_text="The resource profile as it was at creation.")
    config = models.JSONField(default=dict, blank=True, help_text="Batching/timeout overrides.")
    reason = models.TextField(blank=True, help_text="Why this release was made.")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_name = models.CharField(max_length=150, blank=True)
    restores = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="restored_by",
        help_text="The release a rollback restored.",
    )  # fmt: skip
    promoted_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="promoted_to",
        help_text="The staging release this production release was promoted from.",
    )  # fmt: skip

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    status_reason = models.TextField(blank=True)
    status_changed_at = models.DateTimeField(default=timezone.now)
    deployed_at = models.DateTimeField(null=True, blank=True)
    deployed_by_name = models.CharField(max_length=150, blank=True)
    controller_revision = models.CharField(max_length=128, blank=True, help_text="Hash of the revision it produced.")
    controller_revision_number = models.PositiveIntegerField(null=True, blank=True)
    # The ModelServing's metadata.generation the deploy wrote: a state read before it says nothing
    # about this release (see services.releases.status).
    generation = models.BigIntegerField(null=True, blank=True)
    events = models.JSONField(default=list, blank=True, help_text='[{"status", "at", "by", "reason"}], oldest first.')
    # What the deploy left in the resources layer (replicas and container resources per role), so a
    # rollback to this release restores them too (services.releases.templates.snapshot).
    applied = models.JSONField(default=dict, blank=True)

    CONTENT = (
        "environment_id",
        "model_version_id",
        "target_id",
        "number",
        "roles",
        "container",
        "resource_profile",
        "profile",
        "config",
        "reason",
        "created_by_name",
        "restores_id",
        "promoted_from_id",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["target", "number"], name="deploymentrevision_number_unique")]
        ordering = ["-created_at", "-id"]
        default_permissions = ("add", "view")
        indexes = [models.Index(fields=["status"], name="deployrev_status_idx")]

    def __str__(self) -> str:
        return f"r{self.number} ({self.model_version_id and self.model_version.version}) on {self.target}"

    @property
    def label(self) -> str:
        """``r31 · v12``: how the dashboard shows it beside a controller revision."""
        return f"r{self.number} · {self.model_version.version}"

    def save(self, *args, **kwargs) -> None:
        changed = _changed_fields(self, self.CONTENT)
        if changed:
            raise ImmutableRecord(
                f"deployment revision r{self.number} is immutable ({', '.join(changed)}); make a new one",
                field=changed[0].removesuffix("_id"),
            )
        super().save(*args, **kwargs)

    def move(self, status: str, *, reason: str = "", by: str = "") -> None:
        """Change the status along ``TRANSITIONS`` and record the event (the caller saves).
        Raises ``ControlError`` on field ``status`` for a move the machine does not allow."""
        if status == self.status:
            return
        if status not in self.TRANSITIONS.get(self.status, frozenset()):
            raise ControlError(
                f"r{self.number} is {self.status}; it cannot become {status}", field="status"
            )  # fmt: skip
        now = timezone.now()
        self.status = status
        self.status_reason = reason
        self.status_changed_at = now
        self.events = [*self.events, {"status": status, "at": now.isoformat(), "by": by, "reason": reason}]
