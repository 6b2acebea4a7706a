"""Rate limits keyed on the client's address as ``rolloutui.services.origin.client_ip`` decides it.

DRF's own ``get_ident`` reads ``X-Forwarded-For`` as the client sent it unless ``NUM_PROXIES`` is
set, so a client that changed the header on every request was a new client every time. Every
throttle of the project derives from ``ClientAddressIdent`` instead (a test walks the URL map to
hold every view to it), so the rate limits, the sign-in lockout (django-axes'
``AXES_CLIENT_IP_CALLABLE``), the audit and the access log all see the same address.

- ``ScopedRateThrottle``: DRF's, per user when signed in, else per client address.
- ``SignInAddressThrottle``: the sign-in form's attempts per client address, whatever user name each
  one tries (django-axes locks a name and address pair; this bounds an address trying many names).
"""

from __future__ import annotations

from rest_framework import throttling

from rolloutui.services import origin

# One bucket for every request whose address cannot be decided (a peer that is not an IP address,
# e.g. a Unix socket, or a malformed forwarded entry): they are limited together, never exempt.
UNDECIDED = "undecided"


class ClientAddressIdent:
    def get_ident(self, request) -> str:
        return origin.client_ip(request) or UNDECIDED


class ScopedRateThrottle(ClientAddressIdent, throttling.ScopedRateThrottle):
    pass


class SignInAddressThrottle(ClientAddressIdent, throttling.SimpleRateThrottle):
    """``ROLLOUTUI_LOGIN_RATE`` (scope ``login``) sign-in attempts per client address. Works on a plain
    Django request too: it reads nothing but ``request.META``."""

    scope = "login"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


__all__ = ["UNDECIDED", "ClientAddressIdent", "ScopedRateThrottle", "SignInAddressThrottle"]
