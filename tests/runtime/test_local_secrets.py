"""Local state and secrets: var/ is private to its owner, the secret key and the
published Redis URL are readable by the owner only, and runall never prints a Redis password."""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys

import pytest

from rolloutui.embedded_redis import find_redis_server, free_port, publish_url
from tests.waiting import wait_until

from .helpers import ROOT


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_var_dir_is_private_and_the_secret_key_is_owner_only(tmp_path):
    var_dir = tmp_path / "fresh-var"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ROLLOUTUI_") and k not in ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR")
    }
    env.update({"ROLLOUTUI_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "rolloutui.settings"})
    # A permissive umask, as on many desktops: the modes must not depend on it.
    code = "import os; os.umask(0o022); import django; django.setup()"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert _mode(var_dir) == 0o700
    assert _mode(var_dir / "secret_key") == 0o600


def test_an_existing_world_readable_var_dir_and_key_are_tightened(tmp_path):
    var_dir = tmp_path / "old-var"
    var_dir.mkdir(mode=0o755)
    var_dir.chmod(0o755)
    (var_dir / "secret_key").write_text("k" * 50)
    (var_dir / "secret_key").chmod(0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTUI_")}
    env.update({"ROLLOUTUI_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "rolloutui.settings"})
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert _mode(var_dir) == 0o700 and _mode(var_dir / "secret_key") == 0o600


def test_the_published_redis_url_is_owner_only(tmp_path):
    publish_url(tmp_path / "redis", "redis://:pw@127.0.0.1:1")
    assert _mode(tmp_path / "redis") == 0o700
    (published,) = (tmp_path / "redis").iterdir()
    assert _mode(published) == 0o600


@pytest.fixture
def redis_with_password(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [find_redis_server(), "--port", str(port), "--requirepass", "s3cret-pw", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import redis

        wait_until(
            lambda: redis.Redis(port=port, password="s3cret-pw", socket_timeout=1).ping(),
            what="the password-protected Redis to answer",
            timeout=10,
            retry_on=(redis.RedisError,),
        )
        yield f"redis://:s3cret-pw@127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _runall(stdout):
    from rolloutui.management.commands.runall import Command

    command = Command(stdout=stdout, stderr=io.StringIO())
    return command


def test_runall_never_prints_the_redis_password(settings, redis_with_password):
    settings.REDIS_URL = redis_with_password
    out = io.StringIO()
    _runall(out)._ensure_redis()
    assert "s3cret-pw" not in out.getvalue() and "***" in out.getvalue()


def test_runall_does_not_print_the_password_of_a_redis_that_does_not_answer(settings):
    from django.core.management.base import CommandError

    settings.REDIS_URL = f"redis://:s3cret-pw@127.0.0.1:{free_port()}"
    with pytest.raises(CommandError) as refused:
        _runall(io.StringIO())._ensure_redis()
    assert "s3cret-pw" not in str(refused.value) and "does not answer" in str(refused.value)
