"""`manage.py oidc_identity`: which provider identity (issuer + subject) each single sign-on account is.

    manage.py oidc_identity list
    manage.py oidc_identity link   --user alice --issuer https://login.example --subject 248289761001
    manage.py oidc_identity unlink --issuer https://login.example --subject 248289761001

Sign-on finds accounts by issuer and subject only (``rolloutui.oidc``). An account that single
sign-on created before identities were stored has none, and is never linked by its name (a
provider user who takes the same name would take it over): link it here once, and its owner's
next sign-in lands in it. Linking and unlinking are audited (source ``cli``, with the operating-
system account that ran the command).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction

from rolloutui.models import AuditRecord, OIDCIdentity
from rolloutui.services import origin
from rolloutui.services.controls import audit


class Command(BaseCommand):
    help = "List, link or unlink the provider identities (issuer + subject) of single sign-on accounts."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="verb", required=True)
        sub.add_parser("list", help="Every account's identity.")
        link = sub.add_parser("link", help="Make an identity sign in to an existing account.")
        link.add_argument("--user", required=True, help="The account's user name.")
        for p in (link, sub.add_parser("unlink", help="Forget an identity (its next sign-in is a new account).")):
            p.add_argument("--issuer", required=True, help="The ID token's iss, e.g. https://login.example.")
            p.add_argument("--subject", required=True, help="The ID token's sub.")

    def handle(self, *args, **o):
        if o["verb"] == "list":
            for identity in OIDCIdentity.objects.select_related("user").order_by("issuer", "subject"):
                self.stdout.write(f"{identity.user.get_username()}\t{identity.issuer}\t{identity.subject}")
            return
        issuer, subject = o["issuer"].strip(), o["subject"].strip()
        if not issuer or not subject:
            raise CommandError("issuer and subject: both are required")
        with origin.acting(origin.Origin(auth_method=AuditRecord.AuthMethod.CLI, os_user=origin.os_user())):
            if o["verb"] == "link":
                self._link(o["user"], issuer, subject)
            else:
                self._unlink(issuer, subject)

    def _link(self, username: str, issuer: str, subject: str) -> None:
        from django.contrib.auth import get_user_model

        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"user: no such {username!r}") from None
        try:
            with transaction.atomic():
                OIDCIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        except IntegrityError:
            owner = OIDCIdentity.objects.get(issuer=issuer, subject=subject).user.get_username()
            raise CommandError(
                f"subject: {subject} at {issuer} is linked to {owner!r} already; unlink it first"
            ) from None
        details = {"user": username, "issuer": issuer, "subject": subject}
        audit(
            None, action="oidc_identity_linked", namespace="", name=username, reason="", source="cli", details=details
        )
        self.stdout.write(f"linked {subject} at {issuer} to {username}")

    def _unlink(self, issuer: str, subject: str) -> None:
        identity = OIDCIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
        if identity is None:
            raise CommandError(f"subject: {subject} at {issuer} is linked to no account")
        username = identity.user.get_username()
        identity.delete()
        details = {"user": username, "issuer": issuer, "subject": subject}
        audit(
            None, action="oidc_identity_unlinked", namespace="", name=username, reason="", source="cli", details=details
        )
        self.stdout.write(f"unlinked {subject} at {issuer} from {username}")
