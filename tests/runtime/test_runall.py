"""`manage.py runall` (what `make run` calls) brings everything up and leaves nothing behind."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request

import psutil
import pytest

from rolloutui.embedded_redis import free_port

from .helpers import ROOT, clean_env

START_TIMEOUT = 90


class RunAll:
    """manage.py runall in a subprocess, its output collected line by line."""

    def __init__(self, var_dir, port, **env):
        self.port = port
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "runall", "--stop-timeout", "15"],
            cwd=ROOT,
            env=clean_env(var_dir, PORT=str(port), **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and self._queue.empty():
                    break
                continue
            self.lines.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines))

    def drain(self):
        while not self._queue.empty():
            self.lines.append(self._queue.get())

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def kill_everything(self):
        """Last-resort cleanup after a failed assertion, so a failing test leaks nothing."""
        if self.proc.poll() is not None:
            return
        for proc in [*self.descendants(), psutil.Process(self.proc.pid)]:
            try:
                proc.kill()
            except psutil.Error:
                pass
        self.proc.wait()


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read().decode()


def _still_running(processes: list[psutil.Process]) -> list[str]:
    alive = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{proc.pid} {' '.join(proc.cmdline())}")
        except psutil.NoSuchProcess:
            pass
    return alive


def _processes_using(var_dir) -> list[psutil.Process]:
    """Every process on the machine started for this var dir (by environment or command line),
    whoever its parent is now: catches orphans that escaped the process tree."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.pid == os.getpid():
                continue
            if str(var_dir) in " ".join(proc.info["cmdline"] or ()) or proc.environ().get("ROLLOUTUI_VAR_DIR") == str(
                var_dir
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def runall_env(tmp_path):
    """A private var dir (SQLite database, secret key, embedded Redis) and a free port."""
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    return var_dir, free_port()


@pytest.mark.integration
@pytest.mark.slow
def test_runall_starts_everything_prints_how_to_sign_in_and_stops_cleanly_on_ctrl_c(runall_env):
    var_dir, port = runall_env
    run = RunAll(var_dir, port)  # no REDIS_URL: the embedded Redis must start
    try:
        run.wait_for_line(r"Started embedded Redis at redis://127\.0\.0\.1:\d+", START_TIMEOUT)
        # var/ is private to its owner (it holds the secret key and the database).
        assert stat.S_IMODE(os.stat(var_dir).st_mode) == 0o700
        match = run.wait_for_line(
            rf'Sign in at http://127\.0\.0\.1:{port}/accounts/login/ as "admin" with password (\S+)',
            START_TIMEOUT,
        )
        generated_password = match.group(1)
        assert len(generated_password) >= 16

        status, body = _get(f"http://127.0.0.1:{port}/healthz")
        assert (status, body) == (200, '{"status": "ok"}')
        status, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert status == 200 and '"redis": "ok' in body

        children = run.descendants()
        names = " ".join(" ".join(p.cmdline()) for p in children)
        for expected in (
            "redis-server",
            "daphne",
            "celery -A rolloutui --quiet worker --concurrency 2 -Q celery,reconcile",
            "celery -A rolloutui --quiet worker --concurrency 1 -Q preview",
            "celery -A rolloutui --quiet beat",
        ):
            assert expected in names, names
        # Each service leads its own process group, so a terminal's Ctrl-C reaches runall only
        # and runall decides the order of shutdown.
        direct = psutil.Process(run.proc.pid).children()
        assert len({os.getpgid(p.pid) for p in direct}) == len(direct)
        assert os.getpgid(run.proc.pid) not in {os.getpgid(p.pid) for p in direct}

        # The generated password signs in (checked in the database the children use).
        check = subprocess.run(
            [
                sys.executable,
                "-c",
                "import django; django.setup();"
                # Not authenticate(): django-axes' backend refuses a call without a request.
                "from django.contrib.auth.models import User;"
                "u = User.objects.get(username='admin');"
                f"print(u.check_password({generated_password!r}) and u.has_perm('rolloutui.operate_modelserving'))",
            ],
            cwd=ROOT,
            env=clean_env(var_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert check.stdout.strip().splitlines()[-1] == "True", check.stderr

        run.proc.send_signal(signal.SIGINT)
        assert run.proc.wait(timeout=60) == 0
        run.drain()
        assert "Stopped." in run.lines
        assert _still_running(children) == []
        assert _still_running(_processes_using(var_dir)) == []
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1)
    finally:
        run.kill_everything()

    # Second start: the password is not printed again (it was shown once).
    run = RunAll(var_dir, port)
    try:
        line = run.wait_for_line(r"Sign in at .* as \"admin\"", START_TIMEOUT).string
        assert generated_password not in line
        assert "printed on the first run" in line
        run.proc.send_signal(signal.SIGTERM)
        assert run.proc.wait(timeout=60) == 0
        assert _still_running(_processes_using(var_dir)) == []
    finally:
        run.kill_everything()


@pytest.mark.integration
@pytest.mark.slow
def test_runall_restarts_a_worker_that_dies_names_another_child_that_dies_and_stops_the_rest(runall_env):
    var_dir, port = runall_env
    run = RunAll(var_dir, port, ROLLOUTUI_ADMIN_USER="ops", ROLLOUTUI_ADMIN_PASSWORD="from-the-env-9!")
    try:
        line = run.wait_for_line(r"Sign in at .* as \"ops\"", START_TIMEOUT).string
        assert "ROLLOUTUI_ADMIN_PASSWORD" in line and "from-the-env-9!" not in line
        # The worker is restarted (nothing else would restart it under `make run`), pool included.
        first = run.descendants()
        worker = next(p for p in first if " worker " in " ".join(p.cmdline()) and "celery,reconcile" in p.cmdline())
        assert worker.ppid() == run.proc.pid
        old_group = [p for p in first if os.getpgid(p.pid) == worker.pid]
        worker.kill()
        run.wait_for_line(
            rf"celery worker \(pid {worker.pid}\) exited unexpectedly with code -9; restarting it \(1 of 5 ", 30
        )
        new_pid = int(run.wait_for_line(r"Started celery worker \(pid (\d+)\)", 30).group(1))
        assert new_pid != worker.pid
        assert _still_running(old_group) == []
        assert psutil.Process(new_pid).is_running() and run.proc.poll() is None
        children = run.descendants()
        beat = next(p for p in children if "beat" in " ".join(p.cmdline()))
        beat.kill()
        run.wait_for_line(r"celery beat \(pid \d+\) exited unexpectedly with code -9; stopping the rest", 30)
        assert run.proc.wait(timeout=60) == 1
        assert _still_running(children) == []
        assert _still_running(_processes_using(var_dir)) == []
    finally:
        run.kill_everything()


def test_runall_refuses_a_port_that_is_in_use(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "manage.py", "runall"],
            cwd=ROOT,
            env=clean_env(tmp_path, PORT=str(port)),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"Cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "PORT=" in result.stderr
    # Refused before starting anything: no Redis was started for this var dir.
    assert not (tmp_path / "redis").exists()


def _planned_children():
    from rolloutui.management.commands.runall import Command

    command = Command()
    command.host, command.port = "127.0.0.1", 8123
    return {child.name: child for child in command._children()}


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_runall_runs_previews_on_a_worker_of_their_own_with_one_slot_restarted_like_the_other():
    children = _planned_children()
    assert list(children) == ["daphne", "celery worker", "celery preview worker", "celery beat"]
    reconcile, preview = children["celery worker"].argv, children["celery preview worker"].argv
    assert _option(preview, "-Q") == "preview" and _option(preview, "--concurrency") == "1"
    assert "preview" not in _option(reconcile, "-Q").split(",")
    assert set(_option(reconcile, "-Q").split(",")) == {"celery", "reconcile"}
    # Two workers on one host need two node names.
    assert _option(preview, "-n").startswith("preview@") and "-n" not in reconcile
    assert children["celery worker"].restart and children["celery preview worker"].restart
    assert not children["daphne"].restart and not children["celery beat"].restart


def test_runall_bounds_incoming_websocket_frames_below_the_message_size():
    daphne = _planned_children()["daphne"].argv
    frame = int(_option(daphne, "--websocket-max-frame-size"))
    assert 4 * 4096 <= frame < int(_option(daphne, "--websocket-max-message-size"))
