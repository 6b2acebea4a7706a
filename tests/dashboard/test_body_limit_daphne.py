"""Daphne itself refuses an oversized body while it arrives (rolloutui/serverlimits.py).

The ASGI handler's 413 (tests/dashboard/test_body_limit_asgi.py) comes after Daphne received the
whole body and queued it for the application: a 150 MB upload made the web process 150 MB larger.
These tests start the web server as deploy/ runs it (``daphne rolloutui.asgi:application``) and talk
to it over a raw socket, so what is measured is what the server read, not what a client library did.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.dashboard.conftest import _free_port
from tests.live.procs import stop_process_group

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 4 * 1024 * 1024  # the largest per-path limit by default (request records' batches)
CHUNK = 64 * 1024


@pytest.fixture(scope="module")
def daphne(tmp_path_factory):
    var_dir = tmp_path_factory.mktemp("daphne-var")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTUI_") and k != "DATABASE_URL"}
    env.update({"DJANGO_SETTINGS_MODULE": "rolloutui.settings", "ROLLOUTUI_VAR_DIR": str(var_dir)})
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    daphne_bin = Path(sys.executable).with_name("daphne")
    proc = subprocess.Popen(
        [str(daphne_bin), "-b", "127.0.0.1", "-p", str(port), "rolloutui.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("daphne did not start") from None
            time.sleep(0.2)
    try:
        yield port, proc
    finally:
        stop_process_group(proc)


def _post_head(port: int, headers: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"POST /api/request-records/ HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n".encode())
    return sock


def _answer(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def test_a_declared_150_mb_body_is_answered_413_before_one_byte_of_it_is_sent(daphne):
    port, _ = daphne
    sock = _post_head(port, f"Content-Length: {150 * 1024 * 1024}\r\nContent-Type: application/json\r\n")
    answer = _answer(sock)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"157286400" in answer  # the declared size, named


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit_and_the_server_stays_small(daphne):
    port, proc = daphne
    rss_before = psutil.Process(proc.pid).memory_info().rss
    sock = _post_head(port, "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n")
    piece = f"{CHUNK:x}\r\n".encode() + b"x" * CHUNK + b"\r\n"
    sent = 0
    try:
        for _ in range((40 * 1024 * 1024) // CHUNK):  # offers 40 MB, ten times the limit
            sock.sendall(piece)
            sent += CHUNK
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = _answer(sock)
    sock.close()
    # The server closed the connection soon after the limit: the client could not send 40 MB (what
    # it sent before noticing is bounded by the socket buffers, a few MB at most).
    assert sent < 40 * 1024 * 1024
    assert answer == b"" or answer.startswith(b"HTTP/1.1 413"), answer[:200]
    grown = psutil.Process(proc.pid).memory_info().rss - rss_before
    assert grown < 30 * 1024 * 1024, f"the web process grew by {grown / 1e6:.0f} MB"


def test_a_body_within_the_limit_still_reaches_the_application(daphne):
    port, _ = daphne
    body = b"[]"
    sock = _post_head(port, f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n")
    sock.sendall(body)
    answer = _answer(sock)
    sock.close()
    # The application answered (the endpoint wants an ingester's token): not the server's 413.
    assert answer.startswith(b"HTTP/1.1 401") or answer.startswith(b"HTTP/1.1 403"), answer[:200]
