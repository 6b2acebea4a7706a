"""Django admin for the release records (/admin/, staff users).

Writes go through the services, like every other entry point: registering a model version in the
admin calls ``records.register_model_version`` (the contract's checks, the audit record), and an
existing version is read-only (immutable). Deployment revisions are read-only here: plan, deploy,
roll back and promote from the Releases page, the API or the CLI, which check approval and audit.
Environments and their targets are configuration and may be edited.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin

from controller.core.controls import ControlError

from .models import DeploymentRevision, Environment, ModelVersion, Target


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
        from rolloutui.services.releases import records

        values = obj.contract_values()
        mv, _ = records.register_model_version(request.user, values, reason="registered in the admin", source="page")
        obj.pk = mv.pk
        obj._state.adding = False


class TargetInline(admin.TabularInline):
    model = Target
    extra = 0


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ("name", "requires_approval", "rank", "created_at")
    inlines = [TargetInline]

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DeploymentRevision)
class DeploymentRevisionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "environment", "status", "controller_revision", "deployed_by_name", "deployed_at")
    list_filter = ("status", "environment")
    search_fields = ("target__namespace", "target__name", "model_version__model", "model_version__version")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
