"""`rolloutui get NS/NAME --watch` against a running server (`manage.py runall`): the installed
command, from an empty folder, redraws from the websocket with its API token. The poll interval is
ten minutes, so only the socket can bring the pause within the wait."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from tests.conftest import TEST_PASSWORD
from tests.waiting import wait_until

from .helpers import manifest, unique_name
from .test_remote_cli_live import COMMAND, rolloutui  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_get_watch_redraws_a_pause_from_the_websocket_with_the_api_token(
    rolloutui,  # noqa: F811 (the fixture imported above)
    live_stack,
    own_room,
    tmp_path,
):
    signed_in = rolloutui(
        "login", "--server", live_stack.url, "--username", "operator", "--password-stdin", stdin=TEST_PASSWORD + "\n"
    )
    assert signed_in.returncode == 0, signed_in.stderr
    name = unique_name("watch")
    own_room(8, ("ModelServing", name))  # two groups of four GPUs
    spec = tmp_path / "ms.json"
    spec.write_text(json.dumps(manifest(name, replicas=2)))
    assert rolloutui("apply", "-f", str(spec), "--reason", "watch test").returncode == 0
    target = f"default/{name}"

    env = {"PATH": "/usr/bin:/bin", "HOME": str(rolloutui.home), "LANG": "C.UTF-8"}
    watch = subprocess.Popen(
        [str(COMMAND), "get", target, "--watch", "--interval", "10m", "--timeout", "90s", "-o", "json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(iter(watch.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: "".join(out).count('"name"') >= 1, what="the first state printed", timeout=30)
        assert rolloutui("pause", target, "--reason", "watch me").returncode == 0
        wait_until(
            lambda: '"paused": true' in "".join(out).replace('"paused":true', '"paused": true'),
            what="the paused state redrawn by the watch",
            timeout=20,
        )
    finally:
        watch.kill()
        watch.wait(timeout=10)
    errors = watch.stderr.read()
    assert "live updates unavailable" not in errors, errors
