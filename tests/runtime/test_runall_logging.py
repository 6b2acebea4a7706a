"""`make run`'s terminal shows the URL, the sign-in hint and then warnings and errors only (issue 31):
each process `manage.py runall` starts logs every record to its own file in var/log/, and only
warnings and errors to the terminal (rolloutui/logconfig.py, ROLLOUTUI_LOG_FILE)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rolloutui.logconfig import logging_config
from rolloutui.management.commands.runall import LOG_FILES, Command

from .helpers import ROOT, clean_env

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
