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
