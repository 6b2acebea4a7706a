"""Create the groups `viewers` (view) and `operators` (view + operate).

Permissions are normally created by a post_migrate signal, after every migration ran; this
migration creates the two it needs itself (get_or_create, so the later signal finds them).
"""

from django.db import migrations

PERMISSIONS = {
    "view_modelserving": "Can view ModelServings, their rollout state and audit trail",
    "operate_modelserving": "Can pause, resume, promote, roll back and edit ModelServings",
}
GROUPS = {
    "viewers": ["view_modelserving"],
    "operators": ["view_modelserving", "operate_modelserving"],
}


def create_groups(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    db = schema_editor.connection.alias

    content_type, _ = ContentType.objects.using(db).get_or_create(app_label="rolloutui", model="modelservingaccess")
    permissions = {}
    for codename, name in PERMISSIONS.items():
        permissions[codename], _ = Permission.objects.using(db).get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name}
        )
    for group_name, codenames in GROUPS.items():
        group, _ = Group.objects.using(db).get_or_create(name=group_name)
        group.permissions.add(*(permissions[c] for c in codenames))


def remove_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("rolloutui", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
