"""`make run`'s terminal shows the URL, the sign-in hint and then warnings and errors only (issue 31):
each process `manage.py runall` starts logs every record to its own file in var/log/, and only
warnings and errors to the terminal (rolloutui/logconfig.py, ROLLOUTUI_LOG_FILE)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from rolloutui.embedded_redis import free_port
from rolloutui.logconfig import logging_config
from rolloutui.management.commands.runall import LOG_FILES, Command
from tests import waiting

from .helpers import ROOT, clean_env
from .test_runall import START_TIMEOUT, RunAll

LOG_BOTH = """
import logging, django
django.setup()
logging.getLogger("rolloutui.tasks").info("reconciled default/demo in 12 ms")
logging.getLogger("rolloutui.tasks").warning("reconcile of default/demo took 3 s")
"""


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )


def test_with_a_log_file_a_process_writes_every_record_there_and_only_warnings_to_stdout(tmp_path):
    log_file = tmp_path / "log" / "worker.log"
    done = run_python(LOG_BOTH, clean_env(tmp_path, ROLLOUTUI_LOG_FILE=str(log_file)))
    shown = [json.loads(line)["message"] for line in done.stdout.splitlines() if line.startswith("{")]
    assert shown == ["reconcile of default/demo took 3 s"]
    kept = [json.loads(line)["message"] for line in log_file.read_text().splitlines()]
    assert kept == ["reconciled default/demo in 12 ms", "reconcile of default/demo took 3 s"]


def test_without_a_log_file_every_record_goes_to_stdout_as_on_kubernetes(tmp_path):
    done = run_python(LOG_BOTH, clean_env(tmp_path))
    shown = [json.loads(line)["message"] for line in done.stdout.splitlines() if line.startswith("{")]
    assert shown == ["reconciled default/demo in 12 ms", "reconcile of default/demo took 3 s"]
    assert not (tmp_path / "log").exists()


def test_the_logging_config_sends_warnings_to_stdout_and_the_level_to_the_file(tmp_path):
    config = logging_config("DEBUG", tmp_path / "log" / "web.log")
    assert config["handlers"]["stdout"]["level"] == "WARNING"
    assert config["handlers"]["file"]["filename"] == str(tmp_path / "log" / "web.log")
    assert "level" not in config["handlers"]["file"]
    assert config["root"] == {"handlers": ["stdout", "file"], "level": "DEBUG"}
    assert (tmp_path / "log").is_dir()
    plain = logging_config("INFO")
    assert "level" not in plain["handlers"]["stdout"] and list(plain["handlers"]) == ["stdout"]


def test_runall_gives_each_process_its_own_log_file_in_var_log_unless_told_to_log_to_the_terminal(tmp_path):
    command = Command()
    command.log_dir = tmp_path / "log"
    command.child_env = {"PATH": "/usr/bin"}
    command.host, command.port = "127.0.0.1", 8000
    children = command._children()
    files = [Path(command.child_env_of(child)["ROLLOUTUI_LOG_FILE"]) for child in children]
    assert [f.name for f in files] == ["web.log", "worker.log", "preview-worker.log", "beat.log"]
    assert all(f.parent == tmp_path / "log" for f in files)
    assert command.log_file("runall") == tmp_path / "log" / "runall.log"
    assert set(LOG_FILES) == {"runall", *(child.name for child in children)}

    command.log_dir = None  # --log-to-terminal
    assert all("ROLLOUTUI_LOG_FILE" not in command.child_env_of(child) for child in children)


@pytest.mark.integration
@pytest.mark.slow
def test_make_runs_terminal_shows_the_url_and_sign_in_then_no_info_lines_which_go_to_var_log(tmp_path):
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    port = free_port()
    run = RunAll(var_dir, port)
    try:
        run.wait_for_line(r"Press Ctrl-C to stop\.", START_TIMEOUT)
        banner = "\n".join(run.lines)
        assert f"RolloutUI is running at http://127.0.0.1:{port}/" in banner
        assert "Sign in at " in banner and f"Logs: {var_dir / 'log'}/" in banner
        # A request: its INFO line reaches web.log, and not the terminal.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=10) as response:
            assert response.status == 200
        web_log = var_dir / "log" / "web.log"
        waiting.wait_until(
            lambda: web_log.exists() and "/accounts/login/" in web_log.read_text(), what="the request in web.log"
        )
        waiting.wait_until(
            lambda: (var_dir / "log" / "worker.log").exists() and (var_dir / "log" / "worker.log").stat().st_size,
            what="the worker's log file",
        )
        run.proc.send_signal(signal.SIGINT)
        assert run.proc.wait(timeout=60) == 0
        run.drain()
    finally:
        run.kill_everything()
    records = [json.loads(line) for line in run.lines if line.startswith("{")]
    assert [r for r in records if r.get("level") in ("DEBUG", "INFO")] == [], records
    assert any(json.loads(line).get("level") == "INFO" for line in web_log.read_text().splitlines())
