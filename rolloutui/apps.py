from django.apps import AppConfig


class RolloutUIConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rolloutui"
    verbose_name = "RolloutUI"
