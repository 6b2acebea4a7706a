"""The product served from this checkout for a benchmark (``bench fanout``, ``bench list``): an
embedded Redis, a free port and a SQLite database, all in a temporary directory of the run's own.

``in_run_directory`` is the run's life: a fresh directory, the server started there, stopped at the
end, and the directory (its logs and database) kept when the run fails or ``--keep`` asks for it,
removed otherwise. ``BenchServer`` holds what both benches' servers need: the environment (this
process's, without what would point the server at another database, Redis or settings:
``server_env``), ``manage`` for the commands a bench runs before or beside the server (migrate,
seeding), ``launch`` for the server's process group (ready once its sign-in page answers), ``stop``
for all of it, and ``token`` for the bench account's API token. Each bench says which server it runs
(``runall``, or Daphne alone).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Settings a developer's shell may hold that would make the bench's server use something else
# than the run's directory (another database, port, metrics directory, ROLLOUTUI_* options).
SCRUBBED = ("DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR", "PORT", "HOST")
MANAGE_TIMEOUT = 900  # seconds: seeding 10,000 ModelServings (``bench list --count 10000``) included
STOP_TIMEOUT = 30  # seconds between SIGTERM and SIGKILL of the server's process group
CHROMIUM = "/usr/bin/chromium"  # Debian's, driven by Playwright for the page measurements
# Flags that make it start reliably as root in a container with no GPU and no network beyond the
# bench's server (the browser tests use the same: tests/conftest.py).
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


def server_env(var_dir: Path, redis_url: str, extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without ``SCRUBBED`` and ``ROLLOUTUI_*``, with the run's
    directory, Redis and ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith("ROLLOUTUI_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
            "ROLLOUTUI_VAR_DIR": str(var_dir),
            "REDIS_URL": redis_url,
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
    )
    return env


class BenchServer:
    """An embedded Redis and the environment of a server under ``var_dir``, on a free port of the
    loopback (``url``). ``user``/``password``: the bench's account (its seeding creates it)."""

    def __init__(self, var_dir: Path, log, *, user: str, password: str, extra_env: dict[str, str]) -> None:
        from rolloutui.embedded_redis import EmbeddedRedis, free_port

        self.var_dir, self.log = var_dir, log
        self.user, self.password = user, password
        self.redis: EmbeddedRedis | None = EmbeddedRedis(var_dir / "redis")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = server_env(var_dir, self.redis.start(), extra_env)
        self.proc: subprocess.Popen | None = None
        self._logfile = None

    @contextlib.contextmanager
    def stopped_on_failure(self):
        """Around a subclass's own start-up steps: a failure there stops what already runs (no
        caller holds the server yet to stop it), then propagates."""
        try:
            yield
        except BaseException:
            self.stop()
            raise

    def manage(self, *args: str) -> str:
        """``manage.py`` with the server's environment; its output, or RuntimeError with its stderr."""
        out = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=MANAGE_TIMEOUT,
        )
        if out.returncode:
            raise RuntimeError(f"manage.py {args[0]} failed: {out.stderr[-3000:]}")
        return out.stdout

    def launch(self, argv: list[str], log_name: str, *, within: float) -> None:
        """Start ``argv`` (from the checkout, in a process group of its own, output to
        ``var_dir/log_name``) and wait until the sign-in page answers, at most ``within`` seconds."""
        log_path = self.var_dir / log_name
        self._logfile = open(log_path, "w")
        self.proc = subprocess.Popen(
            argv, cwd=REPO, env=self.env, stdout=self._logfile, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + within
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{log_name} says the server exited: {log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/accounts/login/", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not answer in {within:.0f} s (logs in {log_path})") from None
                time.sleep(0.3)
        self.log(f"server on {self.url} (logs in {log_path})")

    def stop(self) -> None:
        """End the server's process group (SIGTERM, then SIGKILL after ``STOP_TIMEOUT``) and Redis;
        a second call does nothing."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=STOP_TIMEOUT)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc = None
        if self._logfile is not None:
            self._logfile.close()
            self._logfile = None
        if self.redis is not None:
            self.redis.stop()
            self.redis = None

    def signed_in_page(self, playwright):
        """A headless ``CHROMIUM`` and a 1440x1000 page of it signed in as the bench account, on
        the home page: (browser, page); the caller closes the browser."""
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(self.url + "/accounts/login/")
        page.fill("input[name=username]", self.user)
        page.fill("input[name=password]", self.password)
        page.click("button[type=submit]")
        page.wait_for_url(self.url + "/")
        return browser, page

    def token(self) -> str:
        """The bench account's API token (``POST /api/auth/token/``)."""
        req = urllib.request.Request(
            self.url + "/api/auth/token/",
            data=json.dumps({"username": self.user, "password": self.password}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())["token"]


@contextlib.contextmanager
def in_run_directory(args, log, prefix: str, start):
    """``start(var_dir, log)`` in a fresh directory named ``prefix...``; yields what it returned
    (anything with ``stop()``), stops it at the end. A failure, of the start (a ``BenchServer``
    stops what it started: ``stopped_on_failure``) or of the run, sets ``args.keep`` and says where
    the files are."""
    var_dir = Path(tempfile.mkdtemp(prefix=prefix))
    running = None
    try:
        running = start(var_dir, log)
        yield running
    except BaseException:
        args.keep = True
        log(f"failed; the run's files (logs, database) are kept in {var_dir}")
        raise
    finally:
        if running is not None:
            running.stop()
        if not args.keep:
            shutil.rmtree(var_dir, ignore_errors=True)


@contextlib.contextmanager
def django_in_live_env():
    """This process set up as the product's Django on a ``LiveEnv`` of the live tests
    (``tests/live/procs.py``: a temporary directory with its SQLite database and embedded Redis,
    the clock at real speed), for the benches that call the product in-process (``bench reaction``,
    ``bench records``); yields the ``LiveEnv`` (to start a Celery worker), closed and removed at
    the end."""
    sys.path.insert(0, str(REPO))
    from tests.live.procs import LiveEnv

    tmp = tempfile.TemporaryDirectory(prefix="rolloutui-bench-")
    env = LiveEnv(Path(tmp.name), speed=1.0)
    try:
        os.environ.update(env.env)
        import django

        django.setup()
        yield env
    finally:
        env.close()
        tmp.cleanup()
