"""Optional OpenID Connect single sign-on (mozilla-django-oidc), with group claims mapped to roles.

Place in the flow: with ``ROLLOUTUI_OIDC=1`` the sign-in page offers "Sign in with single sign-on"
-> ``/oidc/authenticate/`` (redirect to the provider, with state and nonce) -> the provider ->
``/oidc/callback/`` -> mozilla-django-oidc exchanges the code, checks the ID token's signature
(JWKS) and nonce, reads the user info -> ``RolloutOIDCBackend`` finds or creates the user and sets
its roles from the groups claim -> Django session (audited as a ``login`` with method ``oidc``).
Local accounts (password sign-in) keep working beside it.

Users: the user name is the ``preferred_username`` claim (else ``sub``). A user created here has no
usable password. An existing *local* account of that name (one with a password) is never taken over
by a provider's claim: that sign-in is refused.

Roles, from the claim named by ROLLOUTUI_OIDC_GROUPS_CLAIM (default ``groups``), recomputed at every
sign-in (so removing someone from a provider group takes effect at their next sign-in):

- a value listed in ROLLOUTUI_OIDC_VIEWER_GROUPS / _OPERATOR_GROUPS / _APPROVER_GROUPS makes the user
  a member of the product group ``viewers`` / ``operators`` / ``approvers`` (every namespace);
- a value ``<prefix><namespace>:<role>`` (prefix ROLLOUTUI_OIDC_GRANT_PREFIX, default ``rolloutui:``)
  grants the role in one namespace: ``rolloutui:team-a:operator``; ``rolloutui:*:viewer`` everywhere.

Example: claims ``{"preferred_username": "alice", "groups": ["sre", "rolloutui:team-a:operator"]}``
with ROLLOUTUI_OIDC_VIEWER_GROUPS=sre: alice views every namespace and operates team-a.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from rolloutui import permissions

log = logging.getLogger(__name__)


def username_of(claims: dict) -> str:
    return str(claims.get("preferred_username") or claims.get("sub") or "")[:150]


def roles_from_claims(claims: dict) -> tuple[set[str], set[tuple[str, str]]]:
    """(product groups, {(namespace, role)} grants) that the claims give; unknown values are ignored."""
    values = claims.get(settings.ROLLOUTUI_OIDC_GROUPS_CLAIM) or []
    if isinstance(values, str):
        values = [values]
    values = {str(v) for v in values}
    groups = {
        group
        for group, names in settings.ROLLOUTUI_OIDC_ROLE_GROUPS.items()
        if group in permissions.GROUPS and values & set(names)
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

    def verify_claims(self, claims):
        return bool(username_of(claims))

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(username=username_of(claims))

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(username_of(claims), email=claims.get("email") or "")
        user.set_unusable_password()
        user.save(update_fields=["password"])
        self._apply_roles(user, claims)
        return user

    def update_user(self, user, claims):
        if user.has_usable_password():
            log.warning("OIDC sign-in refused: %r is a local account with a password", user.get_username())
            return None
        self._apply_roles(user, claims)
        return user

    @transaction.atomic
    def _apply_roles(self, user, claims) -> None:
        from rolloutui.models import NamespaceGrant

        groups, grants = roles_from_claims(claims)
        product = Group.objects.filter(name__in=permissions.GROUPS)
        user.groups.remove(*product.exclude(name__in=groups))
        user.groups.add(*product.filter(name__in=groups))
        NamespaceGrant.objects.filter(user=user, from_oidc=True).delete()
        NamespaceGrant.objects.bulk_create(
            [NamespaceGrant(user=user, namespace=ns, role=role, from_oidc=True) for ns, role in sorted(grants)],
            ignore_conflicts=True,
        )


__all__ = ["RolloutOIDCBackend", "roles_from_claims", "username_of"]
