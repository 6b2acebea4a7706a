"""Production settings: `manage.py check --deploy` is clean with the environment deploy/ gives the
web pods (plus ROLLOUTUI_HTTPS=1 and a host name, as when served through an Ingress with TLS), and
the security switches behave as documented. Each runs in a fresh process: settings are read once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from manifests import ROOT, config_maps, container_env, containers_of, deployment

SECRETS = {
    "rolloutui-secrets": {
        "DATABASE_URL": "postgres://rolloutui:db-pass@postgres.example:5432/rolloutui",
        # What docs/install.md says to use: openssl rand -hex 32 (64 characters).
        "ROLLOUTUI_SECRET_KEY": "9f2c4e7a1b3d5f60" * 4,
        "REDIS_PASSWORD": "0f3c9a7be1d24c5b8e6f",
        "ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS": "c0ffee" * 8,
    }
}
PRODUCTION = {"ROLLOUTUI_HTTPS": "1", "ROLLOUTUI_ALLOWED_HOSTS": "rollouts.example.com,localhost"}


def pod_env(**overrides: str) -> dict[str, str]:
    """What the web container of deploy/web.yaml sees, with the test Secret."""
    (web,) = containers_of(deployment("rolloutui-web"), init=False)
    env = container_env(web, config_maps(), SECRETS, {"metadata.name": "web-0", "metadata.namespace": "rolloutui"})
    env.update(overrides)
    return env


def mount_config_files(var_dir: Path, env: dict[str, str]) -> dict[str, str]:
    """The ConfigMaps the web container mounts as files (the notifications), written under
    ``var_dir`` as the kubelet would mount them, and the settings that name them pointed there."""
    (web,) = containers_of(deployment("rolloutui-web"), init=False)
    volumes = {v["name"]: v for v in deployment("rolloutui-web")["spec"]["template"]["spec"]["volumes"]}
    env = dict(env)
    for mount in web.get("volumeMounts") or []:
        config_map = volumes[mount["name"]].get("configMap")
        if config_map is None:
            continue
        folder = var_dir / "mounts" / mount["name"]
        folder.mkdir(parents=True, exist_ok=True)
        for key, text in config_maps()[config_map["name"]].items():
            (folder / key).write_text(text)
        for name, value in env.items():
            if value.startswith(mount["mountPath"] + "/"):
                env[name] = str(folder / value[len(mount["mountPath"]) + 1 :])
    return env


def process_env(var_dir: Path, env: dict[str, str]) -> dict[str, str]:
    env = mount_config_files(var_dir, env)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROLLOUTUI_")}
    for scrubbed in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR"):
        base.pop(scrubbed, None)
    base.update(env)
    base.update(
        {
            "ROLLOUTUI_VAR_DIR": str(var_dir),
            "PROMETHEUS_MULTIPROC_DIR": str(var_dir / "prometheus"),
            "DJANGO_SETTINGS_MODULE": "rolloutui.settings",
        }
    )
    return base


def check_deploy(var_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=process_env(var_dir, env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_python(var_dir: Path, env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=process_env(var_dir, env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_of(var_dir: Path, env: dict[str, str], *names: str) -> dict:
    code = (
        "import json, django; from django.conf import settings; django.setup(); "
        f"print(json.dumps({{n: getattr(settings, n, None) for n in {list(names)!r}}}, default=str))"
    )
    result = run_python(var_dir, env, code)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_check_deploy_is_clean_with_the_production_environment_of_the_manifests(tmp_path):
    result = check_deploy(tmp_path, pod_env(**PRODUCTION))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_flags_the_plain_http_settings_the_https_switch_fixes(tmp_path):
    result = check_deploy(tmp_path, pod_env(ROLLOUTUI_ALLOWED_HOSTS="rollouts.example.com"))
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stdout + result.stderr


def test_the_settings_refuse_every_host_outside_debug_mode(tmp_path):
    result = run_python(tmp_path, pod_env(ROLLOUTUI_ALLOWED_HOSTS="*"), "import django; django.setup()")
    assert result.returncode != 0
    assert "ROLLOUTUI_ALLOWED_HOSTS must list the host names" in result.stderr
    # Debug mode (a developer's machine) may still use it.
    assert settings_of(tmp_path, {"ROLLOUTUI_ALLOWED_HOSTS": "*", "ROLLOUTUI_DEBUG": "1"}, "ALLOWED_HOSTS") == {
        "ALLOWED_HOSTS": ["*"]
    }


def test_without_configuration_only_loopback_hosts_are_served(tmp_path):
    assert settings_of(tmp_path, {}, "ALLOWED_HOSTS")["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1", "[::1]"]


def test_the_https_switch_turns_on_secure_cookies_hsts_the_proxy_header_and_redirects(tmp_path):
    names = (
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_SSL_REDIRECT",
        "SECURE_PROXY_SSL_HEADER",
    )
    on = settings_of(tmp_path, {"ROLLOUTUI_HTTPS": "1"}, *names)
    assert on == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }
    off = settings_of(tmp_path, {}, *names)
    assert off["SESSION_COOKIE_SECURE"] is False and off["SECURE_SSL_REDIRECT"] is False
    assert off["SECURE_PROXY_SSL_HEADER"] is None  # never trust the header without a proxy


def test_with_https_pages_redirect_but_probes_and_metrics_answer_over_plain_http(tmp_path):
    code = """
import django
django.setup()
from django.test import Client
plain = Client(SERVER_NAME="localhost")
proxied = Client(SERVER_NAME="localhost", HTTP_X_FORWARDED_PROTO="https")
print(plain.get("/accounts/login/").status_code, plain.get("/healthz").status_code,
      proxied.get("/accounts/login/").status_code,
      proxied.get("/accounts/login/").headers.get("Strict-Transport-Security"))
"""
    result = run_python(tmp_path, {"ROLLOUTUI_HTTPS": "1"}, code)
    assert result.returncode == 0, result.stderr
    login_plain, healthz_plain, login_proxied, hsts = result.stdout.strip().splitlines()[-1].split(" ", 3)
    assert (login_plain, healthz_plain, login_proxied) == ("301", "200", "200")
    assert hsts == "max-age=31536000; includeSubDomains; preload"


def test_sessions_end_after_a_working_day(tmp_path):
    assert settings_of(tmp_path, {}, "SESSION_COOKIE_AGE")["SESSION_COOKIE_AGE"] == 12 * 3600
    assert settings_of(tmp_path, {"ROLLOUTUI_SESSION_SECONDS": "3600"}, "SESSION_COOKIE_AGE") == {
        "SESSION_COOKIE_AGE": 3600
    }


def test_a_redis_password_with_reserved_characters_reaches_every_derived_url(tmp_path):
    # "p@ss/w:rd" percent-encoded, as docs/install.md says to write it in a URL.
    url = "redis://:p%40ss%2Fw%3Ard@redis.internal:6380/5"
    got = settings_of(tmp_path, {"REDIS_URL": url}, "CELERY_BROKER_URL", "CHANNEL_LAYERS")
    import redis

    broker = got["CELERY_BROKER_URL"]
    channel = got["CHANNEL_LAYERS"]["default"]["CONFIG"]["hosts"][0]["address"]
    assert broker == "redis://:p%40ss%2Fw%3Ard@redis.internal:6380/0"
    for derived in (broker, channel):
        parsed = redis.connection.parse_url(derived)
        assert (parsed["password"], parsed["host"], parsed["port"]) == ("p@ss/w:rd", "redis.internal", 6380)


def test_a_redis_url_with_an_unexpanded_secret_reference_is_refused_without_echoing_it(tmp_path):
    env = {"REDIS_URL": "redis://:$(REDIS_PASSWORD)@rolloutui-redis:6379"}
    result = run_python(tmp_path, env, "import django; django.setup()")
    assert result.returncode != 0
    assert "REDIS_URL holds an unexpanded $(...) reference" in result.stderr
    # A raw password with a reserved character is named as such, and not printed.
    result = run_python(tmp_path, {"REDIS_URL": "redis://:se/cr:et@redis:6379"}, "import django; django.setup()")
    assert "REDIS_URL has an invalid port; percent-encode" in result.stderr
    assert "se/cr:et" not in result.stderr


@pytest.mark.parametrize("keys", ["", "c0ffee" * 8])
def test_channel_layer_messages_are_encrypted_exactly_when_a_key_is_configured(tmp_path, keys):
    code = """
import django
django.setup()
from django.conf import settings
from channels_redis.core import RedisChannelLayer
config = settings.CHANNEL_LAYERS["default"]["CONFIG"]
layer = RedisChannelLayer(**config)
wire = layer.serialize({"type": "state.delta", "phase": "Healthy-secret-marker"})
assert layer.deserialize(wire)["phase"] == "Healthy-secret-marker"
print(b"Healthy-secret-marker" in wire, "symmetric_encryption_keys" in config)
"""
    env = {"REDIS_URL": "redis://:pw@redis:6379", "ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS": keys}
    result = run_python(tmp_path, env, code)
    assert result.returncode == 0, result.stderr
    readable, configured = result.stdout.strip().splitlines()[-1].split()
    assert (readable, configured) == (("False", "True") if keys else ("True", "False"))
