"""The canary analysis' ``MetricsPort`` on a real cluster: Prometheus' HTTP query API.

One PromQL template per figure (``requests``, ``errorRate``, ``timeoutRate``, ``latencyP50Ms``,
``latencyP95Ms``, ``latencyP99Ms``, ``feedbackMean``), with the placeholders of the canary spec:
``{{namespace}}``, ``{{name}}``, ``{{revision}}`` and ``{{window}}`` (the window's length as a
PromQL duration, in whole seconds). Each is evaluated as an instant query at the window's end
(``GET <url>/api/v1/query?query=...&time=<end>``), so a range function over ``{{window}}`` covers
exactly ``[start, end)``. Example::

    errorRate: sum(rate(router_requests_total{namespace="{{namespace}}",revision="{{revision}}",
               status="error"}[{{window}}])) / sum(rate(router_requests_total{namespace=
               "{{namespace}}",revision="{{revision}}"}[{{window}}]))

for the window [1,700,000,000, 1,700,000,060) of revision 5f8d2c42cf becomes ``...revision=
"5f8d2c42cf",status="error"}[60s])) / ...`` evaluated at time 1700000060.

The first sample of the answer is the figure; an empty answer is None (no data), and a figure
without a template is None. An infinite or NaN answer is passed on as it is (``histogram_quantile``
answers +Inf when the quantile lies in the +Inf bucket: a canary slower than the highest bucket):
the analysis judges a window with such a figure Inconclusive, where a None would let a check on it
hold. ``requests`` is rounded to a whole number (``increase`` gives fractions); with none, every
other figure is None. An unreachable server or an error answer raises ``PrometheusError``: the
window is then judged Error (no figures, never judged on missing data; Error windows count
towards the analysis' ``inconclusiveLimit``).

Two optional figures serve the rules of evidence (``controller.core.evidence``): ``started`` (the
requests that started in the window, finished or not, for ``minRequests``; without it the
finished ones stand in) and ``durationP99Ms`` (the p99 of request durations, the settle time of
the next window). A router's metrics usually record a request when it ends, so this provider gives
no evidence of requests still running: its latency checks compare the percentile.

Token figures and paths, when the router exports them: ``ttftP50Ms``, ``ttftP95Ms``, ``ttftP99Ms``
(time to first token), ``tpotP50Ms``, ``tpotP95Ms``, ``tpotP99Ms`` (time per output token) and
``mixedPaths`` (requests whose hops ran more than one revision, a whole number). Example::

    ttftP95Ms: 1000 * histogram_quantile(0.95, sum by (le) (rate(router_ttft_seconds_bucket{
               namespace="{{namespace}}",revision="{{revision}}"}[{{window}}])))
    mixedPaths: sum(increase(router_requests_total{namespace="{{namespace}}",
                revision="{{revision}}",path="mixed"}[{{window}}]))

Resources per revision, from NVIDIA's DCGM exporter: ``gpuUtilization`` (0-1) and ``gpuMemoryMiB``
(memory used per GPU). DCGM labels a series with the pod, not with its revision: join it with
kube-state-metrics' pod labels (the revision label ``serving.rolloutui.io/revision`` becomes
``label_serving_rolloutui_io_revision`` when kube-state-metrics exports it). Example::

    gpuUtilization: avg(avg_over_time(DCGM_FI_DEV_GPU_UTIL{namespace="{{namespace}}"}[{{window}}])
                    * on (namespace, pod) group_left kube_pod_labels{namespace="{{namespace}}",
                    label_serving_rolloutui_io_revision="{{revision}}"}) / 100
    gpuMemoryMiB:   avg(avg_over_time(DCGM_FI_DEV_FB_USED{namespace="{{namespace}}"}[{{window}}])
                    * on (namespace, pod) group_left kube_pod_labels{namespace="{{namespace}}",
                    label_serving_rolloutui_io_revision="{{revision}}"})

(``kube_pod_labels`` is 1 per pod, so the product keeps DCGM's value.) They are kept when no
request finished in the window: they describe the GPUs, not the requests.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

FIGURES = (
    "requests",
    "errorRate",
    "timeoutRate",
    "latencyP50Ms",
    "latencyP95Ms",
    "latencyP99Ms",
    "feedbackMean",
    "started",
    "durationP99Ms",
    "ttftP50Ms",
    "ttftP95Ms",
    "ttftP99Ms",
    "tpotP50Ms",
    "tpotP95Ms",
    "tpotP99Ms",
    "mixedPaths",
    "gpuUtilization",
    "gpuMemoryMiB",
)
# Figures of the revision's GPUs, not of its requests: kept when no request finished in the window.
RESOURCES = ("gpuUtilization", "gpuMemoryMiB")
COUNTS = ("requests", "started")  # whole numbers (``increase`` gives fractions)
WHOLE = ("mixedPaths",)  # a count of requests too, but None like the rates when none finished


class PrometheusError(Exception):
    """Prometheus could not answer a query (unreachable, an error status, or a malformed answer)."""


def render(template: str, *, namespace: str, name: str, revision: str, window_seconds: float) -> str:
    """The template with its placeholders filled (module docstring)."""
    values = {
        "namespace": namespace,
        "name": name,
        "revision": revision,
        "window": f"{max(1, int(round(window_seconds)))}s",
    }
    out = template
    for key, value in values.items():
        out = out.replace("{{" + key + "}}", value)
    return out


class PrometheusMetrics:
    """``url``: the server (``ROLLOUTUI_PROMETHEUS_URL``, e.g. ``http://prometheus:9090``);
    ``templates``: figure -> PromQL template; ``timeout``: seconds per query."""

    def __init__(self, url: str, templates: dict[str, str], *, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self.templates = {k: v for k, v in templates.items() if k in FIGURES and isinstance(v, str)}
        self.timeout = timeout

    def query(self, promql: str, at: float) -> float | None:
        if not self.url:
            raise PrometheusError("no Prometheus server configured (ROLLOUTUI_PROMETHEUS_URL)")
        params = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
        request = urllib.request.Request(f"{self.url}/api/v1/query?{params}", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = ""
            try:
                detail = json.loads(exc.read()).get("error", "")
            except (ValueError, AttributeError):
                pass
            raise PrometheusError(f"Prometheus answered {exc.code} to {promql!r}: {detail}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise PrometheusError(f"Prometheus at {self.url} could not answer {promql!r}: {exc}") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise PrometheusError(
                f"Prometheus refused {promql!r}: {body.get('error') if isinstance(body, dict) else body}"
            )
        data = body.get("data") or {}
        kind, result = data.get("resultType"), data.get("result")
        try:
            if kind == "vector":
                if not result:
                    return None
                value = float(result[0]["value"][1])
            elif kind == "scalar":
                value = float(result[1])
            else:
                raise PrometheusError(f"{promql!r} gave a {kind}, not a vector or scalar")
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise PrometheusError(f"malformed answer to {promql!r}: {exc}") from None
        return value

    def window(
        self, namespace: str, name: str, revision: str, start: float, end: float, *, at: float | None = None
    ) -> dict[str, Any]:
        """Each figure as of the window's end, whatever ``at`` (module docstring)."""
        out: dict[str, Any] = {}
        for figure in FIGURES:
            template = self.templates.get(figure)
            if template is None:
                out[figure] = None
                continue
            promql = render(template, namespace=namespace, name=name, revision=revision, window_seconds=end - start)
            out[figure] = self.query(promql, end)
        if out["requests"] is None:
            out["requests"] = 0
        for count in (*COUNTS, *WHOLE):
            if out[count] is not None and math.isfinite(out[count]):
                out[count] = int(round(out[count]))
        if out["requests"] == 0:
            # No finished request: rates and latencies mean nothing (the contract: None when there
            # were none). How many started is still the window's evidence for minRequests.
            out.update({k: None for k in FIGURES if k not in COUNTS and k not in RESOURCES})
        return out
