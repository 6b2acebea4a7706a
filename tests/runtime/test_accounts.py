"""The operator account runall ensures, and the CLI's default acting user (services.accounts)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from rolloutui.services import accounts

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_account_env(monkeypatch):
    for name in ("ROLLOUTUI_ADMIN_USER", "ROLLOUTUI_ADMIN_PASSWORD", "ROLLOUTUI_CLI_USER"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_new_operator_gets_a_generated_password_once_then_keeps_it(no_account_env):
    first = accounts.ensure_operator()
    assert (first.username, first.password) == ("admin", "generated") and len(first.generated_password) >= 16
    user = User.objects.get(username="admin")
    assert user.check_password(first.generated_password) and user.has_perm("rolloutui.operate_modelserving")
    again = accounts.ensure_operator()
    assert (again.password, again.generated_password) == ("kept", None)
    user.refresh_from_db()
    assert user.check_password(first.generated_password)


def test_a_password_from_the_environment_is_applied_on_every_start(no_account_env):
    no_account_env.setenv("ROLLOUTUI_ADMIN_USER", " ops ")
    no_account_env.setenv("ROLLOUTUI_ADMIN_PASSWORD", "first-password-1")
    assert accounts.ensure_operator() == accounts.OperatorAccount("ops", "env")
    no_account_env.setenv("ROLLOUTUI_ADMIN_PASSWORD", "second-password-2")
    accounts.ensure_operator()
    assert User.objects.get(username="ops").check_password("second-password-2")


def test_a_missing_operators_group_is_named_and_no_account_is_created(no_account_env):
    Group.objects.filter(name="operators").delete()
    with pytest.raises(LookupError, match="'operators' group is missing"):
        accounts.ensure_operator()
    assert not User.objects.filter(username="admin").exists()


def test_the_cli_acts_as_the_cli_user_else_the_operator_account(no_account_env):
    assert accounts.cli_username() == "admin"
    no_account_env.setenv("ROLLOUTUI_ADMIN_USER", "ops")
    assert accounts.cli_username() == "ops"
    no_account_env.setenv("ROLLOUTUI_CLI_USER", "alice")
    assert accounts.cli_username() == "alice"


def test_an_operator_removed_from_operators_stays_removed_at_the_next_start(no_account_env):
    accounts.ensure_operator()
    user = User.objects.get(username="admin")
    user.groups.remove(Group.objects.get(name="operators"))
    accounts.ensure_operator()
    user = User.objects.get(username="admin")
    assert not user.groups.filter(name="operators").exists()
    assert not user.has_perm("rolloutui.operate_modelserving")


def test_an_existing_account_without_a_password_gets_none_printed(no_account_env):
    user = User.objects.create_user("admin")
    user.set_unusable_password()
    user.save()
    account = accounts.ensure_operator()
    # A password is generated (and printed) only when the account is created.
    assert (account.password, account.generated_password) == ("none", None)
    user.refresh_from_db()
    assert not user.has_usable_password()


def test_redact_url_hides_a_redis_password():
    from rolloutui.runtime_config import redact_url

    assert redact_url("redis://:s3cret@redis:6379/0") == "redis://:***@redis:6379/0"
    assert redact_url("redis://user:p%40ss@[::1]:6380") == "redis://user:***@[::1]:6380"
    assert redact_url("redis://127.0.0.1:6379") == "redis://127.0.0.1:6379"
