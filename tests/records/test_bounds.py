"""Every figure of a request record is bounded when it arrives (finite, not negative, at most a sane
maximum), and a figure that is not finite anyway (rows stored before the bounds, a provider's
answer) is no data: the comparison shows nothing for it and never answers 500."""

from __future__ import annotations

import pytest

from controller.models import RequestAggregate, RequestRecord
from tests.records.test_api import chat, ingester, post, record, token_client  # noqa: F401
from tests.records.test_prometheus import TEMPLATES, prom  # noqa: F401

pytestmark = pytest.mark.django_db

DAY_MS = 24 * 3600 * 1000


@pytest.mark.parametrize(
    "bad, field, words",
    [
        ({"latencyMs": 1e308}, "latencyMs", "at most 86400000"),
        ({"latencyMs": DAY_MS + 1}, "latencyMs", "at most 86400000"),
        ({"feedback": 1e308}, "feedback", "at most 1000000"),
        ({"feedback": -1}, "feedback", "at least 0"),
        ({"started": 1e308, "finished": 1e308}, "started", "before the year 10000"),
        ({"finished": 1e300}, "finished", "before the year 10000"),
    ],
)
def test_a_figure_out_of_range_is_refused_naming_the_record_and_the_field(ingester, bad, field, words):  # noqa: F811
    batch = [record(i) for i in range(3)]
    batch[1] = record(1, **bad)
    resp = post(token_client(ingester), batch)
    assert resp.status_code == 400, resp.content
    errors = resp.json()["records"]
    assert list(errors) == ["1"] and field in errors["1"], errors
    assert words in errors["1"][field][0]
    assert not RequestRecord.objects.exists() and not RequestAggregate.objects.exists()


def test_the_largest_figures_allowed_are_stored(ingester):  # noqa: F811
    resp = post(token_client(ingester), [record(0, latencyMs=DAY_MS, feedback=1_000_000)])
    assert resp.status_code == 201, resp.content


def test_stored_sums_that_overflowed_show_as_no_data_in_the_comparison(chat, viewer_client):  # noqa: F811
    # Rows from before the bounds: two huge feedbacks sum to infinity, a latency with no recorded
    # maximum sits in the overflow bucket (an infinite p99).
    RequestAggregate.objects.filter(revision="stable1", bucket_start__gte=1_700_000_300.0).update(
        feedback_sum=float("inf"), feedback_count=2, histogram={"999": 10}, latency_max=None
    )
    resp = viewer_client.get("/api/modelservings/default/chat/comparison/?window=300&bucket=60")
    assert resp.status_code == 200, resp.content
    stable = resp.json()["stable"]
    assert stable["feedbackMean"] is None and stable["latencyP99Ms"] is None


def test_an_infinite_prometheus_quantile_is_no_data_for_the_analysis_never_a_pass(prom):  # noqa: F811
    # histogram_quantile answers +Inf when the quantile lies in the +Inf bucket: a canary slower than
    # the highest bucket. Read as "no figure", a max check on it held and the window passed.
    from controller.core.analysis import INCONCLUSIVE, judge_window
    from controller.core.canary import Check
    from controller.records.prometheus import PrometheusMetrics
    from tests.core.test_analysis import analysis

    prom.set("requests", "canary2", 500)
    prom.set("errorRate", "canary2", 0.0)
    prom.set("latencyP99Ms", "canary2", "+Inf")
    got = PrometheusMetrics(prom.url, TEMPLATES).window("default", "chat", "canary2", 1_700_000_000, 1_700_000_060)
    assert got["requests"] == 500 and got["latencyP99Ms"] == float("inf")
    check = Check("latencyP99Ms", "max", 2000.0)
    stable = {**got, "latencyP99Ms": 900.0}
    assert judge_window(analysis(check), 0, 60, "stable1", "canary2", stable, got).verdict == INCONCLUSIVE
