"""The operator account and the acting user of commands.

Place in the flow: ``manage.py runall`` ensures at start that an operator can sign in
(``ensure_operator``); ``manage.py rollout`` acts as ``--user``, by default ``cli_username()``.
Both read the same environment variables, so the account runall creates is the one the CLI uses.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

OPERATORS_GROUP = "operators"


def admin_username() -> str:
    """``$ROLLOUTUI_ADMIN_USER``, else ``admin``."""
    return os.environ.get("ROLLOUTUI_ADMIN_USER", "").strip() or "admin"


def cli_username() -> str:
    """The CLI's default acting user: ``$ROLLOUTUI_CLI_USER``, else the operator account."""
    return os.environ.get("ROLLOUTUI_CLI_USER", "").strip() or admin_username()


@dataclass(frozen=True)
class OperatorAccount:
    username: str
    # How its password was settled: "env" (ROLLOUTUI_ADMIN_PASSWORD applied), "generated" (a new
    # account, its password in ``generated_password``, to be shown once), "kept" (an existing
    # password left as it is) or "none" (an existing account without a usable password, left so).
    password: str
    generated_password: str | None = None


def ensure_operator() -> OperatorAccount:
    """Make sure the operator account exists; a new one can sign in and is in ``operators``.

    A password in ``$ROLLOUTUI_ADMIN_PASSWORD`` is (re)applied; without one, only a *new* account gets
    a generated password (shown once), never a fixed default, and an existing one is left as it is.
    The account is put in ``operators`` when it is created only: an administrator who later takes it
    out (or disables it) is not overruled at the next start. Raises ``LookupError`` when the
    ``operators`` group is missing.
    """
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    username = admin_username()
    password = os.environ.get("ROLLOUTUI_ADMIN_PASSWORD", "")
    try:
        operators = Group.objects.get(name=OPERATORS_GROUP)
    except Group.DoesNotExist:
        raise LookupError(
            "The 'operators' group is missing: migration rolloutui.0002_groups creates it; was it rolled back?"
        ) from None
    user, created = get_user_model().objects.get_or_create(username=username)
    if password:
        if created or not user.check_password(password):
            user.set_password(password)
            user.save()
        account = OperatorAccount(username, "env")
    elif created:
        generated = secrets.token_urlsafe(16)
        user.set_password(generated)
        user.save()
        account = OperatorAccount(username, "generated", generated)
    elif user.has_usable_password():
        account = OperatorAccount(username, "kept")
    else:
        account = OperatorAccount(username, "none")
    if created:
        user.groups.add(operators)
    return account
