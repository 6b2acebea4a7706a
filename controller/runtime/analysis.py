"""The canary analysis' figures in the running controller: which ``MetricsPort`` a pass gets.

``metrics_for(cluster)`` gives the reconcile pass (``reconciler``) a port that, when the analysis
asks for a window of a ModelServing, reads that ModelServing's ``analysis.provider``:

- ``simulated`` (the default): the stored request records (``controller.records.figures``): the
  embedded cluster's router leaves one per request, a real cluster's log shipper sends them to
  ``POST /api/request-records/``;
- ``prometheus``: ``ROLLOUTUI_PROMETHEUS_URL``'s HTTP query API with the ModelServing's
  ``analysis.queries``, over the defaults of ``ROLLOUTUI_PROMETHEUS_QUERIES``
  (``controller.records.prometheus``). Each query must be one of the installation's templates
  (``core.promql``, ``clustersettings.prometheus_templates``); with any other, no window of that
  ModelServing is asked for or judged, and the log says why.

This runs in the Celery worker's reconcile task, never in the web process.

When the analysis acts (pauses or rolls back), ``analysis_acted`` is sent with the pass's audit
entries (``{"source": "analysis", "action", "reason", "fromRevision", "toRevision", "details":
{"window": {..., "figures": {"stable", "canary"}}}, "t"}``); the dashboard writes them to the audit
trail (``rolloutui.services.audit.record_analysis``). The controller never imports the dashboard.
"""

from __future__ import annotations

import logging
from typing import Any

import django.dispatch
from django.conf import settings

from controller.core import promql
from controller.core.ports import ClusterPort, MetricsPort, NotFound
from controller.core.spec import canary_of
from controller.records.figures import DatabaseMetrics

from .clustersettings import prometheus_templates

log = logging.getLogger(__name__)

# Sent with namespace, name (the ModelServing) and entries (the pass's audit entries).
analysis_acted = django.dispatch.Signal()


def announce(namespace: str, name: str, entries: list[dict[str, Any]]) -> None:
    """Tell the dashboard what the analysis did; a receiver's failure never fails the pass."""
    if not entries:
        return
    for receiver, response in analysis_acted.send_robust(
        sender=announce, namespace=namespace, name=name, entries=entries
    ):
        if isinstance(response, Exception):
            log.error("analysis audit receiver %s failed: %s", receiver, response)


def _analysis_of(obj: dict[str, Any]):
    canary = canary_of(obj)
    return canary.analysis if canary is not None else None


class RefusedQueries:
    """The port of an analysis whose queries the installation does not allow (``core.promql``):
    every window raises, so the pass leaves it unjudged and logs why; Prometheus is never asked."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def window(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from controller.records.prometheus import PrometheusError

        raise PrometheusError(f"not asked: {self.reason}")


def prometheus_port(queries: dict[str, str] | None = None) -> MetricsPort:
    from controller.records.prometheus import PrometheusMetrics

    # Checked again here: a ModelServing written on the cluster directly never went through
    # RolloutUI's validation.
    try:
        chosen = promql.resolve(queries or {}, prometheus_templates(), promql.QUERIES_FIELD)
    except promql.QueryRefused as err:
        log.warning("canary analysis queries refused: %s", err)
        return RefusedQueries(str(err))
    templates = {**(getattr(settings, "ROLLOUTUI_PROMETHEUS_QUERIES", None) or {}), **chosen}
    return PrometheusMetrics(
        getattr(settings, "ROLLOUTUI_PROMETHEUS_URL", "") or "",
        templates,
        timeout=float(getattr(settings, "ROLLOUTUI_PROMETHEUS_TIMEOUT_SECONDS", 5) or 5),
    )


class AnalysisMetrics:
    """A ``MetricsPort`` choosing the provider of each ModelServing's analysis (module docstring)."""

    def __init__(self, cluster: ClusterPort) -> None:
        self.cluster = cluster
        self.database = DatabaseMetrics()
        self._ports: dict[tuple[str, str], MetricsPort] = {}

    def _port(self, namespace: str, name: str) -> MetricsPort:
        key = (namespace, name)
        port = self._ports.get(key)
        if port is None:
            try:
                analysis = _analysis_of(self.cluster.get_modelserving(namespace, name))
            except NotFound:
                analysis = None
            if analysis is not None and analysis.provider == "prometheus":
                port = prometheus_port(analysis.queries)
            else:
                port = self.database
            self._ports[key] = port
        return port

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict[str, Any]:
        return self._port(namespace, name).window(namespace, name, revision, start, end, at=at)


def metrics_for(cluster: ClusterPort) -> MetricsPort:
    """On the embedded cluster the ``simulated`` provider's windows also carry the simulated GPU
    figures when the analysis checks one (``controller.core.gpu``); on Kubernetes GPU figures come
    from Prometheus (DCGM) only."""
    port = AnalysisMetrics(cluster)
    from .backend import backend_name

    if backend_name() == "kubernetes":
        return port
    return simulated_gpu(port, cluster)


def simulated_gpu(port: MetricsPort, cluster: ClusterPort) -> MetricsPort:
    """``port`` with ``core.gpu``'s figures from the stored request records and the revision's
    Serving entry pods (the router's table), for a ModelServing whose ``simulated`` analysis checks
    a GPU metric."""
    from controller.core.gpu import GpuFigures
    from controller.models import RequestRecord
    from controller.simcluster.routing import revision_label, routable_entries

    def analysis_of(namespace: str, name: str):
        try:
            analysis = _analysis_of(cluster.get_modelserving(namespace, name))
        except NotFound:
            return None
        return analysis if analysis is not None and analysis.provider == "simulated" else None

    def engines_of(namespace: str, name: str, revision: str) -> list[dict[str, Any]]:
        return [p for p in routable_entries(cluster.list_pods(namespace, name)) if revision_label(p) == revision]

    def busy_of(namespace: str, name: str, revision: str, start: float, end: float, at: float):
        rows = RequestRecord.objects.filter(namespace=namespace, name=name, revision=revision, started__lt=end).exclude(
            finished__lt=start
        )
        return [
            (began, at if finished is None else finished) for began, finished in rows.values_list("started", "finished")
        ]

    return GpuFigures(port, analysis_of=analysis_of, engines_of=engines_of, busy_of=busy_of)
