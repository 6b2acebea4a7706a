"""Create the group `approvers` (view + releases.approve_modelversion).

Permissions are normally created by a post_migrate signal after every migration ran; this
migration creates the one it needs itself (get_or_create, so the later signal finds it).
"""

from django.db import migrations

APPROVE = ("approve_modelversion", "Can approve and deprecate model versions for release")
VIEW = ("view_modelserving", "Can view ModelServings, their rollout state and audit trail")


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    db = schema_editor.connection.alias

    versions, _ = ContentType.objects.using(db).get_or_create(app_label="releases", model="modelversion")
    access, _ = ContentType.objects.using(db).get_or_create(app_label="rolloutui", model="modelservingaccess")
    approve, _ = Permission.objects.using(db).get_or_create(
        content_type=versions, codename=APPROVE[0], defaults={"name": APPROVE[1]}
    )
    view, _ = Permission.objects.using(db).get_or_create(
        content_type=access, codename=VIEW[0], defaults={"name": VIEW[1]}
    )
    group, _ = Group.objects.using(db).get_or_create(name="approvers")
    group.permissions.add(approve, view)


def remove_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name="approvers").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0001_initial"),
        ("rolloutui", "0002_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, remove_group)]
