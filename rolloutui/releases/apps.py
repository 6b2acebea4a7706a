from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ReleasesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rolloutui.releases"
    label = "releases"
    verbose_name = "Releases"

    def ready(self):
        from .permissions import after_migrate

        # sender=self: once per migrate/flush, after auth created the permissions.
        post_migrate.connect(after_migrate, sender=self, dispatch_uid="releases.ensure_approvers")
