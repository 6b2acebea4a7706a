"""RolloutUI settings, read from the environment (docs/install.md lists every variable).

Nothing secret lives in the repository: the secret key comes from ROLLOUTUI_SECRET_KEY or is
generated once into the var directory, which is gitignored.
"""

from __future__ import annotations

import atexit
import json
import logging as _logging
import os
import re
import secrets
import shutil
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from controller.core import promql
from rolloutui import logconfig as _logconfig
from rolloutui import runtime_config

BASE_DIR = Path(__file__).resolve().parent.parent

# True when pytest imported these settings (pytest-django). Used only for the documented test
# defaults below (in-memory channel layer, a private Prometheus directory); never for behaviour
# that a test could then not observe.
RUNNING_TESTS = "pytest" in sys.modules


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _env_flag(name: str) -> bool:
    value = _env(name)
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise ImproperlyConfigured(f"{name} must be 1 or 0 (or unset), got {value!r}")


def _env_list(name: str, default: list[str]) -> list[str]:
    value = _env(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def _env_int(name: str, default: int, minimum: int = 0) -> int:
    value = _env(name)
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}") from None
    if number < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {number}")
    return number


# --- Local state: database file, secret key, embedded Redis, beat schedule, metrics ------------
# ROLLOUTUI_VAR_DIR lets tests and several checkouts run side by side without sharing state.
VAR_DIR = Path(_env("ROLLOUTUI_VAR_DIR") or BASE_DIR / "var").resolve()
# Private to the account running RolloutUI: it holds the secret key, the SQLite database, the
# embedded Redis' data and password-bearing URLs. mkdir's mode is masked by the umask, and an
# existing directory keeps its mode, so it is set explicitly (0700: rwx for the owner only).
VAR_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
try:
    VAR_DIR.chmod(0o700)
except PermissionError:  # a directory someone else owns (a mounted volume): leave it as it is
    pass


def _secret_key() -> str:
    key = _env("ROLLOUTUI_SECRET_KEY")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        # Write to a private temp file, then hard-link it into place: link() fails if another
        # process (runall starts several at once) won the race, and a reader never sees a
        # half-written key.
        # mkstemp creates the file 0600 (owner read/write only), so the key is never readable by others.
        fd, tmp = tempfile.mkstemp(dir=VAR_DIR, prefix=".secret_key.")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(50))
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    if path.stat().st_mode & 0o077:  # a key written by an older version, readable by others
        path.chmod(0o600)
    key = path.read_text().strip()
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it to generate a new key, or set ROLLOUTUI_SECRET_KEY")
    return key


SECRET_KEY = _secret_key()

DEBUG = _env_flag("ROLLOUTUI_DEBUG")

# Fail closed: only the loopback names unless the deployment names its host. "*" is refused outside
# debug mode: it would accept any Host header (cache poisoning, password-reset links to another
# host) and it also turns off the websocket Origin check (AllowedHostsOriginValidator), so any
# web page a signed-in operator opens could drive the dashboard's socket.
ALLOWED_HOSTS = _env_list("ROLLOUTUI_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
if "*" in ALLOWED_HOSTS and not DEBUG:
    raise ImproperlyConfigured(
        "ROLLOUTUI_ALLOWED_HOSTS must list the host names the dashboard is served under "
        "(e.g. rollouts.example.com), not '*': '*' accepts any Host header and disables the websocket Origin check"
    )
# Needed behind a TLS-terminating proxy on another origin, e.g. "https://rollouts.example.com".
CSRF_TRUSTED_ORIGINS = _env_list("ROLLOUTUI_CSRF_TRUSTED_ORIGINS", [])


# --- HTTPS: one switch for a deployment served over TLS (usually terminated by an Ingress) -------
# ROLLOUTUI_HTTPS=1: cookies are sent over HTTPS only, browsers are told to use HTTPS only (HSTS),
# plain HTTP is redirected, and the proxy's X-Forwarded-Proto says whether a request came in over
# TLS. Only set it behind a proxy that overwrites X-Forwarded-Proto (every Ingress controller does).
ROLLOUTUI_HTTPS = _env_flag("ROLLOUTUI_HTTPS")
if ROLLOUTUI_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    # The kubelet's probes and Prometheus reach the pod directly over plain HTTP: a redirect to
    # https://<pod IP> would fail them. These paths carry no session and no form.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # One year, the value browsers' preload lists ask for; ROLLOUTUI_HSTS_SECONDS=300 to try it out.
    SECURE_HSTS_SECONDS = _env_int("ROLLOUTUI_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # The header's preload directive only; nothing is submitted to any preload list.
    SECURE_HSTS_PRELOAD = True

# Sessions end after a working day rather than Django's two weeks, and when the browser closes.
SESSION_COOKIE_AGE = _env_int("ROLLOUTUI_SESSION_SECONDS", 12 * 3600, minimum=60)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True

# Behind N reverse proxies that each append the address they saw to X-Forwarded-For (an Ingress:
# 1), the client's address is the N-th entry from the right of that header; 0 (the default) ignores
# the header and uses the peer address. One function decides it (origin.client_ip) for the audit,
# the access log, the rate limits and the sign-in lockout (rolloutui/services/origin.py has a worked
# example). Daphne runs without --proxy-headers, so the peer address is the TCP peer's.
ROLLOUTUI_TRUSTED_PROXIES = _env_int("ROLLOUTUI_TRUSTED_PROXIES", 0)

# --- Security headers --------------------------------------------------------------------------
# Content-Security-Policy (Django 6's own middleware): scripts only from this origin, no inline
# script, no eval, nothing framed, nothing posted elsewhere. style-src needs 'unsafe-inline'
# because Plotly sets style attributes and injects <style> elements while it draws the charts (a
# chart is unreadable without them); inline styles cannot run script, so the XSS protection of
# script-src 'self' is intact.
from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    # Plotly renders its charts' fonts and icons as data: URLs; the swagger UI its logo.
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    # The page's fetches and its websocket: 'self' covers ws:/wss: to this host in current browsers
    # (CSP level 3), so no scheme-wide ws: source (which would allow any host) is needed.
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# --- Applications ----------------------------------------------------------------------------
INSTALLED_APPS = [
    # daphne first: it replaces `runserver` with an ASGI (websocket-capable) server.
    "daphne",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # WhiteNoise's runserver_nostatic keeps `runserver` serving static files like production.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    # The plaintext tokens of earlier versions: kept installed only so that migration
    # rolloutui.0003 can delete them; knox's hashed tokens replace them.
    "rest_framework.authtoken",
    "knox",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django.contrib.admin",
    "controller",
    "rolloutui",
    "rolloutui.releases",
]

MIDDLEWARE = [
    # First, so the logged status and duration cover everything below it.
    "rolloutui.middleware.AccessLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "rolloutui.middleware.RequestSizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "rolloutui.urls"
ASGI_APPLICATION = "rolloutui.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        # APP_DIRS: the DRF browsable API and drf-spectacular's docs pages ship their templates.
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # The one navigation of every page (templates/base.html).
                "rolloutui.navigation.nav_items",
                # plotly_src: the hashed, compressed Plotly (rolloutui/staticfinders.py).
                "rolloutui.staticfinders.vendor_urls",
            ],
        },
    },
]

# --- Database --------------------------------------------------------------------------------
DATABASES = {"default": dj_database_url.config(env="DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the Celery worker and beat write the same file: WAL lets readers run during
    # a write, IMMEDIATE takes the write lock up front (no lock-upgrade deadlocks), and the
    # timeout waits for a busy writer instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: Celery broker (db 0), Channels layer (db 1) and Django's cache (db 4) -------------
# REDIS_URL unset means no Redis: the channel layer is in-process and the broker is kombu's
# in-memory transport (fine for tests and one-off commands; the Celery worker and beat refuse to
# start without REDIS_URL). `manage.py runall` starts an embedded Redis and sets REDIS_URL for
# every process it starts. Tests that want tasks to run inline use the `celery_eager` fixture
# (tests/conftest.py); nothing here turns eager mode on behind their back.
# With a password (the Redis of deploy/ requires one): redis://:PASSWORD@host:6379, the password
# percent-encoded where it has reserved characters; every URL derived below keeps it as written.
REDIS_URL = _env("REDIS_URL") or None
# The Redis the request router keeps in-flight counts in (controller/k8s/router.py); default REDIS_URL.
ROLLOUTUI_ROUTER_REDIS_URL = _env("ROLLOUTUI_ROUTER_REDIS_URL") or None
try:
    if REDIS_URL:
        runtime_config.check_redis_url(REDIS_URL, "REDIS_URL")
    if ROLLOUTUI_ROUTER_REDIS_URL:
        runtime_config.check_redis_url(ROLLOUTUI_ROUTER_REDIS_URL, "ROLLOUTUI_ROUTER_REDIS_URL")
    CELERY_BROKER_URL = runtime_config.broker_url(REDIS_URL)
    CELERY_RESULT_BACKEND = runtime_config.result_backend(REDIS_URL)
    CHANNEL_LAYERS = runtime_config.channel_layers(REDIS_URL)
    # The DRF throttles (preview, token) count here: in Redis they are shared by every web process.
    CACHES = runtime_config.caches(REDIS_URL)
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from exc

# Called by the controller's runtime after every reconcile pass with the state view
# (controller/runtime/hooks.py): the release status machine (Deploying -> Serving | Failed).
ROLLOUTUI_POST_RECONCILE_HOOKS = [
    "rolloutui.services.releases.status.after_reconcile",
    # Rollout completed / progress deadline exceeded, notified once per revision (docs/notifications.md).
    "rolloutui.services.notifications.after_reconcile",
]
# Called at every resync (30 s): releases of InferenceServices, which no reconcile pass covers.
ROLLOUTUI_RESYNC_HOOKS = ["rolloutui.services.releases.status.judge_inferenceservice_releases"]

CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_DEFAULT_QUEUE = "celery"
# Previews (up to ROLLOUTUI_PREVIEW_SECONDS of CPU each) have a queue and a worker of their own
# (concurrency 1: runall, deploy/worker.yaml): a viewer at the preview rate cannot occupy the slots
# of the worker that runs the reconcile passes (queues celery and reconcile).
CELERY_TASK_ROUTES = {"rolloutui.tasks.run_preview": {"queue": "preview"}}
# A reconcile must survive a worker killed mid-way: acknowledge only after the task ran, and
# hand a task back to the queue if its worker process dies.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# An unacknowledged task of a worker that vanished is redelivered after this many seconds.
# Reconcile passes take milliseconds, so five minutes never re-runs a task still in progress.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 300}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Keep reconnecting after a lost broker connection (Celery's default, stated: a worker that gives up
# is a worker nothing restarts under `make run`), and never give up (default: 100 attempts).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Celery's consumer with the fix that keeps the worker alive when Redis restarts (kombu 5.7.0 made
# it exit with AttributeError 'hostname'): see rolloutui/worker.py.
CELERY_WORKER_CONSUMER = "rolloutui.worker:Consumer"
# Most tasks are fire-and-forget; a task that needs its result declares ignore_result=False.
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_EXPIRES = 3600
CELERY_TIMEZONE = "UTC"
# Logging is configured from LOGGING below (see rolloutui/celery.py), not by Celery.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Periodic tasks (resync, simulated clock) are registered by the apps that own them, e.g. with
# `app.add_periodic_task` in an `on_after_finalize` handler, or by adding entries here.
CELERY_BEAT_SCHEDULE: dict = {}

# --- Prometheus ------------------------------------------------------------------------------
# Multiprocess mode: every process (Daphne, worker children) writes its samples to files in this
# directory and /metrics aggregates them, so the worker's reconcile metrics show up on the web
# server. prometheus_client reads the variable when it is first imported, so it is exported here,
# the earliest point every process passes through.
_prometheus_dir = _env("PROMETHEUS_MULTIPROC_DIR")
if not _prometheus_dir:
    if RUNNING_TESTS:
        # A private directory per test process: samples of earlier runs must not leak into tests.
        _prometheus_dir = tempfile.mkdtemp(prefix="rolloutui-prometheus-")
        atexit.register(shutil.rmtree, _prometheus_dir, ignore_errors=True)
    else:
        _prometheus_dir = str(VAR_DIR / "prometheus")
PROMETHEUS_MULTIPROC_DIR = _prometheus_dir
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR

# --- Product settings ------------------------------------------------------------------------
ROLLOUTUI_BACKEND = _env("ROLLOUTUI_BACKEND", "sim") or "sim"
if ROLLOUTUI_BACKEND not in ("sim", "kubernetes"):
    raise ImproperlyConfigured(f"ROLLOUTUI_BACKEND must be 'sim' or 'kubernetes', got {ROLLOUTUI_BACKEND!r}")

try:
    ROLLOUTUI_SIM_SPEED = float(_env("ROLLOUTUI_SIM_SPEED", "1.0") or "1.0")
except ValueError:
    raise ImproperlyConfigured(f"ROLLOUTUI_SIM_SPEED must be a number, got {_env('ROLLOUTUI_SIM_SPEED')!r}") from None
if not ROLLOUTUI_SIM_SPEED > 0:
    raise ImproperlyConfigured(f"ROLLOUTUI_SIM_SPEED must be > 0, got {ROLLOUTUI_SIM_SPEED}")


# --- Request records and canary analysis (docs/canary.md) ---------------------------------------
def _env_number(name: str, default: float, *, minimum: float) -> float:
    raw = _env(name)
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum:g}, got {value:g}")
    return value


# Raw request records are kept this long (clock seconds), their per-bucket sums longer.
ROLLOUTUI_RECORDS_RETENTION_SECONDS = _env_number("ROLLOUTUI_RECORDS_RETENTION_SECONDS", 86400, minimum=60)
ROLLOUTUI_AGGREGATES_RETENTION_SECONDS = _env_number("ROLLOUTUI_AGGREGATES_RETENTION_SECONDS", 30 * 86400, minimum=60)
# POST /api/request-records/: at most this many records per batch, this many bytes per body.
ROLLOUTUI_RECORDS_MAX_BATCH = int(_env_number("ROLLOUTUI_RECORDS_MAX_BATCH", 5000, minimum=1))
ROLLOUTUI_RECORDS_MAX_BODY_BYTES = int(_env_number("ROLLOUTUI_RECORDS_MAX_BODY_BYTES", 4 * 1024 * 1024, minimum=1024))
# The Prometheus provider of the canary analysis (provider: prometheus): the server, and default
# query templates per metric as JSON ({"errorRate": "...{{revision}}..."}); a ModelServing's own
# analysis.queries win over these.
ROLLOUTUI_PROMETHEUS_URL = _env("ROLLOUTUI_PROMETHEUS_URL")
try:
    ROLLOUTUI_PROMETHEUS_QUERIES = json.loads(_env("ROLLOUTUI_PROMETHEUS_QUERIES") or "{}")
except ValueError as exc:
    raise ImproperlyConfigured(f"ROLLOUTUI_PROMETHEUS_QUERIES must be a JSON object: {exc}") from None
if not isinstance(ROLLOUTUI_PROMETHEUS_QUERIES, dict):
    raise ImproperlyConfigured("ROLLOUTUI_PROMETHEUS_QUERIES must be a JSON object of metric -> template")
ROLLOUTUI_PROMETHEUS_TIMEOUT_SECONDS = _env_number("ROLLOUTUI_PROMETHEUS_TIMEOUT_SECONDS", 5, minimum=0.1)
# The PromQL a ModelServing's analysis.queries may name, as JSON {"name": "template"}
# (controller/core/promql.py): a manifest names one of these (or gives its text) and never runs
# PromQL of its own, since the controller asks Prometheus with its own credentials. On Kubernetes
# the cluster settings ConfigMap adds keys prometheusQuery.<name>.
try:
    ROLLOUTUI_PROMETHEUS_TEMPLATES = promql.check_templates(
        json.loads(_env("ROLLOUTUI_PROMETHEUS_TEMPLATES") or "{}"), "ROLLOUTUI_PROMETHEUS_TEMPLATES"
    )
except (ValueError, promql.QueryRefused) as exc:
    raise ImproperlyConfigured(f"ROLLOUTUI_PROMETHEUS_TEMPLATES: {exc}") from None
if ROLLOUTUI_PROMETHEUS_URL and not ROLLOUTUI_PROMETHEUS_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"ROLLOUTUI_PROMETHEUS_URL must be an http(s) URL, got {ROLLOUTUI_PROMETHEUS_URL!r}")

# Opt-in autoscaling (docs/canary.md, "Capacity and autoscaling"): the autoscaler task runs every
# ROLLOUTUI_AUTOSCALE_SECONDS in the Celery worker and waits ROLLOUTUI_AUTOSCALE_COOLDOWN_SECONDS
# after any change of a ModelServing's replica count before it changes it again.
ROLLOUTUI_AUTOSCALE_SECONDS = _env_number("ROLLOUTUI_AUTOSCALE_SECONDS", 30, minimum=1)
ROLLOUTUI_AUTOSCALE_COOLDOWN_SECONDS = _env_number("ROLLOUTUI_AUTOSCALE_COOLDOWN_SECONDS", 300, minimum=0)

# Cluster-wide rollout defaults (controller.core.strategy.ClusterSettings) from the environment:
# the embedded cluster's settings, and on Kubernetes the fallback when the ConfigMap named below is
# absent (controller.runtime.clustersettings reads it through the adapter).
try:
    ROLLOUTUI_CLUSTER_SETTINGS = runtime_config.cluster_settings_from_env()
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP = (
    _env("ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP", "rolloutui/rolloutui-cluster-settings")
    or "rolloutui/rolloutui-cluster-settings"
)
if ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP.count("/") != 1 or not all(ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP.split("/")):
    raise ImproperlyConfigured(
        f"ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP must be NAMESPACE/NAME, got {ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP!r}"
    )

# --- Auth ------------------------------------------------------------------------------------
# Axes first: it refuses a locked-out user name + address before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

# Login throttling (django-axes): after AXES_FAILURE_LIMIT failed sign-ins for one user name from one
# address, that pair is refused (429) for ROLLOUTUI_LOGIN_COOLOFF_MINUTES. Counting the pair, not the
# name alone, means an attacker cannot lock a colleague out from elsewhere; the rates "login" (the
# sign-in form) and "token" (POST /api/auth/token/) bound tries per address across names.
AXES_FAILURE_LIMIT = _env_int("ROLLOUTUI_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = _env_int("ROLLOUTUI_LOGIN_COOLOFF_MINUTES", 15, minimum=1) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "rolloutui.services.origin.client_ip"
AXES_LOCKOUT_CALLABLE = "rolloutui.signals.lockout_response"
AXES_VERBOSE = False
AXES_ENABLE_ADMIN = False

# API tokens (django-rest-knox): only a SHA-512 digest is stored; each expires after
# ROLLOUTUI_TOKEN_HOURS (default 12); DELETE /api/auth/token/ revokes the one sent, DELETE
# /api/auth/tokens/ all of a user's, and a password change revokes all of them (signals.py).
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=_env_int("ROLLOUTUI_TOKEN_HOURS", 12, minimum=1)),
    "AUTH_HEADER_PREFIX": "Token",
}

# --- Optional OpenID Connect single sign-on (mozilla-django-oidc) --------------------------------
# On with ROLLOUTUI_OIDC=1 and the provider's endpoints and this client's id and secret. Local
# accounts keep working beside it. Group claims map to the product's roles (rolloutui/oidc.py).
ROLLOUTUI_OIDC_ENABLED = _env_flag("ROLLOUTUI_OIDC")
OIDC_RP_CLIENT_ID = _env("ROLLOUTUI_OIDC_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = _env("ROLLOUTUI_OIDC_CLIENT_SECRET")
OIDC_OP_AUTHORIZATION_ENDPOINT = _env("ROLLOUTUI_OIDC_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = _env("ROLLOUTUI_OIDC_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = _env("ROLLOUTUI_OIDC_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = _env("ROLLOUTUI_OIDC_JWKS_ENDPOINT")
OIDC_RP_SIGN_ALGO = _env("ROLLOUTUI_OIDC_SIGN_ALGO", "RS256") or "RS256"
OIDC_RP_SCOPES = _env("ROLLOUTUI_OIDC_SCOPES", "openid email profile groups") or "openid email profile groups"
# The claim holding the user's groups, and which of its values mean which role: a value listed in
# ROLLOUTUI_OIDC_VIEWER_GROUPS (comma-separated; likewise OPERATOR, APPROVER, RELEASE_ADMIN) puts the
# user in that product group (every namespace); a value "<prefix><namespace>:<role>" (prefix
# ROLLOUTUI_OIDC_GRANT_PREFIX, default "rolloutui:"), e.g. "rolloutui:team-a:operator", grants the
# role in one namespace ("rolloutui:*:viewer": in every namespace).
ROLLOUTUI_OIDC_GROUPS_CLAIM = _env("ROLLOUTUI_OIDC_GROUPS_CLAIM", "groups") or "groups"
ROLLOUTUI_OIDC_ROLE_GROUPS = {
    "viewers": _env_list("ROLLOUTUI_OIDC_VIEWER_GROUPS", []),
    "operators": _env_list("ROLLOUTUI_OIDC_OPERATOR_GROUPS", []),
    "approvers": _env_list("ROLLOUTUI_OIDC_APPROVER_GROUPS", []),
    "release-admins": _env_list("ROLLOUTUI_OIDC_RELEASE_ADMIN_GROUPS", []),
}
ROLLOUTUI_OIDC_GRANT_PREFIX = _env("ROLLOUTUI_OIDC_GRANT_PREFIX", "rolloutui:") or "rolloutui:"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"
OIDC_CREATE_USER = True
if ROLLOUTUI_OIDC_ENABLED:
    missing = [
        name
        for name, value in {
            "ROLLOUTUI_OIDC_CLIENT_ID": OIDC_RP_CLIENT_ID,
            "ROLLOUTUI_OIDC_CLIENT_SECRET": OIDC_RP_CLIENT_SECRET,
            "ROLLOUTUI_OIDC_AUTHORIZATION_ENDPOINT": OIDC_OP_AUTHORIZATION_ENDPOINT,
            "ROLLOUTUI_OIDC_TOKEN_ENDPOINT": OIDC_OP_TOKEN_ENDPOINT,
            "ROLLOUTUI_OIDC_USER_ENDPOINT": OIDC_OP_USER_ENDPOINT,
            "ROLLOUTUI_OIDC_JWKS_ENDPOINT": OIDC_OP_JWKS_ENDPOINT,
        }.items()
        if not value
    ]
    if missing:
        raise ImproperlyConfigured(f"ROLLOUTUI_OIDC=1 needs {', '.join(missing)}")
    AUTHENTICATION_BACKENDS.append("rolloutui.oidc.RolloutOIDCBackend")

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON bodies nested deeper than 64 levels are refused (400) before they are parsed: Python's
    # json would recurse until RecursionError (rolloutui/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "rolloutui.api.parsers.DepthLimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Every error, whatever raised it, is JSON naming the field (rolloutui/api/errors.py).
    "EXCEPTION_HANDLER": "rolloutui.api.errors.exception_handler",
    # Per-user (or per-address when anonymous) rates of the scoped throttles; see docs/install.md.
    "DEFAULT_THROTTLE_RATES": {
        "preview": _env("ROLLOUTUI_PREVIEW_RATE", "6/min") or "6/min",
        "token": _env("ROLLOUTUI_TOKEN_RATE", "10/min") or "10/min",
        # POST /api/manifests/validate per user: the editor checks as the operator types (at most
        # one request per pause of 0.3 s), and each check reads a text of up to the body limit.
        "validate": _env("ROLLOUTUI_VALIDATE_RATE", "60/min") or "60/min",
        # Sign-in form attempts per client address, whatever user name each tries
        # (rolloutui.throttling.SignInAddressThrottle); the lockout above counts a name and address.
        "login": _env("ROLLOUTUI_LOGIN_RATE", "10/min") or "10/min",
    },
}

# --- Bounded work ------------------------------------------------------------------------------
# Request bodies: Django refuses larger ones with 400 (RequestDataTooBig), and the middleware
# answers 413 from Content-Length before reading anything. 256 kB holds any control or preview
# body many times over (a full ModelServing manifest is a few kB).
DATA_UPLOAD_MAX_MEMORY_SIZE = _env_int("ROLLOUTUI_MAX_BODY_BYTES", 256 * 1024, minimum=1024)
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200
# A preview's copy of the cluster: at most this many pods (groups x pods per group), this many
# wall-clock seconds in the worker, and the rate above per user.
ROLLOUTUI_PREVIEW_MAX_PODS = _env_int("ROLLOUTUI_PREVIEW_MAX_PODS", 2000, minimum=1)
ROLLOUTUI_PREVIEW_SECONDS = _env_int("ROLLOUTUI_PREVIEW_SECONDS", 60, minimum=1)
# The strategy advisor (rolloutui/services/advisor.py): at most this many candidate strategies
# previewed per advice, and this many seconds of wall time for all of them (the preview's by default).
ROLLOUTUI_ADVISOR_CANDIDATES = _env_int("ROLLOUTUI_ADVISOR_CANDIDATES", 12, minimum=1)
ROLLOUTUI_ADVISOR_SECONDS = _env_int("ROLLOUTUI_ADVISOR_SECONDS", ROLLOUTUI_PREVIEW_SECONDS, minimum=1)
# The websocket: the largest message a client may send, what a client that does not read may have
# pending before it is dropped, and how often its permission and session are checked again.
ROLLOUTUI_WS_MAX_MESSAGE_BYTES = _env_int("ROLLOUTUI_WS_MAX_MESSAGE_BYTES", 4096, minimum=64)
ROLLOUTUI_WS_MAX_PENDING_BYTES = _env_int("ROLLOUTUI_WS_MAX_PENDING_BYTES", 8 * 1024 * 1024, minimum=1024)
ROLLOUTUI_WS_RECHECK_SECONDS = _env_int("ROLLOUTUI_WS_RECHECK_SECONDS", 30, minimum=1)
# Open websockets per user, counted in Redis across the web processes (rolloutui/services/wsconnections.py);
# one more is closed with 4429. A page holds one: 20 is twenty tabs.
ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER = _env_int("ROLLOUTUI_WS_MAX_CONNECTIONS_PER_USER", 20, minimum=1)

# Kubernetes backend: also ask the cluster's RBAC (SubjectAccessReview) before granting a permission
# (rolloutui/services/access.py); dashboard users are Kubernetes users named PREFIX + user name.
ROLLOUTUI_K8S_ACCESS_REVIEW = _env_flag("ROLLOUTUI_K8S_ACCESS_REVIEW")
ROLLOUTUI_K8S_USER_PREFIX = _env("ROLLOUTUI_K8S_USER_PREFIX")

# /metrics names ModelServings in its labels: a scraper must send "Authorization: Bearer <token>"
# with this token to get them (anonymous scrapes get the metrics without per-ModelServing series).
ROLLOUTUI_METRICS_TOKEN = _env("ROLLOUTUI_METRICS_TOKEN")

SPECTACULAR_SETTINGS = {
    "TITLE": "RolloutUI API",
    "DESCRIPTION": "ModelServing rollouts: state, history and operator controls.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI and ReDoc from the drf-spectacular-sidecar wheel: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Static files ----------------------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
# WhiteNoise warns at start-up when STATIC_ROOT is missing, even when it serves from the finders.
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # /static/vendor/plotly.min.js from the plotly wheel (air-gapped clusters have no CDN), and its
    # hashed, gzipped copy the pages load.
    "rolloutui.staticfinders.VendorFinder",
]
# Serve straight from the finders: `make run` needs no collectstatic step. A deployment may still
# run collectstatic into STATIC_ROOT; WhiteNoise serves both.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
# The hashed Plotly (rolloutui/staticfinders.py: name with version and content hash, gzip beside
# it) is cached by browsers for a year; everything else for WhiteNoise's default 60 s.
WHITENOISE_IMMUTABLE_FILE_TEST = "^" + re.escape(STATIC_URL) + r"vendor/plotly-[0-9A-Za-z.+-]+\.[0-9a-f]{12}\.min\.js$"

# --- Internationalisation --------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Logging: JSON lines on stdout (or a file) -------------------------------------------------------
LOG_LEVEL = (_env("ROLLOUTUI_LOG_LEVEL", "INFO") or "INFO").upper()
if LOG_LEVEL not in _logging.getLevelNamesMapping():
    raise ImproperlyConfigured(
        f"ROLLOUTUI_LOG_LEVEL must be a logging level (DEBUG, INFO, WARNING, ERROR), got {LOG_LEVEL!r}"
    )

# ROLLOUTUI_LOG_FILE: every record at the level goes to this file, and only warnings and errors
# to stdout (`manage.py runall` sets it for each process: var/log/<process>.log). Unset: stdout.
LOG_FILE = _env("ROLLOUTUI_LOG_FILE")
LOGGING = _logconfig.logging_config(LOG_LEVEL, LOG_FILE or None)

# --- Notifications (docs/notifications.md) ---------------------------------------------------
# Where rollout and release events are sent: a file path (a mounted ConfigMap) or the JSON itself;
# empty: none. Read and checked once at start (rolloutui.apps), each error naming its field.
ROLLOUTUI_NOTIFICATIONS = _env("ROLLOUTUI_NOTIFICATIONS")
# The dashboard's address as people reach it: messages link to the workload's page (no link if empty).
ROLLOUTUI_PUBLIC_URL = _env("ROLLOUTUI_PUBLIC_URL").rstrip("/")
# Delivery in the worker: seconds per request, retries after the first attempt, and the back-off
# ceiling (Celery's retry_backoff doubles the wait from 1 s up to it).
ROLLOUTUI_NOTIFY_TIMEOUT_SECONDS = _env_number("ROLLOUTUI_NOTIFY_TIMEOUT_SECONDS", 5.0, minimum=0.1)
ROLLOUTUI_NOTIFY_MAX_RETRIES = _env_int("ROLLOUTUI_NOTIFY_MAX_RETRIES", 5, minimum=0)
ROLLOUTUI_NOTIFY_BACKOFF_MAX_SECONDS = _env_int("ROLLOUTUI_NOTIFY_BACKOFF_MAX_SECONDS", 600, minimum=1)
