"""Liveness (/healthz), readiness (/readyz) and Prometheus metrics (/metrics).

These are for probes and scrapers, so they need no sign-in and answer quickly: readiness gives
each dependency a short timeout and names the one that failed, with the exception's class only
(``error: OperationalError``): the text may carry host names, users or paths, so it goes to the log,
not to an anonymous caller.

/metrics: the per-ModelServing series (labels ``namespace``, ``name``) are served only to a scraper
that sends ``Authorization: Bearer <ROLLOUTUI_METRICS_TOKEN>``; everyone else gets the controller's
totals (reconcile counts, durations, queue depth) without them, so an anonymous caller cannot list
the ModelServings.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import connections
from django.http import HttpResponse, JsonResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from rolloutui import metrics, runtime_config

log = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 2.0


@never_cache
@require_GET
def healthz(request):
    """Liveness: the process serves requests. Dependencies are /readyz's business."""
    return JsonResponse({"status": "ok"})


def _check_database() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _redis_client():
    import redis

    return redis.Redis.from_url(
        runtime_config.redis_db_url(settings.REDIS_URL, runtime_config.BROKER_DB),
        socket_timeout=CHECK_TIMEOUT_SECONDS,
        socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
    )


def _check_redis() -> None:
    client = _redis_client()
    try:
        client.ping()
    finally:
        client.close()


@never_cache
@require_GET
def readyz(request):
    """Readiness: the database answers, and Redis answers when REDIS_URL is configured."""
    checks: dict[str, str] = {}
    failed: list[str] = []
    probes = [("database", _check_database)]
    if settings.REDIS_URL:
        probes.append(("redis", _check_redis))
    else:
        checks["redis"] = "not configured (REDIS_URL unset)"
    for name, probe in probes:
        started = time.monotonic()
        try:
            probe()
        except Exception as exc:  # any failure means "not ready"; the message says which
            failed.append(name)
            checks[name] = f"error: {exc.__class__.__name__}"
            log.warning("readiness check failed", extra={"check": name, "error": f"{exc.__class__.__name__}: {exc}"})
        else:
            checks[name] = f"ok ({(time.monotonic() - started) * 1000:.1f} ms)"
    if failed:
        return JsonResponse({"status": "unavailable", "failed": failed, "checks": checks}, status=503)
    return JsonResponse({"status": "ok", "checks": checks})


@never_cache
@require_GET
def metrics_view(request):
    """Prometheus text format, aggregated over every process sharing PROMETHEUS_MULTIPROC_DIR."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    if settings.REDIS_URL:
        # The queue depth is measured at scrape time: a broker-side number no worker can know.
        try:
            client = _redis_client()
            try:
                metrics.set_queue_depth(metrics.broker_queue_depth(client))
            finally:
                client.close()
        except Exception as exc:
            log.warning("could not measure the reconcile queue depth", extra={"error": str(exc)})
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
    if not _scraper_has_token(request):
        registry = _WithoutObjectLabels(registry)
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


# Labels that name a ModelServing: series carrying them are for token-holding scrapers only.
OBJECT_LABELS = frozenset({"namespace", "name"})


def _scraper_has_token(request) -> bool:
    expected = settings.ROLLOUTUI_METRICS_TOKEN
    if not expected:
        return False
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and constant_time_compare(given.strip(), expected)


class _WithoutObjectLabels:
    """A registry view that leaves out every sample labelled with a ModelServing's name."""

    def __init__(self, registry):
        self.registry = registry

    def collect(self):
        for family in self.registry.collect():
            family.samples = [s for s in family.samples if not OBJECT_LABELS & set(s.labels)]
            yield family
