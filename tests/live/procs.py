"""Real processes for the live-runtime integration tests and the reaction benchmark.

``LiveEnv`` owns: a private Redis (the broker is always database 0 of REDIS_URL, so sharing a
Redis with another test session would let its workers take our tasks), a file SQLite database in
a temporary ``ROLLOUTUI_VAR_DIR`` (pytest-django's test database is invisible to other processes),
and any number of ``celery worker`` / ``celery beat`` subprocesses, each in its own process group so
a test can SIGKILL one worker with its pool children and nothing is left behind.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rolloutui.celery import RECONCILE_WORKER_QUEUES
from rolloutui.embedded_redis import EmbeddedRedis
from rolloutui.management.commands.runall import celery_worker
from tests import waiting

ROOT = Path(__file__).resolve().parents[2]
# The migrated SQLite database LiveEnv copies (see LiveEnv._migrated_sqlite_template).
_SQLITE_TEMPLATE: Path | None = None
_SCRUBBED = ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR", "DJANGO_SETTINGS_MODULE", "PORT", "HOST")


class LiveEnv:
    def __init__(self, var_dir: Path, *, speed: float = 10.0, **extra_env: str) -> None:
        self.var_dir = Path(var_dir)
        self.var_dir.mkdir(parents=True, exist_ok=True)
        self.redis = EmbeddedRedis(self.var_dir / "redis")
        self.redis_url = self.redis.start()
        self.env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("ROLLOUTUI_")}
        self.env.update(
            {
                "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
                "ROLLOUTUI_VAR_DIR": str(self.var_dir),
                "REDIS_URL": self.redis_url,
                "ROLLOUTUI_SIM_SPEED": str(speed),
                "ROLLOUTUI_LOG_LEVEL": "WARNING",
                "PYTHONUNBUFFERED": "1",
                **extra_env,
            }
        )
        self.procs: dict[str, subprocess.Popen] = {}
        # On PostgreSQL (DATABASE_URL points at one, as in CI's second pass) the processes share a
        # database of their own, created here and dropped in close(); otherwise a file SQLite in
        # var_dir (settings' default).
        self._pg_admin: str | None = None
        self._pg_name: str | None = None
        base = os.environ.get("DATABASE_URL", "")
        if base.startswith(("postgres://", "postgresql://")):
            self.env["DATABASE_URL"] = self._create_pg_database(base)
            self.manage("migrate", "-v0")
        else:
            shutil.copyfile(self._migrated_sqlite_template(), self.var_dir / "db.sqlite3")

    def _migrated_sqlite_template(self) -> Path:
        """A migrated SQLite database, made once per test session and copied into every LiveEnv:
        ``migrate`` takes 10-15 s on a loaded 2-core machine, a copy milliseconds."""
        global _SQLITE_TEMPLATE
        if _SQLITE_TEMPLATE is None:
            template_dir = Path(tempfile.mkdtemp(prefix="rolloutui-live-db-"))
            atexit.register(shutil.rmtree, template_dir, ignore_errors=True)
            self.manage("migrate", "-v0", env={"ROLLOUTUI_VAR_DIR": str(template_dir)})
            # migrate exits cleanly, so SQLite has folded its write-ahead log into the file.
            if (template_dir / "db.sqlite3-wal").exists() and (template_dir / "db.sqlite3-wal").stat().st_size:
                raise AssertionError("the migrated template database still has a write-ahead log")
            _SQLITE_TEMPLATE = template_dir / "db.sqlite3"
        return _SQLITE_TEMPLATE

    def _create_pg_database(self, base: str) -> str:
        import secrets
        from urllib.parse import urlsplit, urlunsplit

        import psycopg

        self._pg_admin = base
        self._pg_name = f"rolloutui_live_{secrets.token_hex(4)}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self._pg_name}"')
        parts = urlsplit(base)
        return urlunsplit((parts.scheme, parts.netloc, f"/{self._pg_name}", parts.query, parts.fragment))

    # -- one-off commands ---------------------------------------------------------------------------
    def manage(
        self, *args: str, check: bool = True, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def python(self, code: str, timeout: float = 120) -> object:
        """Run ``code`` with Django set up in a fresh process; it must ``emit(value)``; returns value."""
        prelude = "import django, json, sys\ndjango.setup()\ndef emit(v):\n    print('@@' + json.dumps(v))\n"
        result = subprocess.run(
            [sys.executable, "-c", prelude + textwrap.dedent(code)],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        for line in result.stdout.splitlines():
            if line.startswith("@@"):
                return json.loads(line[2:])
        raise AssertionError(
            f"script failed (exit {result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )

    # -- long-running processes -----------------------------------------------------------------------
    def start(self, name: str, argv: list[str], **env: str) -> subprocess.Popen:
        log = open(self.var_dir / f"{name}.log", "ab")
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**self.env, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def start_worker(self, name: str = "worker", *, concurrency: int = 2, **env: str) -> subprocess.Popen:
        # The command line runall starts the reconcile worker with, under this worker's own node name.
        argv = celery_worker(
            sys.executable, "WARNING", concurrency=concurrency, queues=RECONCILE_WORKER_QUEUES, node=f"{name}@%h"
        )
        return self.start(name, argv, **env)

    def start_beat(self) -> subprocess.Popen:
        return self.start(
            "beat",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "rolloutui",
                "--quiet",
                "beat",
                "--loglevel",
                "WARNING",
                "--schedule",
                str(self.var_dir / "celerybeat-schedule"),
            ],
        )

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
        _wait_group_gone(proc.pid)

    def stop(self, name: str) -> None:
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        self.kill(name)

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name)
        self.redis.stop()
        if self._pg_name:
            import psycopg

            with psycopg.connect(self._pg_admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self._pg_name}" WITH (FORCE)')
            self._pg_name = None

    def log(self, name: str) -> str:
        path = self.var_dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _wait_group_gone(pgid: int, timeout: float = 10.0) -> None:
    """SIGKILL every live process of group ``pgid`` until none is left (zombies do not count)."""
    import psutil

    def gone() -> bool:
        alive = []
        for p in psutil.process_iter(["pid", "status"]):
            try:
                if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except (ProcessLookupError, psutil.Error):
                continue  # exited while we looked: gone
        for p in alive:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass  # exited between the look and the kill: what we want
        return not alive

    waiting.wait_until(gone, what=f"process group {pgid} to exit", timeout=timeout, interval=0.1)


def wait_until(env: LiveEnv, names: list[tuple[str, str]], predicate, timeout: float, poll: float = 1.0) -> dict:
    """Poll the states of ``names`` (one subprocess polls in a loop) until ``predicate(states)``.

    The subprocess counterpart of ``tests.waiting.wait_until`` (a process per look would cost
    seconds): returns ``{"ok": False, "states": last}`` on timeout and callers assert ``ok``."""
    code = f"""
import time
NAMES = {names!r}
deadline = time.monotonic() + {timeout}
last = None
while time.monotonic() < deadline:
    from rolloutui.services import state
    from controller.core.ports import NotFound
    out = {{}}
    for ns, name in NAMES:
        try:
            s = state.get_state(ns, name)
        except NotFound:
            out[f"{{ns}}/{{name}}"] = None
            continue
        out[f"{{ns}}/{{name}}"] = {{"phase": s["phase"], "converged": s["converged"],
            "updateRevision": s["updateRevision"],
            "currentRevision": s["currentRevision"], "counts": s["counts"],
            "revisions": sorted({{i["revision"] for i in s["instances"]}}),
            "ready": sum(1 for i in s["instances"] if i["state"] == "Ready"), "instances": len(s["instances"])}}
    last = out
    if ({predicate})(out):
        emit({{"ok": True, "states": out}})
        break
    time.sleep({poll})  # poll interval inside one subprocess (a process per look would cost seconds)
else:
    emit({{"ok": False, "states": last}})
"""
    return env.python(code, timeout=timeout + 60)


def stop_process_group(proc: subprocess.Popen) -> None:
    """Stop the process group ``proc`` leads (started with ``start_new_session``): SIGTERM, up to
    30 s to exit cleanly, then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def runall(var_dir: Path, *, speed: float = 8.0, password: str, **extra_env: str) -> Iterator[dict]:
    """``manage.py runall`` as ``make run`` starts it (Redis, Daphne, Celery worker and beat, the demo
    on the embedded cluster), on a free port, in its own var dir, with the operator account ``admin``
    holding ``password`` and the simulated clock ``speed`` times the wall. Yields ``{"url", "log"}``;
    stops the whole process group on the way out."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("ROLLOUTUI_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
            "ROLLOUTUI_VAR_DIR": str(var_dir),
            "ROLLOUTUI_ADMIN_PASSWORD": password,
            "ROLLOUTUI_SIM_SPEED": str(speed),
            "PYTHONUNBUFFERED": "1",
            **extra_env,
        }
    )
    log = Path(var_dir) / "runall.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runall", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        waiting.wait_for_runall(proc, url, log)
        yield {"url": url, "log": log}
    finally:
        stop_process_group(proc)
