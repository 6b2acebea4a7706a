"""Django admin for the release records (/admin/, staff users).

Writes go through the services, like every other entry point: registering a model version in the
admin calls ``records.register_model_version`` (the contract's checks, the audit record), and an
existing version is read-only (immutable). Deployment revisions are read-only here: plan, deploy,
roll back and promote from the Releases page, the API or the CLI, which check approval and audit.
Environments and their targets are configuration and may be edited.

Every change made here is audited (``AuditedAdmin``): an ``AuditRecord`` with source ``admin``,
the staff user, the client address, and action ``admin_add`` / ``admin_change`` / ``admin_delete``
with ``details`` = ``{"model": "releases.environment", "object": "production", "changes":
{"requires_approval": {"from": true, "to": false}}}`` (``values`` for an added object). A target
added, changed or removed in an environment's form is a record of its own, naming the target's
namespace and name, so it also appears in that ModelServing's audit trail. Django's own admin log
(``LogEntry``) says little (which fields, not their values) and is not where the product's audit is.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models

from controller.core.controls import ControlError

from .models import DeploymentRevision, Environment, ModelVersion, Target

SOURCE = "admin"


def _value(obj: models.Model, field: str) -> Any:
    """A field's value as the audit keeps it (JSON: a foreign key by its id, a date as text)."""
    value = getattr(obj, field)
    if isinstance(value, models.Model):
        return value.pk
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _fields(obj: models.Model) -> list[str]:
    return [f.name for f in obj._meta.concrete_fields if f.name != "id"]


def _where(obj: models.Model) -> tuple[str, str]:
    """The audit record's (namespace, name): a target names its ModelServing, anything else its name."""
    if isinstance(obj, Target):
        return obj.namespace, obj.name
    return "", str(getattr(obj, "name", None) or obj)[:253]


def _audit(request, action: str, obj: models.Model, details: dict[str, Any]) -> None:
    from rolloutui.services import controls, origin

    namespace, name = _where(obj)
    came_from = origin.Origin(client_ip=origin.client_ip(request), auth_method=origin.session_auth_method(request))
    with origin.acting(came_from):
        controls.audit(
            request.user,
            action=action,
            namespace=namespace,
            name=name,
            reason="",
            source=SOURCE,
            details={"model": obj._meta.label_lower, "object": str(obj), **details},
        )


class AuditedAdmin(admin.ModelAdmin):
    """Audits what the admin saves or deletes, with the values before and after (module docstring)."""

    @staticmethod
    def _before(obj: models.Model) -> dict[str, Any] | None:
        if obj.pk is None:
            return None
        stored = type(obj).objects.filter(pk=obj.pk).first()
        return None if stored is None else {f: _value(stored, f) for f in _fields(stored)}

    @staticmethod
    def _record_saved(request, obj: models.Model, before: dict[str, Any] | None) -> None:
        after = {f: _value(obj, f) for f in _fields(obj)}
        if before is None:
            _audit(request, "admin_add", obj, {"values": after})
            return
        changes = {f: {"from": before.get(f), "to": v} for f, v in after.items() if before.get(f) != v}
        if changes:
            _audit(request, "admin_change", obj, {"changes": changes})

    def save_model(self, request, obj, form, change):
        before = self._before(obj) if change else None
        super().save_model(request, obj, form, change)
        self._record_saved(request, obj, before)

    def delete_model(self, request, obj):
        values = {f: _value(obj, f) for f in _fields(obj)}
        super().delete_model(request, obj)
        _audit(request, "admin_delete", obj, {"values": values})

    def save_formset(self, request, form, formset, change):
        # An inline's rows (an environment's targets): each added, changed or removed row is recorded.
        before = {row.pk: self._before(row) for row in formset.get_queryset()} if formset.is_bound else {}
        super().save_formset(request, form, formset, change)
        for row in formset.new_objects:
            self._record_saved(request, row, None)
        for row, _ in formset.changed_objects:
            self._record_saved(request, row, before.get(row.pk))
        for row in formset.deleted_objects:
            _audit(request, "admin_delete", row, {"values": before.get(row.pk) or {}})


class ModelVersionForm(forms.ModelForm):
    class Meta:
        model = ModelVersion
        fields = [attr for attr in ModelVersion.CONTRACT]

    def clean(self):
        data = super().clean()
        from rolloutui.releases import contract

        values = {api: data.get(attr) for api, (_, attr) in contract.MODEL_VERSION_FIELDS.items()}
        try:
            contract.model_version(values)
        except ControlError as err:
            attr = contract.MODEL_VERSION_FIELDS.get((err.field or "").split(".")[0], (None, None))[1]
            raise forms.ValidationError({attr: str(err)} if attr in self.fields else str(err)) from None
        return data


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    form = ModelVersionForm
    list_display = ("model", "version", "status", "runtime_image", "approved_by_name", "created_at")
    list_filter = ("status", "model")
    search_fields = ("model", "version", "evaluation_id")
    readonly_fields = (
        "status",
        "approved_by_name",
        "approved_at",
        "approval_reason",
        "deprecated_by_name",
        "deprecated_at",
        "deprecation_reason",
        "created_at",
        "created_by_name",
    )

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:  # immutable once registered
            return [f.name for f in ModelVersion._meta.fields if f.name != "id"]
        return self.readonly_fields

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        from rolloutui.services import origin
        from rolloutui.services.releases import records

        values = obj.contract_values()
        came_from = origin.Origin(client_ip=origin.client_ip(request), auth_method=origin.session_auth_method(request))
        with origin.acting(came_from):
            mv, _ = records.register_model_version(
                request.user, values, reason="registered in the admin", source=SOURCE
            )
        obj.pk = mv.pk
        obj._state.adding = False


class TargetInline(admin.TabularInline):
    model = Target
    extra = 0


@admin.register(Environment)
class EnvironmentAdmin(AuditedAdmin):
    list_display = ("name", "requires_approval", "rank", "created_at")
    inlines = [TargetInline]

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DeploymentRevision)
class DeploymentRevisionAdmin(AuditedAdmin):
    list_display = ("__str__", "environment", "status", "controller_revision", "deployed_by_name", "deployed_at")
    list_filter = ("status", "environment")
    search_fields = ("target__namespace", "target__name", "model_version__model", "model_version__version")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
