"""The remote CLI as an operator installs it: the `rolloutui` command of the installed package, run
from an empty folder with an empty home and no Django settings, against a running server
(`manage.py runall`, the `live_stack` fixture)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_PASSWORD

from .helpers import manifest, unique_name
from .test_tooling_live import CONFIGURE_CRASH, CRASH

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COMMAND = Path(sys.executable).parent / "rolloutui"


@pytest.fixture
def rolloutui(tmp_path, live_stack):
    if not COMMAND.exists():
        pytest.fail(f"{COMMAND} is missing: re-install the package (make venv) so its [project.scripts] exist")
    home, folder = tmp_path / "home", tmp_path / "empty"
    home.mkdir()
    folder.mkdir()
    # Only what a laptop shell has: no DJANGO_SETTINGS_MODULE, no ROLLOUTUI_*, no checkout on the path.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}

    def run(*args: str, stdin: str | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(COMMAND), *args], cwd=folder, env=env, input=stdin, capture_output=True, text=True, timeout=timeout
        )

    run.home = home
    return run


def test_an_operator_signs_in_reads_and_waits_on_a_rollout_from_an_empty_folder(
    rolloutui, live_stack, own_room, tmp_path
):
    signed_in = rolloutui(
        "login", "--server", live_stack.url, "--username", "operator", "--password-stdin", stdin=TEST_PASSWORD + "\n"
    )
    assert signed_in.returncode == 0, signed_in.stderr
    stored = rolloutui.home / ".config" / "rolloutui" / "config.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600

    # A ModelServing of its own (the session's `chat` is shared with the browser tests).
    name = unique_name("cli")
    own_room(16, ("ModelServing", name))  # two groups of four GPUs, one surge group, a crashing revision
    spec = tmp_path / "ms.json"
    spec.write_text(json.dumps(manifest(name, replicas=2)))
    applied = rolloutui("apply", "-f", str(spec), "--reason", "remote cli test")
    assert applied.returncode == 0, applied.stderr
    target = f"default/{name}"

    # `kubectl argo rollouts status` exits 0 once the rollout is complete (and waits until then).
    done = rolloutui("status", target, "--timeout", "3m", "--interval", "0.5s")
    assert done.returncode == 0, done.stdout + done.stderr

    shown = rolloutui("get", target)
    assert shown.returncode == 0 and f"Name:       {target}" in shown.stdout
    as_json = json.loads(rolloutui("get", target, "-o", "json").stdout)
    assert (as_json["namespace"], as_json["name"]) == ("default", name)

    capacity = rolloutui("capacity", target, "-o", "json")
    assert capacity.returncode == 0, capacity.stderr
    assert isinstance(json.loads(capacity.stdout), dict)
    comparison = rolloutui("comparison", target, "--window", "300", "-o", "json")
    assert comparison.returncode == 0, comparison.stderr
    assert json.loads(comparison.stdout)["window"]["seconds"] == 300
    pods = rolloutui("pods", target, "-o", "json")
    assert pods.returncode == 0, pods.stderr
    assert name in pods.stdout

    # Paused mid-change, the rollout cannot finish: status gives up with 2 when --timeout passes.
    assert rolloutui("pause", target, "--reason", "hold").returncode == 0
    changed = rolloutui("set-image", target, "--role", "decode", "--image", "engine:v2", "--reason", "new build")
    assert changed.returncode == 0, changed.stderr
    timed_out = rolloutui("status", target, "--timeout", "1s", "--interval", "0.2s")
    assert timed_out.returncode == 2, timed_out.stdout + timed_out.stderr
    assert "timed out" in timed_out.stdout

    # The controls came from the server's registry, cached per server beside the config file.
    cached = json.loads((stored.parent / "actions.json").read_text())[live_stack.url]
    assert "abort" in {action["name"] for action in cached["actions"]}

    # Argo Rollouts' abort: back to the stable revision, left paused.
    aborted = rolloutui("abort", target, "--reason", "not this build")
    assert aborted.returncode == 0, aborted.stderr
    assert aborted.stdout.startswith(f"abort {target}: ok (audit #")
    after = json.loads(rolloutui("get", target, "-o", "json").stdout)
    assert after["spec"]["paused"] is True

    # A crashing image: status exits 1 as soon as an instance of the new revision fails.
    assert "configured" in live_stack.manage("shell", "-c", CONFIGURE_CRASH)
    assert rolloutui("resume", target, "--reason", "retry").returncode == 0
    crashing = rolloutui("set-image", target, "--role", "decode", "--image", CRASH, "--reason", "bad build")
    assert crashing.returncode == 0, crashing.stderr
    failed = rolloutui("status", target, "--timeout", "3m", "--interval", "0.5s")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "failed" in failed.stdout

    # Bad input is refused by the server, naming the field, with exit status 1.
    refused = rolloutui("rollback", target, "--to-revision", "99", "--reason", "no such revision")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: toRevision: ")
