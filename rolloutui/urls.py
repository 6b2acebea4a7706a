"""URL map. The dashboard's pages and REST API are mounted when their modules exist, so the
project runs (sign-in, health, metrics, API docs) before and while they are being built."""

from __future__ import annotations

import importlib.util
import math

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import Http404, JsonResponse
from django.urls import include, path
from django.views import defaults
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from mozilla_django_oidc import views as oidc_views

from rolloutui import health
from rolloutui.signals import record_throttled_sign_in
from rolloutui.throttling import SignInAddressThrottle


def _oidc(view):
    """An OIDC view that exists only while single sign-on is on (ROLLOUTUI_OIDC=1); the views read
    the provider's settings when called, so they are not built otherwise."""

    def only_when_enabled(request, *args, **kwargs):
        if not settings.ROLLOUTUI_OIDC_ENABLED:
            raise Http404("single sign-on is not configured")
        return view(request, *args, **kwargs)

    return only_when_enabled


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _api_or_page(default, status: int, detail: str):
    """Django's error page for a person; JSON for /api/ (a script, or the page's own fetches)."""

    def handler(request, exception=None, **kwargs):
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": detail}, status=status)
        return default(request, exception, **kwargs) if exception is not None else default(request, **kwargs)

    return handler


handler400 = _api_or_page(defaults.bad_request, 400, "bad request")
handler403 = _api_or_page(defaults.permission_denied, 403, "permission denied")
handler404 = _api_or_page(defaults.page_not_found, 404, "no such API path (see /api/docs/)")


def handler500(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "internal error (the server's log has the details)"}, status=500)
    return defaults.server_error(request)


class LoginView(auth_views.LoginView):
    """Django's sign-in page, with a single sign-on button when OIDC is on. Attempts are limited per
    client address across user names (``SignInAddressThrottle``, rate ``login``), before the form
    and django-axes see them."""

    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        throttle = SignInAddressThrottle()
        if throttle.allow_request(request, self):
            return super().post(request, *args, **kwargs)
        record_throttled_sign_in(request, request.POST.get("username", ""))
        seconds = max(1, math.ceil(throttle.wait() or 1))
        response = self.render_to_response(
            {
                **self.get_context_data(form=self.get_form_class()(request)),
                "lockout": f"Too many sign-in attempts from this address: try again in {seconds} seconds.",
            },
            status=429,
        )
        # RFC 9110: how long to wait before the next attempt, as DRF's throttled answers say it too.
        response["Retry-After"] = str(seconds)
        return response

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "oidc_enabled": settings.ROLLOUTUI_OIDC_ENABLED}


urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics_view, name="metrics"),
    path(
        "accounts/login/",
        LoginView.as_view(),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # mozilla-django-oidc's own URL names, which its views reverse.
    path(
        "oidc/authenticate/", _oidc(oidc_views.OIDCAuthenticationRequestView.as_view()), name="oidc_authentication_init"
    ),
    path(
        "oidc/callback/",
        _oidc(oidc_views.OIDCAuthenticationCallbackView.as_view()),
        name="oidc_authentication_callback",
    ),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: the page runs under script-src 'self'.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    # Staff only: the release records (rolloutui/releases/admin.py).
    path("admin/", admin.site.urls),
]

if _module_exists("rolloutui.api.urls"):
    urlpatterns.append(path("api/", include("rolloutui.api.urls")))

if _module_exists("rolloutui.pages_urls"):
    urlpatterns.append(path("", include("rolloutui.pages_urls")))
else:
    # Until the dashboard pages exist, "/" (where sign-in lands) says so instead of a 404.
    from django.contrib.auth.decorators import login_required
    from django.views.generic import TemplateView

    urlpatterns.append(
        path(
            "",
            login_required(TemplateView.as_view(template_name="rolloutui/no_dashboard.html")),
            name="home",
        )
    )
