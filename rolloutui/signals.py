"""Sign-in events into the audit trail, and API tokens revoked by a password change.

Place in the flow: Django's auth signals (sent by the sign-in page, ``POST /api/auth/token/`` and the
OIDC callback) -> one ``AuditRecord`` each, namespace and name empty:

- ``login`` (ok) with the method (session, oidc) and the client's address;
- ``login_failed`` (error) naming the user name tried (never the password) - also for attempts
  refused because django-axes locked the name and address out, or because the address went over
  the sign-in rate (``record_throttled_sign_in``, called by the sign-in view);
- ``logout``.

A saved user whose password hash changed loses every API token (django-rest-knox) and a
``token_revoked`` record says why; Django itself ends the other sessions of that user (the session
keeps a hash of the password).
"""

from __future__ import annotations

from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from rolloutui.services import origin

OIDC_BACKEND = "rolloutui.oidc.RolloutOIDCBackend"


def _source(request) -> str:
    path = getattr(request, "path", "") or ""
    return "api" if path.startswith("/api/") else "page"


def _record(request, user, action: str, *, method: str, details=None, error=None) -> None:
    from rolloutui.services.controls import audit

    came_from = origin.Origin(client_ip=origin.client_ip(request) if request is not None else None, auth_method=method)
    with origin.acting(came_from):
        audit(
            user, action=action, namespace="", name="", reason="", source=_source(request), details=details, error=error
        )


@receiver(user_logged_in, dispatch_uid="rolloutui.audit_login")
def _logged_in(sender, request, user, **kwargs):
    method = "session"
    session = getattr(request, "session", None)
    if session is not None:
        if session.get(BACKEND_SESSION_KEY) == OIDC_BACKEND:
            method = "oidc"
        session[origin.SESSION_AUTH_METHOD] = method
    _record(request, user, "login", method=method)


@receiver(user_login_failed, dispatch_uid="rolloutui.audit_login_failed")
def _login_failed(sender, credentials, request=None, **kwargs):
    tried = str((credentials or {}).get("username") or "")[:150]
    locked = bool(getattr(request, "axes_locked_out", False))
    error = PermissionError("locked out after too many failed sign-ins" if locked else "wrong user name or password")
    _record(
        request,
        tried,
        "login_failed",
        method="token" if _source(request) == "api" else "session",
        details={"lockedOut": locked},
        error=error,
    )


def record_throttled_sign_in(request, tried: str) -> None:
    """A sign-in refused by the per-address rate (rolloutui.throttling.SignInAddressThrottle) before
    any password was checked: audited like a failed one, marked ``throttled``."""
    _record(
        request,
        str(tried or "")[:150],
        "login_failed",
        method="session",
        details={"lockedOut": False, "throttled": True},
        error=PermissionError("too many sign-in attempts from this address"),
    )


@receiver(user_logged_out, dispatch_uid="rolloutui.audit_logout")
def _logged_out(sender, request, user, **kwargs):
    if user is not None:
        _record(request, user, "logout", method=origin.session_auth_method(request))


@receiver(pre_save, sender=get_user_model(), dispatch_uid="rolloutui.password_before")
def _remember_password(sender, instance, **kwargs):
    if instance.pk:
        instance._rolloutui_old_password = (
            sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
        )


@receiver(post_save, sender=get_user_model(), dispatch_uid="rolloutui.password_after")
def _revoke_tokens_on_password_change(sender, instance, created, **kwargs):
    old = getattr(instance, "_rolloutui_old_password", None)
    if created or old is None or old == instance.password:
        return
    from knox.models import AuthToken

    revoked, _ = AuthToken.objects.filter(user=instance).delete()
    if revoked:
        from rolloutui.services.controls import audit

        audit(
            instance,
            action="token_revoked",
            namespace="",
            name="",
            reason="password changed",
            source="system",
            details={"all": True, "count": revoked},
        )


def lockout_response(request, original_response=None, credentials=None):
    """django-axes' answer to a locked-out sign-in (AXES_LOCKOUT_CALLABLE): 429 JSON for the API,
    the sign-in page with the reason for a person."""
    from django.conf import settings
    from django.contrib.auth.forms import AuthenticationForm
    from django.http import JsonResponse
    from django.shortcuts import render

    minutes = round(settings.AXES_COOLOFF_TIME * 60)
    message = f"Too many failed sign-ins for this user from this address: try again in {minutes} minutes."
    if (getattr(request, "path", "") or "").startswith("/api/"):
        return JsonResponse({"detail": message}, status=429)
    return render(
        request, "registration/login.html", {"form": AuthenticationForm(request), "lockout": message}, status=429
    )
