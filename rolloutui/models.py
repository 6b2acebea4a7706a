"""Dashboard data: the audit trail of operator actions and the permissions that guard them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ModelServingAccess(models.Model):
    """Holder of the two permissions of the product; it has no table and no rows.

    - ``rolloutui.view_modelserving``: see ModelServings, their state, history and audit trail.
    - ``rolloutui.operate_modelserving``: pause, resume, promote, roll back, set an image, inject
      simulated faults.

    Groups `viewers` (view) and `operators` (view + operate) are created by migration 0002.
    """

    class Meta:
        managed = False
        # No add/change/delete/view_modelservingaccess: exactly the two permissions above.
        default_permissions = ()
        permissions = [
            ("view_modelserving", "Can view ModelServings, their rollout state and audit trail"),
            ("operate_modelserving", "Can pause, resume, promote, roll back and edit ModelServings"),
        ]


class AuditRecord(models.Model):
    """One operator or system action on a ModelServing, successful or not."""

    class Source(models.TextChoices):
        PAGE = "page", "Dashboard page"
        API = "api", "REST API"
        CLI = "cli", "Command line"
        SCENARIO = "scenario", "Scenario"
        SYSTEM = "system", "System"

    class Result(models.TextChoices):
        OK = "ok", "OK"
        ERROR = "error", "Error"

    created_at = models.DateTimeField(default=timezone.now)
    # The user may be deleted later; actor_name keeps who it was (or names a non-user actor such
    # as "scenario:canary" or "system").
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="audit_records",
    )
    actor_name = models.CharField(max_length=150, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    action = models.CharField(max_length=64)  # pause, resume, promote, rollback, set_image, ...
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    reason = models.TextField(blank=True)
    # Revisions as the dashboard shows them (a revision number, or a hash before one exists).
    from_revision = models.CharField(max_length=128, blank=True)
    to_revision = models.CharField(max_length=128, blank=True)
    details = models.JSONField(default=dict, blank=True)
    result = models.CharField(max_length=8, choices=Result.choices, default=Result.OK)
    error = models.TextField(blank=True)

    class Meta:
        # Reading the trail is governed by view_modelserving; nobody edits it.
        default_permissions = ()
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["namespace", "name", "created_at"], name="audit_ms_time_idx"),
        ]

    def __str__(self) -> str:
        who = self.actor_name or "unknown"
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {who} {self.action} {self.namespace}/{self.name} ({self.result})"
