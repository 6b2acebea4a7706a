from django.apps import AppConfig
from django.db.models.signals import post_migrate


class RolloutUIConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rolloutui"
    verbose_name = "RolloutUI"

    def ready(self):
        from rolloutui import signals  # noqa: F401  (connects the sign-in audit and token revocation)
        from rolloutui.permissions import _after_migrate

        # sender=self: once per migrate/flush, after auth created the permissions.
        post_migrate.connect(_after_migrate, sender=self, dispatch_uid="rolloutui.ensure_groups")

        # Requests cut off at a drain timeout go to the rollout's audit trail (the controller
        # announces them; it never imports the dashboard).
        from controller.runtime.interruptions import requests_interrupted
        from rolloutui.services.audit import record_drain_timeout

        requests_interrupted.connect(record_drain_timeout, dispatch_uid="rolloutui.drain_timeout_audit")

        # What the canary analysis did (pause, rollback) goes to the audit trail, source "analysis".
        from controller.runtime.analysis import analysis_acted
        from rolloutui.services.audit import record_analysis

        analysis_acted.connect(record_analysis, dispatch_uid="rolloutui.analysis_audit")

        # Notifications (docs/notifications.md): the settings are checked now, so a wrong one stops
        # the start with the field it names; audit records and failed releases become deliveries.
        from django.core.exceptions import ImproperlyConfigured
        from django.db.models.signals import post_save

        from rolloutui.models import AuditRecord
        from rolloutui.releases.models import DeploymentRevision
        from rolloutui.services import notifications

        try:
            notifications.destinations()
        except notifications.NotificationConfigError as err:
            raise ImproperlyConfigured(str(err)) from None
        post_save.connect(notifications.record_written, sender=AuditRecord, dispatch_uid="rolloutui.notify_audit")
        post_save.connect(
            notifications.release_saved, sender=DeploymentRevision, dispatch_uid="rolloutui.notify_release"
        )
