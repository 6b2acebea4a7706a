"""The permission ``releases.bypass_approval`` and the group ``release-admins`` (view + bypass).

A direct control (set-image, apply, rollback to a controller revision) on a target of an
environment that requires approval may put an image no approved model version carries only with
this permission. As in 0002, the migration creates the permission itself (get_or_create, so the
post_migrate signal finds it) and the group, with a frozen copy of the definitions.
"""

from django.db import migrations

BYPASS = ("bypass_approval", "Can change a target that requires approval without an approved release")
VIEW = ("view_modelserving", "Can view ModelServings, their rollout state and audit trail")


def create_group(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    db = schema_editor.connection.alias

    environments, _ = ContentType.objects.using(db).get_or_create(app_label="releases", model="environment")
    access, _ = ContentType.objects.using(db).get_or_create(app_label="rolloutui", model="modelservingaccess")
    bypass, _ = Permission.objects.using(db).get_or_create(
        content_type=environments, codename=BYPASS[0], defaults={"name": BYPASS[1]}
    )
    view, _ = Permission.objects.using(db).get_or_create(
        content_type=access, codename=VIEW[0], defaults={"name": VIEW[1]}
    )
    group, _ = Group.objects.using(db).get_or_create(name="release-admins")
    group.permissions.add(bypass, view)


def remove_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name="release-admins").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0002_approvers"),
        ("rolloutui", "0002_groups"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="environment",
            options={
                "default_permissions": ("add", "change", "view"),
                "ordering": ["rank", "name"],
                "permissions": [BYPASS],
            },
        ),
        migrations.RunPython(create_group, remove_group),
    ]
