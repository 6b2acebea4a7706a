"""Request records: percentiles from fixed-boundary histograms, sums per revision per bucket, the
database MetricsPort's windows (exact at any edges) and the bounded retention."""

from __future__ import annotations

import random

import pytest

from controller.core import latency
from controller.core.latency import Sums, bucket_of, figures_of, percentile
from controller.models import RequestAggregate, RequestRecord
from controller.records import store
from controller.records.figures import DatabaseMetrics, compare
from controller.simcluster.routing import _percentile


def rec(started, *, revision="r1", status="ok", latency=100.0, feedback=None, name="ms", request_id="x"):
    return {
        "request_id": request_id,
        "namespace": "default",
        "name": name,
        "revision": revision,
        "latency_ms": latency,
        "status": status,
        "feedback": feedback,
        "started": started,
        "finished": started + 1.0,
    }


@pytest.mark.parametrize(
    "latency_ms, bucket",
    [
        (0, 0),
        (3, 0),
        (5, 0),
        (5.1, 1),
        (100, 19),
        (250, 49),
        (251, 50),
        (60000, len(latency.UPPER) - 1),
        (70000, len(latency.UPPER)),
    ],
)
def test_a_latency_falls_in_the_bucket_whose_upper_bound_is_the_first_at_or_above_it(latency_ms, bucket):
    assert bucket_of(latency_ms) == bucket


@pytest.mark.parametrize(
    "histogram, q, expected",
    [
        # the module docstring's worked example: 150 in (100,105], 48 in (240,245], 2 in (900,925]
        ({20: 150, 48: 48, 91: 2}, 0.50, 105.0),
        ({20: 150, 48: 48, 91: 2}, 0.99, 245.0),
        ({20: 150, 48: 48, 91: 2}, 0.995, 925.0),
        ({}, 0.5, None),
        ({0: 1}, 0.99, 5.0),
    ],
)
def test_a_percentile_is_the_upper_bound_of_the_bucket_holding_the_nearest_rank(histogram, q, expected):
    assert latency.UPPER[20] == 105 and latency.UPPER[48] == 245 and latency.UPPER[91] == 925
    assert percentile(histogram, q) == expected


def test_histogram_percentiles_are_within_one_bucket_width_of_the_raw_nearest_rank():
    rng = random.Random(7)
    values = [rng.lognormvariate(5.5, 0.6) for _ in range(5000)]
    figures = figures_of(("ok", v, None) for v in values)
    ordered = sorted(values)
    for key, q in latency.QUANTILES.items():
        raw = ordered[max(1, -(-int(q * 5000 * 1000) // 1000)) - 1]
        got = figures[key]
        assert raw <= got <= raw + latency.bucket_width(bucket_of(raw)), (key, raw, got)
    assert abs(_percentile(ordered, 0.99) - figures["latencyP99Ms"]) <= latency.bucket_width(bucket_of(ordered[-50]))


@pytest.mark.parametrize(
    "records, expected",
    [
        ([], {"requests": 0, "errorRate": None, "timeoutRate": None, "latencyP99Ms": None, "feedbackMean": None}),
        (
            [("ok", 100, 1.0)] * 8 + [("error", 10, 0.0), ("timeout", None, None)],
            {"requests": 10, "errorRate": 0.1, "timeoutRate": 0.1, "latencyP50Ms": 100.0, "feedbackMean": 0.888889},
        ),
        (
            [("interrupted", None, None)] * 2 + [("ok", 42, None)] * 2,
            {"requests": 4, "errorRate": 0.0, "timeoutRate": 0.0, "latencyP99Ms": 42.0, "feedbackMean": None},
        ),
    ],
    ids=["nothing", "errors-timeouts-feedback", "interrupted-count-as-requests-without-latency"],
)
def test_figures_count_every_finished_request_and_time_only_answered_ones(records, expected):
    got = figures_of(records)
    for key, value in expected.items():
        assert got[key] == value, key


@pytest.mark.django_db
def test_records_are_summed_per_revision_per_ten_second_bucket():
    store.write_records([rec(1003.0), rec(1009.9, status="error", latency=250), rec(1010.0), rec(1004, revision="r2")])
    store.write_records([rec(1005.0, status="timeout", latency=None)])
    rows = {
        (a.revision, a.bucket_start): (a.requests, a.errors, a.timeouts, a.histogram)
        for a in RequestAggregate.objects.all()
    }
    assert rows == {
        ("r1", 1000.0): (3, 1, 1, {"19": 1, "49": 1}),
        ("r1", 1010.0): (1, 0, 0, {"19": 1}),
        ("r2", 1000.0): (1, 0, 0, {"19": 1}),
    }
    assert RequestRecord.objects.count() == 5


@pytest.mark.django_db
def test_a_window_at_any_edges_equals_the_figures_of_the_raw_records_in_it():
    rng = random.Random(3)
    records = []
    for _ in range(3000):
        t = 1000 + rng.random() * 300
        status = rng.choices(["ok", "error", "timeout", "interrupted"], [85, 10, 3, 2])[0]
        lat = None if status in ("timeout", "interrupted") else rng.uniform(20, 2000)
        records.append(rec(t, revision=rng.choice(["a", "b"]), status=status, latency=lat, feedback=rng.random()))
    store.write_records(records)
    metrics = DatabaseMetrics()
    for start, end in [(1000, 1300), (1003.7, 1188.2), (1011, 1019), (1005, 1015), (1290, 1400), (0, 10)]:
        for revision in ("a", "b"):
            expected = figures_of(
                (r["status"], r["latency_ms"], r["feedback"])
                for r in records
                if r["revision"] == revision and start <= r["started"] < end
            )
            got = metrics.window("default", "ms", revision, start, end)
            assert got["requests"] == expected["requests"]
            for key in ("errorRate", "timeoutRate", "latencyP50Ms", "latencyP95Ms", "latencyP99Ms"):
                assert got[key] == expected[key], (start, end, revision, key)
            if expected["feedbackMean"] is not None:
                assert got["feedbackMean"] == pytest.approx(expected["feedbackMean"], abs=1e-6)


@pytest.mark.django_db
def test_the_comparison_gives_each_revision_the_same_window_and_a_series_per_bucket():
    store.write_records([rec(1000 + i, revision="old", latency=100) for i in range(60)])
    store.write_records([rec(1030 + i, revision="new", status="error" if i % 5 == 0 else "ok") for i in range(30)])
    got = compare("default", "ms", 1000, 1060, 30)
    assert got["revisions"]["old"]["requests"] == 60
    assert got["revisions"]["new"]["requests"] == 30
    assert got["revisions"]["new"]["errorRate"] == 0.2
    assert [(p["revision"], p["bucketStart"], p["requests"]) for p in got["series"]] == [
        ("new", 1030.0, 30),
        ("old", 1000.0, 30),
        ("old", 1030.0, 30),
    ]


@pytest.mark.django_db
def test_cleanup_deletes_records_and_sums_older_than_their_retention_only():
    store.write_records([rec(1000.0), rec(5000.0), rec(9000.0)])
    deleted = store.cleanup(10_000.0, records_seconds=4_000, aggregates_seconds=8_000)
    # records finished before 6,000 go (1001 and 5001); sums of buckets before 2,000 go (1000).
    assert deleted == {"records": 2, "aggregates": 1}
    assert list(RequestRecord.objects.values_list("started", flat=True)) == [9000.0]
    assert sorted(RequestAggregate.objects.values_list("bucket_start", flat=True)) == [5000.0, 9000.0]


@pytest.mark.django_db
def test_a_sum_merged_from_stored_rows_equals_the_sum_of_its_records():
    sums = Sums()
    sums.add("ok", 12.0, None, 1000.0)
    sums.add("error", 4000.0, 0.5, 1000.0)
    store.write_records([rec(1000, latency=12.0), rec(1001, status="error", latency=4000.0, feedback=0.5)])
    got = DatabaseMetrics().window("default", "ms", "r1", 1000, 1010)
    assert got.pop("started") == 2 and got.pop("evidence")["waiting"] == []  # nothing still running
    assert got == sums.figures()


@pytest.mark.django_db
def test_the_periodic_cleanup_uses_the_retention_settings_and_the_controllers_clock(settings, monkeypatch):
    from controller.runtime import periodic
    from controller.tasks import register_periodic_tasks
    from tests.live.helpers import ManualClock

    settings.ROLLOUTUI_RECORDS_RETENTION_SECONDS = 600
    settings.ROLLOUTUI_AGGREGATES_RETENTION_SECONDS = 3600
    monkeypatch.setattr(periodic, "get_clock", lambda: ManualClock(10_000.0))
    store.write_records([rec(5000.0), rec(9000.0), rec(9900.0)])
    assert periodic.cleanup_records() == {"records": 2, "aggregates": 1}

    class App:
        class conf:
            beat_schedule = None

    register_periodic_tasks(App)
    assert App.conf.beat_schedule["rolloutui-cleanup-records"]["task"] == "controller.tasks.cleanup_records"


AGGREGATE_COLUMNS = (
    "revision",
    "bucket_start",
    "requests",
    "errors",
    "timeouts",
    "interrupted",
    "feedback_sum",
    "feedback_count",
    "latency_max",
    "histogram",
    "duration_max",
    "duration_histogram",
    "ttft_max",
    "ttft_histogram",
    "tpot_max",
    "tpot_histogram",
    "mixed",
    "output_tokens",
    "paths",
)


def _mixed_records(n):
    rng = random.Random(5)
    hops = ([{"role": "p", "revision": "r1"}, {"role": "d", "revision": "r2"}], None)
    out = []
    for i in range(n):
        started = 1000.0 + rng.random() * 120
        status = rng.choice(["ok", "ok", "ok", "error", "timeout", "interrupted"])
        out.append(
            rec(started, revision=rng.choice(["r1", "r2"]), status=status, request_id=f"q{i}")
            | {
                "latency_ms": None if status == "timeout" else round(rng.uniform(5, 5000), 1),
                "feedback": rng.choice([None, round(rng.random(), 3)]),
                "finished": started + rng.uniform(0.1, 30),
                "ttft_ms": rng.choice([None, rng.uniform(10, 900)]),
                "tpot_ms": rng.choice([None, rng.uniform(5, 80)]),
                "output_tokens": rng.choice([None, rng.randrange(1, 900)]),
                "path": rng.choice(hops),
                "mixed": rng.choice([None, True, False]),
            }
        )
    return out


def _stored_sums():
    rows = RequestAggregate.objects.order_by("revision", "bucket_start").values_list(*AGGREGATE_COLUMNS)
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in rows]


@pytest.mark.django_db
def test_sums_added_batch_by_batch_to_stored_buckets_equal_the_sums_written_at_once():
    records = _mixed_records(600)
    store.write_records(records)
    at_once = _stored_sums()
    RequestAggregate.objects.all().delete()
    RequestRecord.objects.all().delete()
    for i in range(0, len(records), 70):
        store.write_records(records[i : i + 70])
    assert RequestRecord.objects.count() == len(records)
    assert _stored_sums() == at_once
    assert len(at_once) == 2 * 12  # two revisions over twelve 10 s buckets: every bucket was updated
