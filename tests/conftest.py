"""Shared fixtures and test-selection rules for the whole suite.

Fixtures: `password`, `viewer`, `operator`, `viewer_client`, `operator_client`, `redis_url`,
`state_redis`, `celery_eager`, and the Chromium launch settings for pytest-playwright (`page`, `browser`).

Markers added automatically (so `make test` can select by them):
- `database`: the test uses the Django database (re-run on PostgreSQL by `make test`);
- `browser`: the test uses Playwright; skipped with a message when /usr/bin/chromium is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# Hypothesis draws new examples on every local run (that is how it finds bugs: the planner property
# found two budget bugs that way). In CI (CI=true) the draws are derandomized, so a submission's run
# does not depend on luck; HYPOTHESIS_PROFILE=random (or =ci) picks one explicitly.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.register_profile("random")
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "random"))

CHROMIUM = Path("/usr/bin/chromium")
# Flags that make Debian's Chromium start reliably as root in a container with no GPU and no
# network beyond the test server.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMIUM_MISSING = (
    f"{CHROMIUM} is missing: browser tests need Debian's chromium "
    "(`apt-get install -y chromium`, which `make test` does when run as root)"
)

TEST_PASSWORD = "pw-for-tests-only-7Qx!"

_DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}
_BROWSER_FIXTURES = {"page", "context", "browser", "new_context"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: the markers must be on the items before `-m` deselects by them.
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _DATABASE_FIXTURES or item.get_closest_marker("django_db"):
            item.add_marker(pytest.mark.database)
        if names & _BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if item.get_closest_marker("browser") and not CHROMIUM.exists():
            item.add_marker(pytest.mark.skip(reason=CHROMIUM_MISSING))
        if item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.xdist_group(_integration_group(item, names)))


def _integration_group(item, fixturenames: set[str]) -> str:
    """Which integration tests must share a pytest-xdist worker (``make test`` runs the integration
    pass with ``--dist loadgroup``): a module's tests share its module-scoped stacks (runall, Daphne),
    so a module is one group; every test on the test Redis (``redis_url``) is one group, so two of
    them never run at once where REDIS_URL names one server for every worker (reconcile locks and
    in-flight counts are keyed by ModelServing name; without REDIS_URL each worker has its own
    server). The rest start private processes on free ports and run side by side."""
    if "redis_url" in fixturenames:
        return "shared-redis"
    return item.module.__name__


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """Django 6 hashes a password with 1.2 million PBKDF2 rounds (about a second here), and every
    user fixture, sign-in and token request of the suite hashes one. The tests check who may do
    what, not the hash's cost: in this process only, a cheap hasher. Processes the tests start
    (runall, the browser stack) keep the real one."""
    from django.test import override_settings

    # override_settings, not an assignment: Django caches the hashers and clears that cache on the
    # setting_changed signal it sends.
    cheap = override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    cheap.enable()
    yield
    cheap.disable()


@pytest.fixture(autouse=True)
def _fresh_throttles():
    """The API's rate limits (DRF throttles) count in Django's cache: each test starts at zero, so
    one test's requests never throttle another's."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _fresh_websocket_slots():
    """Without Redis the websocket slots per user are counted in this process
    (rolloutui.services.wsconnections): a socket a test left open must not count in the next test,
    whose users may have the same primary keys."""
    from rolloutui.services import wsconnections

    wsconnections._local.clear()
    yield


# --- Users -----------------------------------------------------------------------------------
@pytest.fixture
def password() -> str:
    """The password of the `viewer` and `operator` users."""
    return TEST_PASSWORD


def _user_in_group(django_user_model, username: str, group_name: str):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password=TEST_PASSWORD)
    # The groups come from migration rolloutui.0002_groups, never from the test.
    user.groups.add(Group.objects.get(name=group_name))
    return user


@pytest.fixture
def viewer(db, django_user_model):
    """A user in the `viewers` group (rolloutui.view_modelserving)."""
    return _user_in_group(django_user_model, "viewer", "viewers")


@pytest.fixture
def operator(db, django_user_model):
    """A user in the `operators` group (view_modelserving + operate_modelserving)."""
    return _user_in_group(django_user_model, "operator", "operators")


@pytest.fixture
def viewer_client(viewer):
    from django.test import Client

    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def operator_client(operator):
    from django.test import Client

    client = Client()
    client.force_login(operator)
    return client


# --- Redis and Celery ------------------------------------------------------------------------
def _redis_answers(url: str) -> bool:
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A real Redis server's URL (no database part): REDIS_URL if set, else a redis-server started
    for this test process (one per pytest-xdist worker).

    Not the Redis that may answer on 127.0.0.1:6379: on a machine where two checkouts (or two CI
    jobs) run their suites at once, that server is shared, and the tests' fixed database numbers
    (a module's ``STATE_REDIS_DB``, the broker's 0, the channel layer's 1) and the controller's fixed
    key names (``rolloutui:sim:events``) made one run's keys land in the other's: an event list
    emptied by the other run's fixture, in-flight counts that were not this test's. A private
    server keeps every run's keys its own; it starts in ~20 ms."""
    url = os.environ.get("REDIS_URL", "").strip()
    if url:
        if not _redis_answers(url):
            pytest.fail(f"REDIS_URL={url} is set but does not answer PING")
        yield url
        return
    from rolloutui.embedded_redis import EmbeddedRedis

    with EmbeddedRedis(tmp_path_factory.mktemp("redis")) as embedded_url:
        yield embedded_url


@pytest.fixture
def state_redis(redis_url, settings, request):
    """The controller's state Redis (``controller.runtime.redisconn.state_redis``: locks, queued
    flags, in-flight counts, full-state requests) on the test module's own database,
    ``STATE_REDIS_DB`` (away from the broker's 0, the channel layer's 1 and the live state's 2, and
    from the other modules'), with none of the project's keys at the start or the end."""
    from controller.runtime import redisconn

    db = request.module.STATE_REDIS_DB
    settings.REDIS_URL = redis_url
    settings.ROLLOUTUI_STATE_REDIS_DB = db
    client = redisconn.state_redis()
    assert client.connection_pool.connection_kwargs["db"] == db

    def forget() -> None:
        for key in client.scan_iter(match=redisconn.KEY_PREFIX + "*"):
            client.delete(key)

    forget()
    yield client
    forget()


@pytest.fixture
def celery_eager():
    """Run Celery tasks inline (`.delay()` executes immediately, exceptions propagate) for this
    test only. Never on by default: tests that enqueue without it exercise the real path."""
    from rolloutui.celery import app

    saved = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield app
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


# --- Browser (pytest-playwright with Debian's Chromium) --------------------------------------
@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # pytest-playwright has no option for the browser binary; never `playwright install`.
    if not CHROMIUM.exists():
        pytest.skip(CHROMIUM_MISSING)
    return {
        **browser_type_launch_args,
        "executable_path": str(CHROMIUM),
        "args": [*browser_type_launch_args.get("args", []), *CHROMIUM_ARGS],
    }


@pytest.fixture(scope="session")
def playwright(django_db_setup, playwright):
    # Create the test database before Playwright starts its event loop in this thread: once the
    # loop runs, Django refuses the (session-scoped) database setup as "async unsafe".
    return playwright


class _BrowserTestsLast:
    """Browser tests run after all others (in each process), and from the first one on, Django's
    async-safety check is off.

    Playwright's sync API starts an event loop in the test thread and keeps it for the session,
    and Django then refuses every ORM call from that thread (SynchronousOnlyOperation), including
    database setup and flushes. Running browser tests last keeps the check on for every other test
    of the session (consumers, services); `make test` also runs them in a separate pytest process.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        # trylast: after pytest-django's own reordering of database tests.
        items[:] = [i for i in items if not i.get_closest_marker("browser")] + [
            i for i in items if i.get_closest_marker("browser")
        ]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if item.get_closest_marker("browser"):
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"


def pytest_configure(config):
    config.pluginmanager.register(_BrowserTestsLast(), "rolloutui-browser-tests-last")
