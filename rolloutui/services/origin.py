"""Where a request came from, for the audit trail: client address, authentication method, OS user.

Place in the flow: an entry point opens ``acting(Origin(...))`` around the service call (the REST API
in ``ServiceView.initial``/``finalize_response``, the CLI in ``manage.py rollout``, the sign-in
signals with the request they get), and ``controls.audit`` reads ``current()`` when it writes an
``AuditRecord``. The services' signatures stay ``(user, namespace, name, *, reason, source)``; the
origin travels beside them in a context variable, so a service called from anywhere (a Celery task,
a test) audits with an empty origin rather than failing.

``client_ip(request)``: the peer address (``REMOTE_ADDR``). Behind N trusted reverse proxies
(``ROLLOUTUI_TRUSTED_PROXIES=N``, e.g. 1 for one Ingress) it is the N-th address from the right of
``X-Forwarded-For``: with ``X-Forwarded-For: 6.6.6.6, 203.0.113.7`` and one proxy (which appended
203.0.113.7, the address it saw) the client is 203.0.113.7; 6.6.6.6 is whatever the client claimed.
With 0 (the default) the header is ignored. It is the only place the client's address is decided:
the audit, the access log (``rolloutui.middleware``), every rate limit (``rolloutui.throttling``)
and the sign-in lockout (django-axes' ``AXES_CLIENT_IP_CALLABLE``) ask it. ``REMOTE_ADDR`` is the
TCP peer's because Daphne runs without ``--proxy-headers`` (which would put the header's leftmost,
client-written entry there).
"""

from __future__ import annotations

import ipaddress
import os
import pwd
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings

# Set in the session at sign-in by a backend other than the password one (see signals.py).
SESSION_AUTH_METHOD = "rolloutui_auth_method"


@dataclass(frozen=True)
class Origin:
    client_ip: str | None = None
    auth_method: str = ""
    os_user: str = ""


_NOWHERE = Origin()
# None until an entry point sets it (Origin is frozen, but the linter cannot know).
_current: ContextVar[Origin | None] = ContextVar("rolloutui_origin", default=None)


def current() -> Origin:
    return _current.get() or _NOWHERE


@contextmanager
def acting(origin: Origin):
    token = _current.set(origin)
    try:
        yield origin
    finally:
        _current.reset(token)


def set_current(origin: Origin):
    """Set the origin until ``reset(token)`` (for entry points whose start and end are two hooks)."""
    return _current.set(origin)


def reset(token) -> None:
    _current.reset(token)


def _valid_ip(text: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address((text or "").strip()))
    except ValueError:
        return None


def client_ip(request) -> str | None:
    """The client's address (see the module docstring for proxies); None when it is not an address."""
    meta = getattr(request, "META", {}) or {}
    hops = int(getattr(settings, "ROLLOUTUI_TRUSTED_PROXIES", 0) or 0)
    if hops > 0:
        forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(forwarded) >= hops:
            return _valid_ip(forwarded[-hops])
    return _valid_ip(meta.get("REMOTE_ADDR"))


def session_auth_method(request) -> str:
    session = getattr(request, "session", None)
    if session is not None:
        return session.get(SESSION_AUTH_METHOD) or "session"
    return "session"


def os_user() -> str:
    """The operating-system account running this process (the CLI records who ran it), from the
    real user id rather than $USER, which the caller could set to anything. Under sudo the invoking
    account is added: ``root (sudo from alice)``."""
    uid = os.getuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:  # no passwd entry for the uid (some containers)
        name = f"uid:{uid}"
    invoker = os.environ.get("SUDO_USER", "").strip()
    if uid == 0 and invoker and invoker != name:
        name = f"{name} (sudo from {invoker})"
    return name


__all__ = ["Origin", "acting", "client_ip", "current", "os_user", "reset", "session_auth_method", "set_current"]
