"""Optional OpenID Connect single sign-on (mozilla-django-oidc), with group claims mapped to roles.

Place in the flow: with ``ROLLOUTUI_OIDC=1`` the sign-in page offers "Sign in with single sign-on"
-> ``/oidc/authenticate/`` (redirect to the provider, with state and nonce) -> the provider ->
``/oidc/callback/`` -> mozilla-django-oidc exchanges the code, checks the ID token's signature
(JWKS) and nonce, reads the user info -> ``RolloutOIDCBackend`` finds or creates the user and sets
its roles from the groups claim -> Django session (audited as a ``login`` with method ``oidc``).
Local accounts (password sign-in) keep working beside it.

Users are matched on who the provider says they are, never on a name: the ID token's issuer and
subject (``iss``, ``sub``), stored on ``models.OIDCIdentity``. A renamed provider user (a new
``preferred_username``) stays the same account; the UserInfo answer must be for the ID token's
subject (OpenID Connect Core 5.3.2), or the sign-in is refused. A provider user seen for the first
time gets a new account without a usable password, named after ``preferred_username`` (else
``sub``); when that name is taken (a local account, or another provider user who had it) the new
account is ``<name>-2``, ``<name>-3``, ...: an existing account is never taken over. Accounts that
single sign-on created before identities were stored are not linked by name (that is the takeover
this prevents); ``manage.py oidc_identity link`` links one by hand.

Roles, from the claim named by ROLLOUTUI_OIDC_GROUPS_CLAIM (default ``groups``), recomputed at every
sign-in (so removing someone from a provider group takes effect at their next sign-in):

- a value listed in ROLLOUTUI_OIDC_VIEWER_GROUPS / _OPERATOR_GROUPS / _APPROVER_GROUPS /
  _RELEASE_ADMIN_GROUPS makes the user a member of the product group ``viewers`` / ``operators`` /
  ``approvers`` / ``release-admins`` (every namespace);
- a value ``<prefix><namespace>:<role>`` (prefix ROLLOUTUI_OIDC_GRANT_PREFIX, default ``rolloutui:``)
  grants the role in one namespace: ``rolloutui:team-a:operator``; ``rolloutui:*:viewer`` everywhere.
  Roles: ``viewer``, ``operator``, ``ingester``, ``approver``, ``release-admin``.

Example: claims ``{"preferred_username": "alice", "groups": ["sre", "rolloutui:team-a:operator"]}``
with ROLLOUTUI_OIDC_VIEWER_GROUPS=sre: alice views every namespace and operates team-a.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from rolloutui import permissions

log = logging.getLogger(__name__)

# Where the ID token's issuer travels in the claims the backend passes around (UserInfo answers
# seldom carry ``iss``; the ID token always does).
ISSUER = "iss"
NAME_LENGTH = 150


def username_of(claims: dict) -> str:
    """The name a new account would like: ``preferred_username``, else ``sub``."""
    return str(claims.get("preferred_username") or claims.get("sub") or "")[:NAME_LENGTH]


def free_username(wanted: str, taken) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``, ... (within the length limit): the first that
    ``taken(name)`` says is free."""
    if not taken(wanted):
        return wanted
    n = 2
    while True:
        suffix = f"-{n}"
        candidate = wanted[: NAME_LENGTH - len(suffix)] + suffix
        if not taken(candidate):
            return candidate
        n += 1


def roles_from_claims(claims: dict) -> tuple[set[str], set[tuple[str, str]]]:
    """(product groups, {(namespace, role)} grants) that the claims give; unknown values are ignored."""
    values = claims.get(settings.ROLLOUTUI_OIDC_GROUPS_CLAIM) or []
    if isinstance(values, str):
        values = [values]
    values = {str(v) for v in values}
    groups = {
        group
        for group, names in settings.ROLLOUTUI_OIDC_ROLE_GROUPS.items()
        if group in permissions.ROLE_GROUPS and values & set(names)
    }
    prefix = settings.ROLLOUTUI_OIDC_GRANT_PREFIX
    known_roles = permissions.roles()
    grants = set()
    for value in values:
        if not value.startswith(prefix):
            continue
        namespace, sep, role = value[len(prefix) :].rpartition(":")
        if sep and namespace and role in known_roles:
            grants.add((namespace, role))
    return groups, grants


class RolloutOIDCBackend(OIDCAuthenticationBackend):
    def verify_token(self, token, **kwargs):
        """The library checks the signature and the nonce; an ID token must also be meant for this
        client (``aud``), or a token the provider issued to another application would sign in here."""
        from django.core.exceptions import SuspiciousOperation

        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was issued to another client (aud)")
        return payload

    def authenticate(self, request, **kwargs):
        from django.core.exceptions import SuspiciousOperation

        try:
            return super().authenticate(request, **kwargs)
        except SuspiciousOperation as exc:  # a forged or misdirected token: refused, and logged
            log.warning("OIDC sign-in refused: %s", exc)
            return None

    def get_userinfo(self, access_token, id_token, payload):
        """The UserInfo claims, with the ID token's issuer and subject: those identify the user."""
        from django.core.exceptions import SuspiciousOperation

        claims = dict(super().get_userinfo(access_token, id_token, payload))
        subject, issuer = payload.get("sub"), payload.get("iss")
        if not subject or not issuer:
            raise SuspiciousOperation("the ID token names no issuer (iss) or subject (sub)")
        # OpenID Connect Core 5.3.2: a UserInfo answer for another subject must not be used.
        if str(claims.get("sub", subject)) != str(subject):
            raise SuspiciousOperation("the UserInfo answer is for another subject than the ID token")
        claims["sub"], claims[ISSUER] = str(subject), str(issuer)
        return claims

    def verify_claims(self, claims):
        return bool(claims.get("sub") and claims.get(ISSUER) and username_of(claims))

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(
            oidc_identities__issuer=claims[ISSUER], oidc_identities__subject=claims["sub"]
        )

    @transaction.atomic
    def create_user(self, claims):
        from rolloutui.models import OIDCIdentity

        def taken(name: str) -> bool:
            return self.UserModel.objects.filter(username__iexact=name).exists()

        name = free_username(username_of(claims), taken)
        user = self.UserModel.objects.create_user(name, email=claims.get("email") or "")
        user.set_unusable_password()
        user.save(update_fields=["password"])
        OIDCIdentity.objects.create(
            user=user,
            issuer=claims[ISSUER],
            subject=claims["sub"],
            preferred_username=str(claims.get("preferred_username") or "")[:255],
            last_sign_in_at=timezone.now(),
        )
        if name != username_of(claims):
            log.info("OIDC: %r is taken; the provider user %s is account %r", username_of(claims), claims["sub"], name)
        self._apply_roles(user, claims)
        return user

    def update_user(self, user, claims):
        from rolloutui.models import OIDCIdentity

        OIDCIdentity.objects.filter(user=user, issuer=claims[ISSUER], subject=claims["sub"]).update(
            preferred_username=str(claims.get("preferred_username") or "")[:255], last_sign_in_at=timezone.now()
        )
        self._apply_roles(user, claims)
        return user

    @transaction.atomic
    def _apply_roles(self, user, claims) -> None:
        from rolloutui.models import NamespaceGrant

        groups, grants = roles_from_claims(claims)
        product = Group.objects.filter(name__in=permissions.ROLE_GROUPS)
        user.groups.remove(*product.exclude(name__in=groups))
        user.groups.add(*product.filter(name__in=groups))
        NamespaceGrant.objects.filter(user=user, from_oidc=True).delete()
        NamespaceGrant.objects.bulk_create(
            [NamespaceGrant(user=user, namespace=ns, role=role, from_oidc=True) for ns, role in sorted(grants)],
            ignore_conflicts=True,
        )


__all__ = ["RolloutOIDCBackend", "free_username", "roles_from_claims", "username_of"]
