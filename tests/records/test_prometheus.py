"""The Prometheus provider against a real HTTP server started here that answers Prometheus' query
API (``/api/v1/query``) from a table of PromQL -> value, recording what it was asked."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from controller.core.reconcile import _analysis_figures
from controller.records.prometheus import PrometheusError, PrometheusMetrics, render

SEL = 'revision="{{revision}}"'
TEMPLATES = {
    "requests": 'sum(increase(router_requests_total{namespace="{{namespace}}",ms="{{name}}",' + SEL + "}[{{window}}]))",
    "errorRate": f"sum(rate(router_errors_total{{{SEL}}}[{{{{window}}}}]))"
    f" / sum(rate(router_requests_total{{{SEL}}}[{{{{window}}}}]))",
    "latencyP99Ms": f"histogram_quantile(0.99, sum by (le) (rate(router_latency_ms_bucket{{{SEL}}}[{{{{window}}}}])))",
}


class FakePrometheus:
    """``answers``: PromQL -> value (a float, "NaN", None for an empty vector, or ("error", code))."""

    def __init__(self) -> None:
        self.answers: dict[str, object] = {}
        self.asked: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                params = dict(urllib.parse.parse_qsl(url.query))
                owner.asked.append({"path": url.path, **params})
                if url.path != "/api/v1/query":
                    return self._send(404, {"status": "error", "error": "not found"})
                answer = owner.answers.get(params.get("query"), None)
                if isinstance(answer, tuple):
                    return self._send(answer[1], {"status": "error", "errorType": "bad_data", "error": answer[0]})
                result = [] if answer is None else [{"metric": {}, "value": [float(params["time"]), str(answer)]}]
                self._send(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def set(self, figure: str, revision: str, value, window: int = 60) -> None:
        query = render(TEMPLATES[figure], namespace="default", name="chat", revision=revision, window_seconds=window)
        self.answers[query] = value


@pytest.fixture
def prom():
    p = FakePrometheus()
    p.thread.start()
    yield p
    p.server.shutdown()
    p.server.server_close()


def test_each_figure_is_an_instant_query_of_its_template_at_the_windows_end(prom):
    prom.set("requests", "canary2", 123.6)
    prom.set("errorRate", "canary2", 0.2)
    prom.set("latencyP99Ms", "canary2", 840.5)
    got = PrometheusMetrics(prom.url, TEMPLATES).window("default", "chat", "canary2", 1_700_000_000, 1_700_000_060)
    assert got == {
        "requests": 124,
        "errorRate": 0.2,
        "timeoutRate": None,  # no template
        "latencyP50Ms": None,
        "latencyP95Ms": None,
        "latencyP99Ms": 840.5,
        "feedbackMean": None,
        "started": None,  # no template: the finished requests stand in for minRequests
        "durationP99Ms": None,
        # Token figures and paths: no template either.
        **dict.fromkeys(("ttftP50Ms", "ttftP95Ms", "ttftP99Ms", "tpotP50Ms", "tpotP95Ms", "tpotP99Ms", "mixedPaths")),
        # Resources (DCGM): no template either.
        **dict.fromkeys(("gpuUtilization", "gpuMemoryMiB")),
    }
    first = prom.asked[0]
    assert first["path"] == "/api/v1/query" and first["time"] == "1700000060.000"
    assert first["query"] == (
        'sum(increase(router_requests_total{namespace="default",ms="chat",revision="canary2"}[60s]))'
    )


def test_no_data_and_nan_are_none_and_no_requests_means_no_rates(prom):
    prom.set("requests", "r1", 0)
    prom.set("errorRate", "r1", "NaN")
    got = PrometheusMetrics(prom.url, TEMPLATES).window("default", "chat", "r1", 0, 60)
    assert got["requests"] == 0 and got["errorRate"] is None and got["latencyP99Ms"] is None
    got = PrometheusMetrics(prom.url, TEMPLATES).window("default", "chat", "unknown", 0, 60)
    assert got["requests"] == 0


def test_an_error_answer_or_an_unreachable_server_raises_naming_the_query(prom):
    prom.set("requests", "r1", ("parse error at char 3", 400))
    with pytest.raises(PrometheusError, match="400.*parse error"):
        PrometheusMetrics(prom.url, TEMPLATES).window("default", "chat", "r1", 0, 60)
    with pytest.raises(PrometheusError, match="could not answer"):
        PrometheusMetrics("http://127.0.0.1:9", TEMPLATES, timeout=1).window("default", "chat", "r1", 0, 60)


def test_a_window_prometheus_cannot_answer_is_an_error_window_and_prometheus_is_asked_once(prom):
    import copy

    from controller.core.spec import parse_modelserving
    from tests.live.helpers import MANIFEST

    manifest = copy.deepcopy(MANIFEST)
    manifest["metadata"]["uid"] = "u1"
    manifest["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] = {"maxUnavailable": 1}
    manifest["spec"]["rolloutStrategy"]["canary"] = {
        "steps": [{"setPartition": 1}, {"pause": {}}],
        "analysis": {
            "provider": "prometheus",
            "intervalSeconds": 60,
            "queries": TEMPLATES,
            "metrics": [{"metric": "errorRate", "max": 0.05}],
        },
    }
    ms = parse_modelserving(manifest)
    status = {"canary": {"phase": "Running", "startedAt": 0.0, "stable": "r1", "revision": "r2"}}
    down = PrometheusMetrics("http://127.0.0.1:9", TEMPLATES, timeout=1)
    # At 190 s two windows are due: each is judged a settle time after its end (before any
    # duration is known, one interval), so [0, 60) from 120 s and [60, 120) from 180 s; [120, 180)
    # waits until 240 s. The provider's failure is the verdict of both (the traffic contract: an
    # Error window), and the second is not asked for again.
    errors = _analysis_figures(down, "default", "chat", ms, status, 190.0)
    assert list(errors) == [(0.0, 60.0), (60.0, 120.0)]
    assert all("could not answer" in e["error"] for e in errors.values())
    assert errors[(0.0, 60.0)] == errors[(60.0, 120.0)]
    prom.set("requests", "r2", 50)
    prom.set("requests", "r1", 50)
    up = PrometheusMetrics(prom.url, TEMPLATES)
    figures = _analysis_figures(up, "default", "chat", ms, status, 190.0)
    assert list(figures) == [(0.0, 60.0), (60.0, 120.0)]
    assert figures[(0.0, 60.0)]["canary"]["requests"] == 50


def test_the_running_controller_uses_prometheus_for_a_modelserving_that_asks_for_it(prom, settings, db):
    from controller.records.figures import DatabaseMetrics
    from controller.runtime.analysis import AnalysisMetrics

    settings.ROLLOUTUI_PROMETHEUS_URL = prom.url
    settings.ROLLOUTUI_PROMETHEUS_QUERIES = {"latencyP99Ms": TEMPLATES["latencyP99Ms"], "errorRate": "up"}
    settings.ROLLOUTUI_PROMETHEUS_TEMPLATES = {
        "router-requests": TEMPLATES["requests"],
        "router-errors": TEMPLATES["errorRate"],
    }

    class Cluster:
        def __init__(self, analysis):
            self.analysis = analysis

        def get_modelserving(self, namespace, name):
            canary = {"steps": [{"setPartition": 1}], "analysis": self.analysis}
            return {"spec": {"rolloutStrategy": {"type": "ServingGroupRollingUpdate", "canary": canary}}}

    analysis = {
        "provider": "prometheus",
        # One template by its name, one by its text: both are the installation's.
        "queries": {"requests": "router-requests", "errorRate": TEMPLATES["errorRate"]},
        "metrics": [{"metric": "errorRate", "max": 0.05}],
    }
    prom.set("requests", "r2", 80)
    prom.set("errorRate", "r2", 0.5)
    prom.set("latencyP99Ms", "r2", 900)
    got = AnalysisMetrics(Cluster(analysis)).window("default", "chat", "r2", 0, 60)
    # the spec's queries win over the settings' ("up" is not asked); the settings fill in p99
    assert (got["requests"], got["errorRate"], got["latencyP99Ms"]) == (80, 0.5, 900.0)
    simulated = {"metrics": [{"metric": "errorRate", "max": 0.05}]}
    assert isinstance(AnalysisMetrics(Cluster(simulated))._port("default", "chat"), DatabaseMetrics)


def test_the_running_controller_never_sends_prometheus_a_query_outside_the_allowed_templates(prom, settings, db):
    """A ModelServing written on the cluster directly (kubectl, past RolloutUI's validation) with
    PromQL of its own: the window waits (never judged on figures that were not asked for) and
    Prometheus is never asked."""
    from controller.records.prometheus import PrometheusError as Refused
    from controller.runtime.analysis import AnalysisMetrics

    settings.ROLLOUTUI_PROMETHEUS_URL = prom.url
    settings.ROLLOUTUI_PROMETHEUS_TEMPLATES = {"router-requests": TEMPLATES["requests"]}
    settings.ROLLOUTUI_PROMETHEUS_QUERIES = {}

    class Cluster:
        def get_modelserving(self, namespace, name):
            analysis = {
                "provider": "prometheus",
                "queries": {
                    "requests": "router-requests",
                    "errorRate": 'count(kube_secret_info{namespace="x"}) + {{revision}}',
                },
                "metrics": [{"metric": "errorRate", "max": 0.05}],
            }
            canary = {"steps": [{"setPartition": 1}], "analysis": analysis}
            return {"spec": {"rolloutStrategy": {"type": "ServingGroupRollingUpdate", "canary": canary}}}

    with pytest.raises(Refused, match="queries.errorRate"):
        AnalysisMetrics(Cluster()).window("default", "chat", "r2", 0, 60)
    assert prom.asked == []


def _seconds_quantile(q: float, metric: str) -> str:
    return f"1000 * histogram_quantile({q}, sum by (le) (rate({metric}_bucket{{{SEL}}}[{{{{window}}}}])))"


TOKEN_TEMPLATES = {
    **TEMPLATES,
    "ttftP95Ms": _seconds_quantile(0.95, "router_ttft_seconds"),
    "tpotP99Ms": _seconds_quantile(0.99, "router_tpot_seconds"),
    "mixedPaths": f'sum(increase(router_requests_total{{{SEL},path="mixed"}}[{{{{window}}}}]))',
}


def test_token_figures_and_mixed_paths_are_queried_from_their_templates_and_mixed_paths_is_whole(prom):
    prom.answers.clear()
    for figure, value in (("requests", 80), ("ttftP95Ms", 212.5), ("tpotP99Ms", 31.0), ("mixedPaths", 2.6)):
        query = render(TOKEN_TEMPLATES[figure], namespace="default", name="chat", revision="c2", window_seconds=60)
        prom.answers[query] = value
    got = PrometheusMetrics(prom.url, TOKEN_TEMPLATES).window("default", "chat", "c2", 1_700_000_000, 1_700_000_060)
    assert (got["ttftP95Ms"], got["tpotP99Ms"], got["mixedPaths"]) == (212.5, 31.0, 3)
    assert got["ttftP50Ms"] is None and got["tpotP95Ms"] is None  # no template
    asked = {a["query"] for a in prom.asked}
    assert 'sum(increase(router_requests_total{revision="c2",path="mixed"}[60s]))' in asked
