"""Settings come from the environment, with safe defaults and errors that name the variable."""

import json
import logging
import stat
import subprocess

import pytest
from django.conf import settings

from rolloutui.jsonlog import JSONFormatter

from .helpers import ROOT, SettingsError, clean_env, load_settings


def test_debug_is_off_by_default(tmp_path):
    assert load_settings(tmp_path)["DEBUG"] is False


def test_debug_is_on_only_with_rolloutui_debug_1(tmp_path):
    assert load_settings(tmp_path, ROLLOUTUI_DEBUG="1")["DEBUG"] is True
    assert load_settings(tmp_path, ROLLOUTUI_DEBUG="0")["DEBUG"] is False


def test_an_unclear_debug_value_is_refused_naming_the_variable(tmp_path):
    with pytest.raises(SettingsError, match="ROLLOUTUI_DEBUG must be 1 or 0"):
        load_settings(tmp_path, ROLLOUTUI_DEBUG="yes")


def test_the_default_database_is_sqlite_in_the_var_dir(tmp_path):
    loaded = load_settings(tmp_path)
    assert loaded["ENGINE"] == "django.db.backends.sqlite3"
    assert loaded["NAME"] == str(tmp_path / "db.sqlite3")


def test_database_url_selects_the_database(tmp_path):
    loaded = load_settings(tmp_path, DATABASE_URL="postgres://app:secret@db.internal:6543/rollouts")
    assert loaded["ENGINE"] == "django.db.backends.postgresql"
    assert (loaded["HOST"], loaded["PORT"], loaded["NAME"]) == ("db.internal", 6543, "rollouts")


def test_the_secret_key_is_generated_once_into_the_var_dir_and_reused(tmp_path):
    first = load_settings(tmp_path)["SECRET_KEY"]
    second = load_settings(tmp_path)["SECRET_KEY"]
    key_file = tmp_path / "secret_key"
    assert first == second == key_file.read_text().strip()
    assert len(first) >= 50
    # Readable by the owner only.
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_the_secret_key_comes_from_the_environment_when_set(tmp_path):
    assert load_settings(tmp_path, ROLLOUTUI_SECRET_KEY="from-env")["SECRET_KEY"] == "from-env"
    assert not (tmp_path / "secret_key").exists()


def test_no_secret_key_is_committed_to_the_repository():
    tracked = subprocess.run(
        ["git", "ls-files", "var", "*secret_key*"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert tracked.strip() == ""


def test_allowed_hosts_default_to_localhost_and_come_from_the_environment(tmp_path):
    assert load_settings(tmp_path)["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]"]
    loaded = load_settings(tmp_path, ROLLOUTUI_ALLOWED_HOSTS="rollouts.example.com, 10.0.0.5")
    assert loaded["ALLOWED_HOSTS"] == ["rollouts.example.com", "10.0.0.5"]


def test_redis_url_puts_the_broker_on_db_0_and_the_channel_layer_on_db_1(tmp_path):
    loaded = load_settings(tmp_path, REDIS_URL="redis://cache.internal:6380/7")
    assert loaded["CELERY_BROKER_URL"] == "redis://cache.internal:6380/0"
    layer = loaded["CHANNEL_LAYERS"]["default"]
    assert layer["BACKEND"] == "channels_redis.core.RedisChannelLayer"
    (host,) = layer["CONFIG"]["hosts"]
    assert host["address"] == "redis://cache.internal:6380/1"


def test_without_redis_url_the_channel_layer_is_in_memory_and_tasks_are_not_eager(tmp_path):
    loaded = load_settings(tmp_path)
    assert loaded["CHANNEL_LAYERS"]["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert loaded["CELERY_BROKER_URL"] == "memory://"
    if not settings.REDIS_URL:  # this test process, under pytest
        assert settings.CHANNEL_LAYERS["default"]["BACKEND"].endswith("InMemoryChannelLayer")
    assert settings.CELERY_TASK_ALWAYS_EAGER is False


def test_redis_url_puts_the_cache_of_the_throttles_in_redis_on_db_4_with_the_password(tmp_path):
    loaded = load_settings(tmp_path, REDIS_URL="redis://:p%40ss@cache.internal:6380")
    cache = loaded["CACHES"]["default"]
    assert cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert cache["LOCATION"] == "redis://:p%40ss@cache.internal:6380/4"


def test_without_redis_url_the_cache_is_in_process_memory(tmp_path):
    loaded = load_settings(tmp_path)
    assert loaded["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"


def test_a_malformed_redis_url_is_refused_naming_the_variable(tmp_path):
    with pytest.raises(SettingsError, match="REDIS_URL must start with redis://"):
        load_settings(tmp_path, REDIS_URL="localhost:6379")


def test_the_backend_is_sim_by_default_and_must_be_sim_or_kubernetes(tmp_path):
    assert load_settings(tmp_path)["ROLLOUTUI_BACKEND"] == "sim"
    assert load_settings(tmp_path, ROLLOUTUI_BACKEND="kubernetes")["ROLLOUTUI_BACKEND"] == "kubernetes"
    with pytest.raises(SettingsError, match="ROLLOUTUI_BACKEND must be 'sim' or 'kubernetes'"):
        load_settings(tmp_path, ROLLOUTUI_BACKEND="k8s")


def test_the_sim_speed_is_a_positive_number(tmp_path):
    assert load_settings(tmp_path)["ROLLOUTUI_SIM_SPEED"] == 1.0
    assert load_settings(tmp_path, ROLLOUTUI_SIM_SPEED="12.5")["ROLLOUTUI_SIM_SPEED"] == 12.5
    with pytest.raises(SettingsError, match="ROLLOUTUI_SIM_SPEED must be a number"):
        load_settings(tmp_path, ROLLOUTUI_SIM_SPEED="fast")
    with pytest.raises(SettingsError, match="ROLLOUTUI_SIM_SPEED must be > 0"):
        load_settings(tmp_path, ROLLOUTUI_SIM_SPEED="0")


def test_metrics_files_go_to_the_var_dir_outside_tests(tmp_path):
    assert load_settings(tmp_path)["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path / "prometheus")


def test_logs_are_one_json_object_per_line_with_extra_fields():
    record = logging.LogRecord("rolloutui.test", logging.WARNING, __file__, 1, "reconcile %s", ("default/demo",), None)
    record.namespace = "default"
    record.duration_ms = 3.5
    line = JSONFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "WARNING"
    assert entry["logger"] == "rolloutui.test"
    assert entry["message"] == "reconcile default/demo"
    assert entry["namespace"] == "default" and entry["duration_ms"] == 3.5
    assert entry["time"].endswith("+00:00")


def test_exceptions_are_logged_inside_the_json_object():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    entry = json.loads(JSONFormatter().format(record))
    assert "ValueError: boom" in entry["exc"]


def test_a_management_command_logs_json_lines_on_stdout(tmp_path):
    code = "import django, logging; django.setup(); logging.getLogger('rolloutui.probe').info('hello', extra={'k': 1})"
    from .helpers import run_python

    result = run_python(code, clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout.strip().splitlines()[-1])
    assert (entry["logger"], entry["message"], entry["k"]) == ("rolloutui.probe", "hello", 1)


def test_the_celery_worker_refuses_to_start_without_redis_url(tmp_path):
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "rolloutui", "worker", "--concurrency", "1"],
        cwd=ROOT,
        env=clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "REDIS_URL is not set" in result.stdout + result.stderr
