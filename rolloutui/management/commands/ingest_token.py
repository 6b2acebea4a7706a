"""`manage.py ingest_token`: long-lived tokens for log shippers (``POST /api/request-records/`` only).

    manage.py ingest_token issue  --account shipper --name "fluent-bit in production" [--expires-in-days 365]
    manage.py ingest_token list
    manage.py ingest_token revoke ID

The same service as ``/api/ingest-tokens/`` (``rolloutui.services.ingest_tokens``): it acts as
``--user`` (default as ``manage.py rollout``), who needs the operate permission in every namespace;
issuing and revoking are audited (source ``cli``, with the operating-system account that ran it).
``issue`` prints the token once, on a line of its own: only its digest is kept.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from controller.core.controls import ControlError
from controller.core.ports import NotFound
from rolloutui.models import AuditRecord
from rolloutui.services import accounts, ingest_tokens, origin
from rolloutui.services.controls import ControlDenied

SOURCE = "cli"


class Command(BaseCommand):
    help = "Issue, list or revoke long-lived ingest tokens (request records only) for log shippers."

    def add_arguments(self, parser):
        user = accounts.cli_username()
        sub = parser.add_subparsers(dest="verb", required=True)
        issue = sub.add_parser("issue", help="A new token for an account that may send request records.")
        issue.add_argument("--account", required=True, help="The account the shipper sends as.")
        issue.add_argument("--name", required=True, help="What it is for, e.g. fluent-bit in production.")
        issue.add_argument("--expires-in-days", type=int, help="Days until it expires (default: never).")
        issue.add_argument("--reason", default="", help="Why (kept in the audit trail).")
        sub.add_parser("list", help="Every token (never its value).")
        revoke = sub.add_parser("revoke", help="Revoke one token.")
        revoke.add_argument("id", type=int)
        revoke.add_argument("--reason", default="")
        for p in sub.choices.values():
            p.add_argument("--user", default=user, help=f"Acting user (default {user!r}).")

    def handle(self, *args, **o):
        from django.contrib.auth import get_user_model

        try:
            actor = get_user_model().objects.get(username=o["user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"user: no such user {o['user']!r}") from None
        ran_by = origin.Origin(auth_method=AuditRecord.AuthMethod.CLI, os_user=origin.os_user())
        try:
            with origin.acting(ran_by):
                getattr(self, f"_{o['verb']}")(actor, o)
        except ControlDenied as exc:
            raise CommandError(f"permission denied: {exc}") from None
        except (ControlError, NotFound) as exc:
            field = getattr(exc, "field", None)
            raise CommandError(
                f"{field}: {exc}" if field and not str(exc).startswith(f"{field}:") else str(exc)
            ) from None

    def _issue(self, actor, o):
        row, token, _ = ingest_tokens.issue(
            actor,
            account=o["account"],
            name=o["name"],
            expires_in_days=o["expires_in_days"],
            reason=o["reason"],
            source=SOURCE,
        )
        expiry = row.expires_at.isoformat() if row.expires_at else "never"
        self.stdout.write(
            f"issued ingest token {row.pk} ({row.token_key}) for {row.user}, expires {expiry}; shown once:"
        )
        self.stdout.write(token)

    def _list(self, actor, o):
        for t in ingest_tokens.listed(actor):
            state = f"revoked {t['revokedAt']}" if t["revokedAt"] else f"expires {t['expiresAt'] or 'never'}"
            used = t["lastUsedAt"] or "never used"
            self.stdout.write(f"{t['id']}\t{t['tokenKey']}\t{t['account']}\t{t['name']}\t{state}\t{used}")

    def _revoke(self, actor, o):
        row, _ = ingest_tokens.revoke(actor, o["id"], reason=o["reason"], source=SOURCE)
        self.stdout.write(f"revoked ingest token {row.pk} ({row.token_key}) of {row.user}")
