"""URL map. The dashboard's pages and REST API are mounted when their modules exist, so the
project runs (sign-in, health, metrics, API docs) before and while they are being built."""

from __future__ import annotations

import importlib.util

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from rolloutui import health


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", health.metrics_view, name="metrics"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
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
