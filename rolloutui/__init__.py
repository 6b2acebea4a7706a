"""RolloutUI: the Django project (settings, runtime, sign-in) and the dashboard app."""

# Importing the Celery app here makes `@shared_task` bind to it in every process that loads
# Django (web, worker, beat, management commands), so tasks enqueue to the configured broker.
from .celery import app as celery_app

__all__ = ("celery_app",)
