"""The release layer's permissions and the groups that carry them.

- ``releases.approve_modelversion`` (group ``approvers``, which can also view): approve a model
  version for release, or deprecate one. Separate from ``rolloutui.operate_modelserving`` on
  purpose: the person who deploys need not be the one who approves (and whoever registered a
  version, or planned a release of it where approval is required, may not approve it:
  ``services.releases.records``).
- ``releases.bypass_approval`` (group ``release-admins``, which can also view): change a target of
  an environment that requires approval directly (set-image, apply, rollback to a controller
  revision) with an image no approved model version carries, e.g. an incident's hotfix
  (``services.releases.approval``). Without it such a change needs an approved release.

Migrations 0002 and 0003 create the groups; ``ensure_release_groups`` runs after every migrate and
test flush (post_migrate), like ``rolloutui.permissions.ensure_groups``. Both groups are also roles
of namespace grants (``approver``, ``release-admin``: ``rolloutui.permissions.RELEASE_GROUPS``).
"""

from __future__ import annotations

from rolloutui import permissions

APPROVE = permissions.APPROVE
APPROVE_PERMISSION = f"releases.{APPROVE}"
APPROVE_NAME = "Can approve and deprecate model versions for release"
APPROVERS_GROUP = "approvers"
BYPASS = permissions.BYPASS_APPROVAL
BYPASS_PERMISSION = f"releases.{BYPASS}"
BYPASS_NAME = "Can change a target that requires approval without an approved release"
RELEASE_ADMINS_GROUP = "release-admins"
# codename -> (model that declares it, name)
DECLARED = {APPROVE: ("modelversion", APPROVE_NAME), BYPASS: ("environment", BYPASS_NAME)}


def ensure_release_groups(using: str = "default") -> None:
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    permissions.ensure_groups(using)  # the view permission the groups also need
    found = {
        permissions.VIEW: Permission.objects.db_manager(using).get(
            content_type__app_label="rolloutui", codename=permissions.VIEW
        )
    }
    for codename, (model, name) in DECLARED.items():
        content_type, _ = ContentType.objects.db_manager(using).get_or_create(app_label="releases", model=model)
        found[codename], _ = Permission.objects.db_manager(using).get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
    for group_name, codenames in permissions.RELEASE_GROUPS.items():
        group, _ = Group.objects.db_manager(using).get_or_create(name=group_name)
        group.permissions.add(*(found[c] for c in codenames))


def after_migrate(sender, using="default", plan=None, **kwargs):
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder(connections[using]).applied_migrations()
    if ("releases", "0002_approvers") not in applied or ("rolloutui", "0002_groups") not in applied:
        return
    ensure_release_groups(using)
