"""Long-lived ingest tokens: how a log shipper sends request records without a password.

Place in the flow: an operator issues a token for the shipper's account (``POST
/api/ingest-tokens/`` or ``manage.py ingest_token issue``) -> ``issue`` (the token is returned
once; the row keeps its SHA-256 digest) -> the shipper sends ``Authorization: Token <token>`` (or
``Bearer``) to ``POST /api/request-records/`` -> ``rolloutui.api.ingest_tokens.
IngestTokenAuthentication`` -> ``authenticate`` -> the request acts as the account, whose
``rolloutui.ingest_requestrecords`` permission is checked per namespace as for any sender.

Why not the API tokens (django-rest-knox, ``POST /api/auth/token/``): those need the account's
password, last ``ROLLOUTUI_TOKEN_HOURS`` (12) and open the whole API. An ingest token opens one
endpoint, lasts until its optional expiry, and is revoked on its own.

Who: issuing, listing and revoking need ``rolloutui.operate_modelserving`` in every namespace (an
operator of the installation, or a superuser), and the account must hold the ingest permission
somewhere. Each issuance and revocation, refused ones too, leaves an ``AuditRecord``
(``ingest_token_issued``, ``ingest_token_revoked``; name = the account, details = the token's key,
name and expiry, never the token).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from controller.core.controls import ControlError
from controller.core.ports import NotFound

from ..models import IngestToken
from . import access
from .controls import PERMISSION as OPERATE
from .controls import audited, check_permission, check_source, username

PREFIX = "rui_ingest_"
KEY_LENGTH = 12
MAX_DAYS = 3650
INGEST = "rolloutui.ingest_requestrecords"
# last_used_at is written at most this often per token (a busy shipper sends many batches a minute).
TOUCH_SECONDS = 60


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_json(row: IngestToken) -> dict[str, Any]:
    """A token as listed: everything but its value."""

    def when(value):
        return value.isoformat() if value else None

    return {
        "id": row.pk,
        "name": row.name,
        "account": row.user.get_username(),
        "tokenKey": row.token_key,
        "createdAt": when(row.created_at),
        "createdBy": row.created_by_name,
        "expiresAt": when(row.expires_at),
        "lastUsedAt": when(row.last_used_at),
        "revokedAt": when(row.revoked_at),
        "revokedBy": row.revoked_by_name,
    }


def _days(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(
            "expiresInDays must be a whole number of days (or left out: no expiry)", field="expiresInDays"
        )
    if not 1 <= value <= MAX_DAYS:
        raise ControlError(f"expiresInDays must be 1 to {MAX_DAYS} days", field="expiresInDays")
    return value


def issue(
    user, *, account: Any, name: Any, expires_in_days: Any = None, reason: Any = "", source: str
) -> tuple[IngestToken, str, Any]:
    """A new token for ``account``. Returns ``(row, token, AuditRecord)``; the token is not kept."""
    from django.contrib.auth import get_user_model

    details: dict[str, Any] = {"account": account, "name": name, "expiresInDays": expires_in_days}
    with audited(
        user,
        action="ingest_token_issued",
        namespace="",
        name=str(account or "")[:253],
        reason=reason,
        source=source,
        details=details,
    ) as control:
        check_source(source)
        check_permission(user, OPERATE)
        if not isinstance(account, str) or not account.strip():
            raise ControlError("account is required: the account the shipper sends as", field="account")
        try:
            owner = get_user_model().objects.get(username=account.strip())
        except get_user_model().DoesNotExist:
            raise ControlError(f"account: no account {account.strip()!r}", field="account") from None
        if not owner.is_active or not access.anywhere(owner, INGEST):
            raise ControlError(
                f"account: {owner.get_username()!r} may not send request records (needs {INGEST}: group ingesters, "
                "or the role ingester in a namespace)",
                field="account",
            )
        if not isinstance(name, str) or not name.strip():
            raise ControlError(
                "name is required: say what the token is for (e.g. fluent-bit in production)", field="name"
            )
        if len(name.strip()) > 100:
            raise ControlError("name must be at most 100 characters", field="name")
        days = _days(expires_in_days)
        random_part = secrets.token_urlsafe(32)
        token = PREFIX + random_part
        with transaction.atomic():
            row = IngestToken.objects.create(
                name=name.strip(),
                user=owner,
                token_key=random_part[:KEY_LENGTH],
                digest=digest_of(token),
                created_by_name=username(user),
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        details.update(tokenKey=row.token_key, expiresAt=row.expires_at.isoformat() if row.expires_at else None)
    return row, token, control.record


def listed(user) -> list[dict[str, Any]]:
    """Every ingest token, newest first (``ControlDenied`` without the operate permission everywhere)."""
    check_permission(user, OPERATE)
    return [token_json(row) for row in IngestToken.objects.select_related("user")]


def revoke(user, token_id: int, *, reason: Any = "", source: str) -> tuple[IngestToken, Any]:
    """Revoke one token (kept, marked revoked: the list still shows it). Returns ``(row, AuditRecord)``."""
    details: dict[str, Any] = {"id": token_id}
    with audited(
        user, action="ingest_token_revoked", namespace="", name="", reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        check_permission(user, OPERATE)
        row = IngestToken.objects.select_related("user").filter(pk=token_id).first()
        if row is None:
            raise NotFound(f"ingest token {token_id} does not exist")
        control.name = row.user.get_username()
        details.update(tokenKey=row.token_key, name=row.name)
        if row.revoked_at is None:
            row.revoked_at = timezone.now()
            row.revoked_by_name = username(user)
            row.save(update_fields=["revoked_at", "revoked_by_name"])
    return row, control.record


def authenticate(token: str) -> IngestToken | None:
    """The live token ``token`` is (not revoked, not expired, its account active), or None."""
    if not token.startswith(PREFIX):
        return None
    key = token[len(PREFIX) : len(PREFIX) + KEY_LENGTH]
    row = IngestToken.objects.select_related("user").filter(token_key=key).first()
    if row is None or not hmac.compare_digest(row.digest, digest_of(token)):
        return None
    now = timezone.now()
    if row.revoked_at is not None or (row.expires_at is not None and row.expires_at <= now):
        return None
    if not row.user.is_active:
        return None
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() >= TOUCH_SECONDS:
        IngestToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row


__all__ = ["PREFIX", "authenticate", "digest_of", "issue", "listed", "revoke", "token_json"]
