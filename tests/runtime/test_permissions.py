"""Exactly three permissions (view, operate, ingest request records), the groups that carry them,
and the audit record model."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection

from rolloutui.models import AuditRecord

pytestmark = pytest.mark.django_db


def test_the_app_defines_exactly_three_permissions():
    codenames = set(Permission.objects.filter(content_type__app_label="rolloutui").values_list("codename", flat=True))
    assert codenames == {"view_modelserving", "operate_modelserving", "ingest_requestrecords"}


def test_ingesters_send_request_records_and_see_nothing():
    from django.contrib.auth.models import Group

    perms = set(Group.objects.get(name="ingesters").permissions.values_list("codename", flat=True))
    assert perms == {"ingest_requestrecords"}


def test_viewers_can_view_but_not_operate(viewer):
    assert viewer.has_perm("rolloutui.view_modelserving")
    assert not viewer.has_perm("rolloutui.operate_modelserving")


def test_operators_can_view_and_operate(operator):
    assert operator.has_perm("rolloutui.view_modelserving")
    assert operator.has_perm("rolloutui.operate_modelserving")


def test_the_groups_come_from_the_migration_with_their_permissions():
    perms = {
        group.name: set(group.permissions.values_list("codename", flat=True))
        for group in Group.objects.filter(name__in=["viewers", "operators"])
    }
    assert perms == {
        "viewers": {"view_modelserving"},
        "operators": {"view_modelserving", "operate_modelserving"},
    }


@pytest.mark.django_db(transaction=True)
def test_the_groups_migration_creates_the_groups_and_its_reverse_removes_them():
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate([("rolloutui", "0001_initial")])
    assert not Group.objects.filter(name__in=["viewers", "operators"]).exists()
    executor.loader.build_graph()
    executor.migrate([("rolloutui", "0002_groups")])
    assert Group.objects.get(name="operators").permissions.count() == 2
    assert Group.objects.get(name="viewers").permissions.count() == 1
    # Back to the latest schema for the tests that follow (later migrations add columns they use).
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_groups_survive_a_database_flush():
    # Transactional tests (live_server, channels) flush every table afterwards; the groups are
    # restored by the post_migrate handler the flush triggers.
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0)
    assert set(Group.objects.values_list("name", flat=True)) >= {"viewers", "operators"}


def test_an_audit_record_keeps_the_actor_name_after_the_user_is_deleted(operator):
    record = AuditRecord.objects.create(
        actor=operator,
        actor_name=operator.username,
        source=AuditRecord.Source.PAGE,
        action="pause",
        namespace="default",
        name="demo",
        reason="investigating latency",
        from_revision="3",
        to_revision="4",
        details={"partition": 2},
    )
    operator.delete()
    record.refresh_from_db()
    assert record.actor is None
    assert record.actor_name == "operator"
    assert record.result == "ok" and record.details == {"partition": 2}


def test_audit_records_are_indexed_by_modelserving_and_time():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, AuditRecord._meta.db_table)
    assert constraints["audit_ms_time_idx"]["columns"] == ["namespace", "name", "created_at"]


def test_audit_records_list_newest_first(db):
    for action in ("pause", "resume"):
        AuditRecord.objects.create(source="api", action=action, namespace="default", name="demo")
    assert [r.action for r in AuditRecord.objects.all()] == ["resume", "pause"]
