"""Resources per revision: GPU utilisation and GPU memory of each revision in the comparison
(``rolloutui.services.gpu_revisions``), and as metrics of the canary analysis (``gpuUtilization``,
``gpuMemoryMiB``: parsed, judged in words, fetched from Prometheus/DCGM templates)."""

from __future__ import annotations

import pytest

from controller.core.analysis import FAIL, INCONCLUSIVE, PASS, judge_window
from controller.core.canary import Analysis, CanaryError, Check, parse_canary
from controller.records.prometheus import PrometheusMetrics, render

from .test_api import chat  # noqa: F401 (the fixture)
from .test_prometheus import FakePrometheus

DCGM = {
    "requests": 'sum(increase(router_requests_total{revision="{{revision}}"}[{{window}}]))',
    "gpuUtilization": 'avg(avg_over_time(DCGM_FI_DEV_GPU_UTIL{rev="{{revision}}"}[{{window}}])) / 100',
    "gpuMemoryMiB": 'avg(avg_over_time(DCGM_FI_DEV_FB_USED{rev="{{revision}}"}[{{window}}]))',
}


def analysis(*checks: Check) -> Analysis:
    return Analysis(60.0, 20, 1, "Pause", "simulated", checks, {})


def figures(**gpu):
    return {"requests": 200, "errorRate": 0.0, "latencyP99Ms": 900.0, **gpu}


@pytest.mark.parametrize(
    "check,stable,canary,verdict,words",
    [
        (Check("gpuUtilization", "max", 0.9), {}, {"gpuUtilization": 0.95}, FAIL,
         "canary GPU utilisation 95.0% is above the limit 90.0%"),
        (Check("gpuUtilization", "max", 0.9), {}, {"gpuUtilization": 0.6}, PASS, None),
        (Check("gpuMemoryMiB", "maxDeltaToStable", 4096), {"gpuMemoryMiB": 40000}, {"gpuMemoryMiB": 46000}, FAIL,
         "canary GPU memory 46,000 MiB is 6,000 MiB above stable 40,000 MiB, limit 4,096 MiB"),
        (Check("gpuMemoryMiB", "maxRatioToStable", 1.2), {"gpuMemoryMiB": 40000}, {"gpuMemoryMiB": 44000}, PASS, None),
        (Check("gpuUtilization", "max", 0.9), {}, {}, INCONCLUSIVE, "no canary GPU utilisation in this window"),
    ],
    ids=[
        "a canary busier than the GPU limit fails, said in percent",
        "a canary below the GPU limit passes",
        "a canary using 6 GiB more GPU memory than stable fails a 4 GiB delta, said in MiB",
        "10% more GPU memory than stable is within a 1.2x ratio",
        "without a GPU figure the window cannot judge the check",
    ],
)  # fmt: skip
def test_gpu_checks_are_judged_like_the_other_metrics(check, stable, canary, verdict, words):
    result = judge_window(analysis(check), 0, 60, "old", "new", figures(**stable), figures(**canary))
    assert result.verdict == verdict
    if words:
        assert words in " ".join(str(r) for r in result.reasons)


def test_the_canary_spec_takes_gpu_metrics_and_refuses_a_misspelt_one_with_its_path():
    spec = {
        "steps": [{"setPartition": "50%"}],
        "analysis": {
            "metrics": [{"metric": "gpuMemoryMiB", "maxRatioToStable": 1.2}, {"metric": "gpuUtilization", "max": 0.95}]
        },
    }
    kw = {"strategy_type": "ServingGroupRollingUpdate", "group_partition_set": False}
    parsed = parse_canary(spec, "spec.rolloutStrategy.canary", **kw)
    assert [c.metric for c in parsed.analysis.checks] == ["gpuMemoryMiB", "gpuUtilization"]
    spec["analysis"]["metrics"][0]["metric"] = "gpuUtilisation"
    with pytest.raises(CanaryError) as err:
        parse_canary(spec, "spec.rolloutStrategy.canary", **kw)
    assert err.value.field == "spec.rolloutStrategy.canary.analysis.metrics[0].metric"


@pytest.fixture
def prom():
    p = FakePrometheus()
    p.thread.start()
    yield p
    p.server.shutdown()
    p.server.server_close()


def test_dcgm_figures_come_from_their_templates_and_stay_when_no_request_finished(prom):
    def answer(figure, value):
        prom.answers[render(DCGM[figure], namespace="default", name="chat", revision="c2", window_seconds=60)] = value

    answer("requests", 0)
    answer("gpuUtilization", 0.83)
    answer("gpuMemoryMiB", 51234.5)
    got = PrometheusMetrics(prom.url, DCGM).window("default", "chat", "c2", 1_700_000_000, 1_700_000_060)
    assert (got["requests"], got["errorRate"]) == (0, None)  # no request finished: no rates
    assert (got["gpuUtilization"], got["gpuMemoryMiB"]) == (0.83, 51234.5)  # the GPUs still say how busy


def test_the_comparison_gives_each_revision_its_gpu_figures_as_separate_keys(chat, viewer_client):  # noqa: F811
    body = viewer_client.get("/api/modelservings/default/chat/comparison/?window=300&bucket=60").json()
    assert body["resourcesSource"] == "simulated (the load now)"
    for entry in (body["stable"], body["canary"], *body["revisions"]):
        assert {"gpuUtilization", "gpuMemoryMiB", "gpus"} <= set(entry)
    # No instance of either revision is Serving on this cluster: no figure rather than a guess.
    assert body["canary"]["gpuUtilization"] is None and body["stable"]["gpuMemoryMiB"] is None


def test_the_simulated_gpu_of_a_revision_comes_from_its_serving_instances_load(monkeypatch, db):
    from rolloutui.services import capacity, gpu_revisions
    from tests.factories import modelserving, role

    view = {
        "instances": [
            {"revision": "c2", "role": "decode", "gate": "Serving", "inFlight": 8},
            {"revision": "c2", "role": "decode", "gate": "Serving", "inFlight": 16},
            {"revision": "c2", "role": "decode", "gate": "Loaded", "inFlight": 0},  # not serving: not counted
            {"revision": "s1", "role": "decode", "gate": "Serving", "inFlight": 0},
        ]
    }

    class Cluster:
        def get_modelserving(self, namespace, name):
            # The roles are read from the parsed manifest: a valid one, decode pods of 2 GPUs.
            return modelserving(name="chat", roles=[role("decode", gpus=2)])

    monkeypatch.setattr(gpu_revisions.cluster, "get_cluster", lambda: Cluster())
    monkeypatch.setattr(
        capacity, "_batching", lambda ns, name, v: ({"maxBatchSize": 16, "maxConcurrentSequences": 128}, [], "r1")
    )
    got = gpu_revisions.simulated("default", "chat", view)
    assert got["c2"] == {"gpuUtilization": 0.75, "gpuMemoryMiB": round((0.55 + 0.40 * 12 / 128) * 81920), "gpus": 4}
    assert got["s1"] == {"gpuUtilization": 0.0, "gpuMemoryMiB": round(0.55 * 81920), "gpus": 2}
