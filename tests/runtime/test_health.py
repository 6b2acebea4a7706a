"""Liveness, readiness and metrics endpoints: no sign-in, real checks, the failing part named."""

import json
import subprocess
import sys

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from rolloutui import metrics
from rolloutui.embedded_redis import EmbeddedRedis, free_port

from .helpers import ROOT


def test_healthz_answers_200_json_without_sign_in(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_checks_the_database_and_says_redis_is_not_configured_without_redis_url(client, db, settings):
    settings.REDIS_URL = None
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"].startswith("ok")
    assert "not configured" in body["checks"]["redis"]


def test_readyz_checks_redis_when_redis_url_is_set(client, db, settings, redis_url):
    settings.REDIS_URL = redis_url
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["redis"].startswith("ok")


def test_readyz_answers_503_naming_redis_when_redis_is_down(client, db, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}"  # nothing listens there
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["failed"] == ["redis"]
    assert body["checks"]["redis"].startswith("error: ConnectionError")
    assert body["checks"]["database"].startswith("ok")


def test_readyz_names_the_failure_without_the_exception_text(client, db, settings):
    port = free_port()
    settings.REDIS_URL = f"redis://:hunter2-secret@127.0.0.1:{port}"
    body = client.get("/readyz").json()
    # Only the cause's name: the text (addresses, ports, users, paths) stays in the log.
    assert body["checks"]["redis"] == "error: ConnectionError"
    text = json.dumps(body)
    assert str(port) not in text and "127.0.0.1" not in text and "hunter2" not in text


def _families(client, token: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return {f.name: f for f in text_string_to_metric_families(response.content.decode())}


def _sample(families, family, sample_name, default=None, **labels):
    for sample in families[family].samples if family in families else ():
        if sample.name == sample_name and all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    if default is not None:
        return default
    raise AssertionError(f"no sample {sample_name}{labels} in /metrics")


def test_metrics_expose_reconcile_counts_durations_and_rollout_progress(client, settings):
    settings.ROLLOUTUI_METRICS_TOKEN = "scrape-token-for-tests"
    ok_before = _sample(_families(client), "rolloutui_reconcile", "rolloutui_reconcile_total", default=0.0, result="ok")
    metrics.observe_reconcile("ok", 0.02)
    metrics.set_rollout_progress("default", "demo", "prefill", 0.5)

    families = _families(client, "scrape-token-for-tests")
    assert _sample(families, "rolloutui_reconcile", "rolloutui_reconcile_total", result="ok") == ok_before + 1
    assert (
        _sample(
            families, "rolloutui_reconcile_duration_seconds", "rolloutui_reconcile_duration_seconds_bucket", le="0.025"
        )
        >= 1
    )
    assert (
        _sample(
            families,
            "rolloutui_rollout_progress_ratio",
            "rolloutui_rollout_progress_ratio",
            namespace="default",
            name="demo",
            role="prefill",
        )
        == 0.5
    )
    assert "rolloutui_reconcile_queue_depth" in families


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["anonymous", "a wrong token"])
def test_metrics_do_not_name_modelservings_without_the_scrape_token(client, settings, token):
    settings.ROLLOUTUI_METRICS_TOKEN = "scrape-token-for-tests"
    metrics.set_rollout_progress("secret-team", "secret-model", "prefill", 0.5)
    metrics.observe_reconcile("ok", 0.02)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    text = client.get("/metrics", **headers).content.decode()
    assert "secret-model" not in text and "secret-team" not in text
    assert "rolloutui_reconcile_total" in text  # the totals are still there
    with_token = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-for-tests").content.decode()
    assert 'name="secret-model"' in with_token


def test_metrics_include_samples_written_by_another_process(client, settings):
    # The Celery worker is another process: its samples reach /metrics through the shared
    # PROMETHEUS_MULTIPROC_DIR.
    code = (
        "import django; django.setup()\n"
        "from rolloutui import metrics\n"
        "metrics.observe_reconcile('conflict', 0.3)\n"
        "metrics.observe_reconcile('conflict', 0.3)\n"
    )
    import os

    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": settings.PROMETHEUS_MULTIPROC_DIR}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    families = _families(client)
    assert _sample(families, "rolloutui_reconcile", "rolloutui_reconcile_total", result="conflict") >= 2


def test_metrics_report_the_reconcile_queue_depth_from_the_broker(client, settings, tmp_path):
    # A private Redis: the queue lists are fixed names, and a shared Redis may hold real tasks.
    with EmbeddedRedis(tmp_path / "redis") as url:
        broker = redis.Redis.from_url(url + "/0")
        broker.rpush("reconcile", "a", "b", "c")
        broker.rpush("celery\x06\x163", "d")  # the same queue at another priority step
        settings.REDIS_URL = url
        families = _families(client)
        broker.close()
    assert _sample(families, "rolloutui_reconcile_queue_depth", "rolloutui_reconcile_queue_depth") == 4


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_probe_endpoints_only_answer_get(client, path):
    assert client.post(path).status_code == 405
