"""`python manage.py runall`: everything `make run` needs, in one foreground command.

1. Redis: REDIS_URL if set (it must answer), else an embedded redis-server on a free port.
2. `migrate`, then an operator account, then the demo data (`load_demo`, then `load_release_demo`,
   when installed).
3. Daphne (HTTP + websockets), a Celery worker (queues celery, reconcile), a Celery worker for
   previews (queue preview, concurrency 1) and Celery beat, each a subprocess in its own process
   group with REDIS_URL and PROMETHEUS_MULTIPROC_DIR exported.
4. Prints the URL and how to sign in, then watches (the terminal then shows warnings and errors
   only: each process logs everything at ROLLOUTUI_LOG_LEVEL to its file in var/log/, see
   LOG_FILES; --log-to-terminal keeps every line on the terminal instead): Ctrl-C or SIGTERM stops every child (SIGTERM,
   then SIGKILL after --stop-timeout) and Redis, and exits 0. Each Celery worker is restarted when it
   exits on its own (whatever is left of its process group is killed first), at most
   RESTART_LIMIT times within RESTART_WINDOW_SECONDS: under `make run` nothing else would restart
   it, and without a worker no rollout moves (in Kubernetes the pod restarts instead). Any other
   child that dies on its own, or a worker that keeps dying, is named and the rest are stopped
   (exit 1).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from django.conf import settings
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandError

from rolloutui import runtime_config
from rolloutui.embedded_redis import EmbeddedRedis, EmbeddedRedisError, publish_url, withdraw_url

READY_TIMEOUT_SECONDS = 60.0
# A worker that exits is restarted, unless it already was RESTART_LIMIT times in the last
# RESTART_WINDOW_SECONDS: a worker that cannot stay up (bad configuration, broken broker) is then
# reported instead of restarted in a loop.
RESTART_LIMIT = 5
RESTART_WINDOW_SECONDS = 60.0


# Where each process logs every record (JSON lines) under var/log/; the terminal gets warnings and
# errors only (rolloutui/logconfig.py).
LOG_FILES = {
    "runall": "runall.log",
    "daphne": "web.log",
    "celery worker": "worker.log",
    "celery preview worker": "preview-worker.log",
    "celery beat": "beat.log",
}


class _Stop(Exception):
    """Raised by the SIGINT/SIGTERM handler to unwind into the shutdown path."""


@dataclass
class Child:
    name: str
    argv: list[str]
    popen: subprocess.Popen | None = None
    # Restarted when it exits on its own (see the module docstring); the times of its restarts.
    restart: bool = False
    restarts: deque = field(default_factory=deque)

    @property
    def pgid(self) -> int:
        # Started with start_new_session=True, so the child leads its own group.
        return self.popen.pid  # type: ignore[union-attr]


def _celery(py: str, *args: str) -> list[str]:
    """``celery -A rolloutui --quiet <args>`` with this interpreter (--quiet: no ASCII-art banner
    between the JSON log lines)."""
    return [py, "-m", "celery", "-A", "rolloutui", "--quiet", *args]


def celery_worker(py: str, level: str, *, concurrency: int, queues, node: str | None = None) -> list[str]:
    """A Celery worker's command line: no mingle/gossip (one worker per queue set per runall,
    nothing to synchronise with; start-up is a second or two faster), and its own node name when
    two workers share this host. The live tests start their workers with it too."""
    return _celery(
        py,
        "worker",
        "--concurrency",
        str(concurrency),
        "-Q",
        ",".join(queues),
        *(["-n", node] if node else []),
        "--loglevel",
        level,
        "--without-mingle",
        "--without-gossip",
    )


def _die_with_parent() -> None:
    # Linux: the kernel sends SIGTERM to the child if runall itself is killed outright, so even a
    # `kill -9` of runall leaves no server running. Runs in the child between fork and exec.
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _group_alive(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes of a process group; the leader may already be gone while its
    Celery pool children still run."""
    alive = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


# Daphne's largest websocket message (both ways), in bytes: 16 MiB.
WS_MAX_MESSAGE_SIZE = 16 * 1024 * 1024
# Daphne's largest incoming websocket frame: refused from its header, before the payload is read
# (rolloutui/consumers.py). Far above ROLLOUTUI_WS_MAX_MESSAGE_BYTES, far below 16 MiB.
WS_MAX_FRAME_SIZE = 64 * 1024


class Command(BaseCommand):
    help = (
        "Start Redis (embedded if REDIS_URL is unset), migrate, then run Daphne, the Celery workers "
        "(reconciles; previews) and beat."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--port",
            type=int,
            default=None,
            help="HTTP port (default: $PORT, else 8000).",
        )
        parser.add_argument(
            "--host",
            default=os.environ.get("HOST", "127.0.0.1"),
            help="Address Daphne binds (default: $HOST, else 127.0.0.1).",
        )
        parser.add_argument("--no-demo", action="store_true", help="Do not run load_demo.")
        parser.add_argument(
            "--log-to-terminal",
            action="store_true",
            help="Every log line on the terminal (default: warnings and errors; the rest in var/log/).",
        )
        parser.add_argument(
            "--stop-timeout",
            type=float,
            default=10.0,
            help="Seconds to wait after SIGTERM before SIGKILL (default 10).",
        )

    # ---------------------------------------------------------------------------------------
    def handle(self, *args, **options):
        self.port = self._port(options["port"])
        self.host = options["host"]
        self.stop_timeout = options["stop_timeout"]
        self.children: list[Child] = []
        self.redis: EmbeddedRedis | None = None
        self.stopping = False
        self.log_dir = None if options.get("log_to_terminal") else Path(settings.VAR_DIR) / "log"

        self._check_port_free()
        self._log_to_files()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        exit_message = None
        try:
            redis_url = self._ensure_redis()
            self._prepare_metrics_dir()
            self._point_this_process_at(redis_url)
            self.say(f"Migrating the database ({self._database_label()})")
            call_command("migrate", interactive=False, verbosity=0)
            sign_in = self._ensure_operator()
            self._load_manifests()
            if not options["no_demo"]:
                self._load_demo()
            self._start_children(redis_url)
            self._wait_until_ready()
            self._print_banner(sign_in)
            exit_message = self._watch()
        except _Stop:
            pass
        finally:
            self.stopping = True
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if exit_message:
            raise CommandError(exit_message)
        self.say("Stopped.")

    def _log_to_files(self) -> None:
        """This process logs to var/log/runall.log (warnings and errors on the terminal too)."""
        if self.log_dir is None:
            return
        import logging.config

        from rolloutui.logconfig import logging_config

        logging.config.dictConfig(logging_config(settings.LOG_LEVEL, self.log_file("runall")))

    def log_file(self, name: str) -> Path | None:
        """The file a process logs to (``name`` as in LOG_FILES), or None with --log-to-terminal."""
        return None if self.log_dir is None else self.log_dir / LOG_FILES[name]

    def say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def _on_signal(self, signum, frame):
        if self.stopping:
            # A second Ctrl-C while stopping: do not wait for graceful shutdown any longer.
            self.stop_timeout = 0
            return
        self.stopping = True
        raise _Stop()

    # ---------------------------------------------------------------------------------------
    @staticmethod
    def _port(option: int | None) -> int:
        if option is not None:
            return option
        raw = os.environ.get("PORT", "").strip() or "8000"
        try:
            port = int(raw)
        except ValueError:
            raise CommandError(f"PORT must be a TCP port number, got {raw!r}") from None
        if not 0 < port < 65536:
            raise CommandError(f"PORT must be between 1 and 65535, got {port}")
        return port

    def _check_port_free(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((self.host, self.port))
            except OSError as exc:
                raise CommandError(
                    f"Cannot listen on {self.host}:{self.port} ({exc.strerror}): stop whatever "
                    f"uses it or choose another port with PORT=..."
                ) from None

    def _ensure_redis(self) -> str:
        if settings.REDIS_URL:
            import redis

            url = settings.REDIS_URL
            try:
                client = redis.Redis.from_url(runtime_config.redis_db_url(url, 0), socket_timeout=3)
                client.ping()
                client.close()
            except (redis.RedisError, ValueError) as exc:
                raise CommandError(
                    f"REDIS_URL={runtime_config.redact_url(url)} does not answer PING: {type(exc).__name__}"
                ) from None
            # Never the password: the terminal's scroll-back and CI logs keep what is printed.
            self.say(f"Using Redis at {runtime_config.redact_url(url)} (REDIS_URL)")
            return url
        self.redis = EmbeddedRedis(Path(settings.VAR_DIR) / "redis")
        try:
            url = self.redis.start()
        except EmbeddedRedisError as exc:
            raise CommandError(str(exc)) from None
        shown = runtime_config.redact_url(url)
        self.say(f"Started embedded Redis at {shown} (pid {self.redis.pid}; set REDIS_URL to use your own)")
        publish_url(Path(settings.VAR_DIR) / "redis", url)
        return url

    def _prepare_metrics_dir(self) -> None:
        # Samples of a previous run's processes would otherwise be summed into this run's
        # counters (prometheus_client's documented practice: wipe the directory at start).
        path = Path(settings.PROMETHEUS_MULTIPROC_DIR)
        path.mkdir(parents=True, exist_ok=True)
        for db_file in path.glob("*.db"):
            db_file.unlink(missing_ok=True)

    def _point_this_process_at(self, redis_url: str) -> None:
        """Settings were read before Redis existed; re-derive the Redis-backed ones, so tasks
        enqueued by load_demo or the account step reach the real broker."""
        os.environ["REDIS_URL"] = redis_url
        settings.REDIS_URL = redis_url
        settings.CELERY_BROKER_URL = runtime_config.broker_url(redis_url)
        settings.CELERY_RESULT_BACKEND = runtime_config.result_backend(redis_url)
        settings.CHANNEL_LAYERS = runtime_config.channel_layers(redis_url)
        settings.CACHES = runtime_config.caches(redis_url)
        from channels.layers import channel_layers

        from rolloutui.celery import app

        app.conf.update(
            broker_url=settings.CELERY_BROKER_URL,
            result_backend=settings.CELERY_RESULT_BACKEND,
        )
        channel_layers.backends.clear()

    @staticmethod
    def _database_label() -> str:
        db = settings.DATABASES["default"]
        engine = db["ENGINE"].rsplit(".", 1)[-1]
        if engine == "sqlite3":
            return f"sqlite {db['NAME']}"
        return f"{engine} {db.get('HOST') or 'localhost'}/{db.get('NAME')}"

    def _ensure_operator(self) -> str:
        """Make sure an operator can sign in; return the sign-in instruction."""
        from rolloutui.services import accounts

        try:
            account = accounts.ensure_operator()
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        if account.password == "env":
            return f'as "{account.username}" with the password in ROLLOUTUI_ADMIN_PASSWORD'
        if account.password == "none":
            return (
                f'as "{account.username}": the account has no password (set ROLLOUTUI_ADMIN_PASSWORD=... and '
                "restart to give it one)"
            )
        if account.password == "generated":
            return (
                f'as "{account.username}" with password {account.generated_password}\n'
                "  (generated on first run and shown only once; set ROLLOUTUI_ADMIN_PASSWORD to "
                "choose one)"
            )
        return (
            f'as "{account.username}" with the password printed on the first run\n'
            "  (forgotten? restart with ROLLOUTUI_ADMIN_PASSWORD=... to set a new one)"
        )

    def _load_manifests(self) -> None:
        """``ROLLOUTUI_LOAD=examples/kthena/``: apply every manifest of that folder (or that file) as
        the operator account, audited with source ``system``, before the demo: the demo ModelServing
        is then left out (``load_demo`` adds it only to a cluster without any)."""
        path = os.environ.get("ROLLOUTUI_LOAD", "").strip()
        if not path:
            return
        from django.contrib.auth import get_user_model

        from rolloutui.services import accounts, manifests

        user = get_user_model().objects.get(username=accounts.admin_username())
        self.say(f"Applying the manifests in {path} (ROLLOUTUI_LOAD)")
        for line in manifests.load_path(path, user, reason=f"ROLLOUTUI_LOAD={path} at start-up"):
            self.say("  " + line)

    def _load_demo(self) -> None:
        if settings.ROLLOUTUI_BACKEND != "sim":
            self.say(f"ROLLOUTUI_BACKEND={settings.ROLLOUTUI_BACKEND}: not loading demo data")
            return
        if "load_demo" not in get_commands():
            self.say("No demo loader is installed (no load_demo command): starting without demo data")
            return
        self.say("Loading the demo data (load_demo)")
        try:
            call_command("load_demo")
            # The releases of the demo model (versions, environments, r1) once the cluster has its
            # ModelServings: rolloutui/services/releases/demo.py.
            if "load_release_demo" in get_commands():
                call_command("load_release_demo")
        except _Stop:
            raise
        except Exception as exc:
            # The product is still useful without the demo; say so loudly and go on.
            self.stderr.write(f"load_demo failed, starting without demo data: {exc!r}")

    # ---------------------------------------------------------------------------------------
    def _start_children(self, redis_url: str) -> None:
        self.child_env = env = dict(os.environ)
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
                "REDIS_URL": redis_url,
                "PROMETHEUS_MULTIPROC_DIR": str(settings.PROMETHEUS_MULTIPROC_DIR),
                # Children must agree with this process on the database file, secret key, etc.
                "ROLLOUTUI_VAR_DIR": str(settings.VAR_DIR),
                "PYTHONUNBUFFERED": "1",
            }
        )
        self.children = self._children()
        for child in self.children:
            self._start(child)

    def child_env_of(self, child: Child) -> dict[str, str]:
        """The environment of one child: the shared one, and its own log file (var/log/)."""
        env = dict(self.child_env)
        log_file = self.log_file(child.name)
        if log_file is not None:
            env["ROLLOUTUI_LOG_FILE"] = str(log_file)
        return env

    def _children(self) -> list[Child]:
        """Daphne, the reconcile worker, the preview worker and beat, not started yet."""
        from rolloutui.celery import PREVIEW_WORKER_QUEUES, RECONCILE_WORKER_QUEUES

        py = sys.executable
        level = settings.LOG_LEVEL
        return [
            Child(
                "daphne",
                # Daphne's access log is plain text; rolloutui.middleware logs requests as JSON.
                [
                    py,
                    "-m",
                    "daphne",
                    "-b",
                    self.host,
                    "-p",
                    str(self.port),
                    "--access-log",
                    os.devnull,
                    # The full state of a 1,000-group ModelServing is ~1.4 MB of JSON, over
                    # Daphne's default 1 MiB message limit (the page of such a ModelServing would
                    # never get its first state). Browser messages stay bounded by
                    # ROLLOUTUI_WS_MAX_MESSAGE_BYTES in the consumer.
                    "--websocket-max-message-size",
                    str(WS_MAX_MESSAGE_SIZE),
                    "--websocket-max-frame-size",
                    str(WS_MAX_FRAME_SIZE),
                    "rolloutui.asgi:application",
                ],
            ),
            Child(
                "celery worker",
                celery_worker(py, level, concurrency=2, queues=RECONCILE_WORKER_QUEUES),
                restart=True,
            ),
            Child(
                "celery preview worker",
                # Previews only, one at a time: a preview takes up to ROLLOUTUI_PREVIEW_SECONDS of
                # CPU, and on the reconcile worker a few of them would hold every slot. Its own
                # node name, so the two workers of this host do not collide.
                celery_worker(py, level, concurrency=1, queues=PREVIEW_WORKER_QUEUES, node="preview@%h"),
                restart=True,
            ),
            Child(
                "celery beat",
                _celery(
                    py, "beat", "--loglevel", level, "--schedule", str(Path(settings.VAR_DIR) / "celerybeat-schedule")
                ),
            ),
        ]

    def _start(self, child: Child) -> None:
        child.popen = subprocess.Popen(
            child.argv,
            cwd=str(settings.BASE_DIR),
            env=self.child_env_of(child),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        self.say(f"Started {child.name} (pid {child.popen.pid})")

    def _exited_child(self, *, restart: bool = False) -> str | None:
        """The first child found exited, named; with ``restart``, a restartable child within its
        limit is restarted instead (and the search goes on)."""
        for child in self.children:
            rc = child.popen.poll() if child.popen else None
            if rc is None:
                continue
            problem = f"{child.name} (pid {child.popen.pid}) exited unexpectedly with code {rc}"
            now = time.monotonic()
            while child.restarts and now - child.restarts[0] > RESTART_WINDOW_SECONDS:
                child.restarts.popleft()
            if not (restart and child.restart and len(child.restarts) < RESTART_LIMIT):
                if restart and child.restart:
                    problem += f" ({RESTART_LIMIT} restarts within {RESTART_WINDOW_SECONDS:.0f} s already)"
                return problem
            child.restarts.append(now)
            self.stderr.write(
                f"{problem}; restarting it ({len(child.restarts)} of {RESTART_LIMIT} restarts "
                f"allowed within {RESTART_WINDOW_SECONDS:.0f} s)"
            )
            # Its pool processes may outlive the main process: end the whole group first, so two
            # generations of the worker never run side by side.
            self._signal_group(child.pgid, signal.SIGKILL)
            gone_by = time.monotonic() + 10
            while _group_alive(child.pgid) and time.monotonic() < gone_by:
                time.sleep(0.05)
            self._start(child)
        if self.redis and self.redis.process and self.redis.process.poll() is not None:
            return f"embedded redis-server exited unexpectedly with code {self.redis.process.returncode}"
        return None

    def _wait_until_ready(self) -> None:
        url = f"http://{self._client_host()}:{self.port}/healthz"
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            problem = self._exited_child()
            if problem:
                raise CommandError(f"{problem}; stopping the rest")
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise CommandError(f"Daphne did not answer {url} within {READY_TIMEOUT_SECONDS:.0f}s")

    def _client_host(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host

    def _print_banner(self, sign_in: str) -> None:
        base = f"http://{self._client_host()}:{self.port}"
        self.say("")
        self.say(f"RolloutUI is running at {base}/")
        self.say(f"Sign in at {base}/accounts/login/ {sign_in}")
        if self.log_dir is not None:
            self.say(f"Logs: {self.log_dir}/ (one file per process); only warnings and errors show here.")
        self.say("Press Ctrl-C to stop.")
        self.say("")

    def _watch(self) -> str | None:
        while True:
            problem = self._exited_child(restart=True)
            if problem:
                self.stderr.write(f"{problem}; stopping the rest")
                return problem
            time.sleep(0.5)

    # ---------------------------------------------------------------------------------------
    def _stop_all(self) -> None:
        started = [c for c in self.children if c.popen is not None]
        for child in started:
            self._signal_group(child.pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for child in started:
            self._wait_group(child, deadline)
        if self.redis is not None:
            withdraw_url(Path(settings.VAR_DIR) / "redis")
            self.redis.stop()
            self.redis = None

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    def _wait_group(self, child: Child, deadline: float) -> None:
        while True:
            child.popen.poll()  # reap the leader so it does not count as alive
            alive = _group_alive(child.pgid)
            if not alive:
                return
            # stop_timeout drops to 0 on a second Ctrl-C: kill without waiting any longer.
            if self.stop_timeout == 0 or time.monotonic() >= deadline:
                self.stderr.write(
                    f"{child.name} did not stop after SIGTERM; sending SIGKILL to {len(alive)} process(es)"
                )
                self._signal_group(child.pgid, signal.SIGKILL)
                child.popen.wait()
                # Wait briefly for the kernel to finish off the group.
                for _ in range(50):
                    if not _group_alive(child.pgid):
                        return
                    time.sleep(0.05)
                return
            time.sleep(0.1)
