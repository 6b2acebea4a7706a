"""Dashboard data: the audit trail of operator actions, the permissions that guard them, the
per-namespace grants of those permissions, and the preview jobs run for the page."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class ModelServingAccess(models.Model):
    """Holder of the two permissions of the product; it has no table and no rows.

    - ``rolloutui.view_modelserving``: see ModelServings, their state, history and audit trail.
    - ``rolloutui.operate_modelserving``: pause, resume, promote, roll back, set an image, inject
      simulated faults.
    - ``rolloutui.ingest_requestrecords``: send request records (``POST /api/request-records/``);
      group ``ingesters`` (created after migrate by ``permissions.ensure_groups``).

    Groups `viewers` (view) and `operators` (view + operate) are created by migration 0002.
    """

    class Meta:
        managed = False
        # No add/change/delete/view_modelservingaccess: exactly the two permissions above.
        default_permissions = ()
        permissions = [
            ("view_modelserving", "Can view ModelServings, their rollout state and audit trail"),
            ("operate_modelserving", "Can pause, resume, promote, roll back and edit ModelServings"),
            ("ingest_requestrecords", "Can send request records of ModelServings (log shippers)"),
        ]


class AuditRecord(models.Model):
    """One operator or system action on a ModelServing, successful or not."""

    class Source(models.TextChoices):
        PAGE = "page", "Dashboard page"
        API = "api", "REST API"
        CLI = "cli", "Command line"
        SCENARIO = "scenario", "Scenario"
        SYSTEM = "system", "System"
        ANALYSIS = "analysis", "Canary analysis"
        AUTOSCALER = "autoscaler", "Autoscaler"
        ADMIN = "admin", "Django admin"

    class Result(models.TextChoices):
        OK = "ok", "OK"
        ERROR = "error", "Error"

    # Actions of accounts rather than of ModelServings (namespace and name empty; rolloutui.signals).
    ACCOUNT_ACTIONS = (
        "login",
        "login_failed",
        "logout",
        "token_issued",
        "token_revoked",
        "ingest_token_issued",
        "ingest_token_revoked",
    )

    class AuthMethod(models.TextChoices):
        SESSION = "session", "Signed-in session"
        TOKEN = "token", "API token"
        CLI = "cli", "Command line (acting as --user)"
        OIDC = "oidc", "OpenID Connect session"
        SYSTEM = "system", "None (system)"

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
    # Where the request came from (the peer address; behind a proxy see ROLLOUTUI_TRUSTED_PROXIES)
    # and how its user was authenticated. The CLI has no address; it records the operating-system
    # account that ran it in os_user (it may act as another dashboard user with --user).
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    auth_method = models.CharField(max_length=16, choices=AuthMethod.choices, blank=True)
    os_user = models.CharField(max_length=150, blank=True)

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


class NamespaceGrant(models.Model):
    """One role granted to one user or one group in one namespace, or in every namespace (``*``).

    Roles are named after the product's groups (``viewer`` -> the permissions of ``viewers``,
    ``operator`` -> ``operators``; a group added to ``rolloutui.permissions.GROUPS`` brings its
    role). Membership of the groups themselves keeps meaning "in all namespaces"; a grant adds a
    namespace-scoped way to hold the same permissions. Managed by administrators (``manage.py
    grant``, the Django shell, or OIDC group claims).
    """

    ALL_NAMESPACES = "*"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="namespace_grants"
    )
    group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="namespace_grants"
    )
    namespace = models.CharField(max_length=253)
    role = models.CharField(max_length=32)
    created_at = models.DateTimeField(default=timezone.now)
    # Grants written from OIDC group claims are replaced at every OIDC sign-in; others are not.
    from_oidc = models.BooleanField(default=False)

    class Meta:
        default_permissions = ()
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(user__isnull=False, group__isnull=True) | models.Q(user__isnull=True, group__isnull=False)
                ),
                name="grant_user_xor_group",
            ),
            models.UniqueConstraint(fields=["user", "namespace", "role"], name="grant_user_unique"),
            models.UniqueConstraint(fields=["group", "namespace", "role"], name="grant_group_unique"),
        ]

    def __str__(self) -> str:
        who = f"user {self.user}" if self.user_id else f"group {self.group}"
        return f"{who}: {self.role} in {self.namespace}"


class PreviewJob(models.Model):
    """A preview of a change, computed by a Celery task (``rolloutui.tasks.run_preview``); the page
    polls ``GET /api/previews/<id>/`` for its progress and result."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        ERROR = "error", "Error"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    patch = models.JSONField(default=dict)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    # {"phase": "settling"|"rolling out", "simulatedSeconds": N, "limitSeconds": N}
    progress = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        default_permissions = ()
        ordering = ["-created_at"]


class OIDCIdentity(models.Model):
    """Who a single sign-on account is at its provider: the ID token's issuer (``iss``) and subject
    (``sub``), which OpenID Connect guarantees stable and unique together (a user name,
    ``preferred_username``, may change or be reused). Sign-on finds the account by these alone
    (``rolloutui.oidc``): a renamed provider user stays the same account, and a provider user
    never becomes a local account that happens to share a name."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities")
    issuer = models.CharField(max_length=512)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)
    # The provider's user name at the last sign-in (the account keeps the name it was created with).
    preferred_username = models.CharField(max_length=255, blank=True)

    class Meta:
        default_permissions = ()
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="oidc_identity_unique")]

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"


class IngestToken(models.Model):
    """A long-lived token a log shipper sends request records with (``POST /api/request-records/``
    only: ``rolloutui.api.ingest_tokens``), acting as ``user`` (an account with
    ``rolloutui.ingest_requestrecords``).

    The token is shown once at issuance; only its SHA-256 digest is kept (it is 256 random bits, so
    no salt or slow hash is needed), with its first characters (``token_key``) to find the row.
    It expires at ``expires_at`` (None: never) and can be revoked; issuance and revocation are
    audited, and ``last_used_at`` says whether a shipper still uses it.
    """

    name = models.CharField(max_length=100, help_text="What it is for, e.g. fluent-bit in production.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingest_tokens")
    token_key = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    created_by_name = models.CharField(max_length=150, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        default_permissions = ()
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"ingest token {self.token_key} ({self.name}) for {self.user}"


class NotificationDelivery(models.Model):
    """One notification sent (or being sent) to one destination: what, where, and how it went.

    Written pending where the event happens; the worker's task (``rolloutui.tasks.deliver_notification``)
    sends it, retrying with back-off, and records each attempt here. The destination's URL is never
    stored (it may hold a token): ``host`` is what the pages show.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    created_at = models.DateTimeField(default=timezone.now)
    destination = models.CharField(max_length=100)
    destination_type = models.CharField(max_length=16)
    host = models.CharField(max_length=253, blank=True)
    kind = models.CharField(max_length=40)
    namespace = models.CharField(max_length=253, blank=True)
    name = models.CharField(max_length=253, blank=True)
    revision = models.CharField(max_length=128, blank=True)
    message = models.TextField(blank=True)
    event_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        default_permissions = ()
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["namespace", "created_at"], name="delivery_ns_time_idx")]


class NotifiedTransition(models.Model):
    """A transition the controller detected (a rollout completed, a deadline passed) that was
    notified: kept so that it is notified once per workload, kind and revision, also across
    restarts of the worker. ``rolling`` rows remember that a revision was seen rolling out, so
    that its completion is a transition and not the steady state found at start."""

    created_at = models.DateTimeField(default=timezone.now)
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    kind = models.CharField(max_length=40)
    revision = models.CharField(max_length=128)

    class Meta:
        default_permissions = ()
        constraints = [
            models.UniqueConstraint(fields=["namespace", "name", "kind", "revision"], name="notified_once"),
        ]
