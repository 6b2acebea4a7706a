"""The release approval permission and the group that carries it.

``releases.approve_modelversion`` (group ``approvers``, which can also view): approve a model
version for release, or deprecate one. Separate from ``rolloutui.operate_modelserving`` on purpose:
the person who deploys need not be the one who approves. Migration 0002 creates the group;
``ensure_approvers`` runs after every migrate and test flush (post_migrate), like
``rolloutui.permissions.ensure_groups``.
"""

from __future__ import annotations

APPROVE = "approve_modelversion"
APPROVE_PERMISSION = f"releases.{APPROVE}"
APPROVE_NAME = "Can approve and deprecate model versions for release"
APPROVERS_GROUP = "approvers"


def ensure_approvers(using: str = "default") -> None:
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    from rolloutui.permissions import ensure_groups

    ensure_groups(using)  # the view permission the group also needs
    content_type, _ = ContentType.objects.db_manager(using).get_or_create(app_label="releases", model="modelversion")
    approve, _ = Permission.objects.db_manager(using).get_or_create(
        content_type=content_type, codename=APPROVE, defaults={"name": APPROVE_NAME}
    )
    view = Permission.objects.db_manager(using).get(content_type__app_label="rolloutui", codename="view_modelserving")
    group, _ = Group.objects.db_manager(using).get_or_create(name=APPROVERS_GROUP)
    group.permissions.add(approve, view)


def after_migrate(sender, using="default", plan=None, **kwargs):
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder(connections[using]).applied_migrations()
    if ("releases", "0002_approvers") not in applied or ("rolloutui", "0002_groups") not in applied:
        return
    ensure_approvers(using)
