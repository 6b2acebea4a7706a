"""The product's permissions and the groups that carry them (``ingesters``: request records only).

Migration 0002 creates the groups on a fresh database (with its own frozen copy of these
definitions, as migrations must). `ensure_groups` runs after every `migrate` and after every test
database flush (both send post_migrate), so the groups cannot silently disappear, e.g. after a
transactional test wiped the tables.
"""

from __future__ import annotations

VIEW = "view_modelserving"
OPERATE = "operate_modelserving"
# Sending request records (POST /api/request-records/): a router's or gateway's log shipper.
INGEST = "ingest_requestrecords"

PERMISSIONS = {
    VIEW: "Can view ModelServings, their rollout state and audit trail",
    OPERATE: "Can pause, resume, promote, roll back and edit ModelServings",
    INGEST: "Can send request records of ModelServings (log shippers)",
}
GROUPS = {
    "viewers": [VIEW],
    "operators": [VIEW, OPERATE],
    "ingesters": [INGEST],
}
# The release layer's groups (their permissions live on the release models, app ``releases``; the
# groups are created by that app's migrations and ``releases.permissions.ensure_release_groups``).
# Approving a model version: ``approvers``; changing a target whose environment requires approval
# without an approved release (an incident's hotfix): ``release-admins``.
APPROVE = "approve_modelversion"
BYPASS_APPROVAL = "bypass_approval"
RELEASE_GROUPS = {
    "approvers": [VIEW, APPROVE],
    "release-admins": [VIEW, BYPASS_APPROVAL],
}
# Every product group, each a role of namespace grants and of the sign-on's group mapping.
ROLE_GROUPS = {**GROUPS, **RELEASE_GROUPS}


def roles() -> dict[str, list[str]]:
    """Role name -> permission codenames, one role per group: ``viewers`` gives the role ``viewer``,
    ``release-admins`` ``release-admin``. A namespace grant (``models.NamespaceGrant``) names one of
    these roles; a group added to ``GROUPS`` or ``RELEASE_GROUPS`` becomes a grantable role with no
    other change. Codenames are unique across the two apps, so a role names them without the app."""
    return {group.removesuffix("s"): list(codenames) for group, codenames in ROLE_GROUPS.items()}


def roles_with(codename: str) -> list[str]:
    """The roles that carry ``codename`` (``operate_modelserving`` -> ``["operator"]``)."""
    return [role for role, codenames in roles().items() if codename in codenames]


def ensure_groups(using: str = "default") -> None:
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    content_type, _ = ContentType.objects.db_manager(using).get_or_create(
        app_label="rolloutui", model="modelservingaccess"
    )
    permissions = {
        codename: Permission.objects.db_manager(using).get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )[0]
        for codename, name in PERMISSIONS.items()
    }
    for group_name, codenames in GROUPS.items():
        group, _ = Group.objects.db_manager(using).get_or_create(name=group_name)
        group.permissions.add(*(permissions[c] for c in codenames))


def _after_migrate(sender, using="default", plan=None, **kwargs):
    # Skip when the migrate run went backwards past 0002 (rolloutui unapplied): the groups
    # belong to the app's tables being present.
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    recorder = MigrationRecorder(connections[using])
    if ("rolloutui", "0002_groups") not in recorder.applied_migrations():
        return
    ensure_groups(using)
