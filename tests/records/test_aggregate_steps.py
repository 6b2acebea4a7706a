"""The named steps of ``store._add_to_aggregates``: the stored buckets of a batch, a new bucket, a
stored bucket plus the batch's sums, and path counts added pair by pair."""

from __future__ import annotations

import orjson
import pytest
from django.db import connection

from controller.core.latency import Sums
from controller.models import RequestAggregate
from controller.records import store

STORED = {
    "requests": 10,
    "errors": 1,
    "timeouts": 0,
    "interrupted": 2,
    "feedback_sum": 4.5,
    "feedback_count": 5,
    "latency_max": 900.0,
    "histogram": '{"3": 10}',
    "duration_max": None,
    "duration_histogram": None,
    "ttft_max": 80.0,
    "ttft_histogram": b'{"1": 4}',
    "tpot_max": None,
    "tpot_histogram": {"2": 1},
    "mixed": None,
    "output_tokens": 300,
    "paths": '{"A/B": {"ok": 2}}',
}


def _row(**changes) -> tuple:
    """A stored row as ``_stored_buckets`` reads it: ``(id, revision, bucket_start, *columns)``."""
    columns = STORED | changes
    return (7, "r1", 120.0, *(columns[c] for c in store._AGG_COLUMNS))


def _sums(**fields) -> Sums:
    s = Sums()
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def _merged(row: tuple, s: Sums) -> dict:
    """``_merged_bucket``'s parameters by column (JSON columns decoded), and the id last."""
    *values, pk = store._merged_bucket(row, s)
    out = dict(zip(store._AGG_COLUMNS, values, strict=True))
    return {c: orjson.loads(v) if c in store._AGG_JSON else v for c, v in out.items()} | {"id": pk}


@pytest.mark.parametrize(
    ("sums", "expected"),
    [
        pytest.param(
            _sums(requests=2, errors=1, timeouts=1, interrupted=0, feedback_sum=1.5, feedback_count=2),
            {"requests": 12, "errors": 2, "timeouts": 1, "interrupted": 2, "feedback_sum": 6.0, "feedback_count": 7},
            id="counts and sums add to the stored ones",
        ),
        pytest.param(
            _sums(largest=1200.0, longest=5000.0, ttft_largest=50.0),
            {"latency_max": 1200.0, "duration_max": 5000.0, "ttft_max": 80.0, "tpot_max": None},
            id="each maximum is the larger of the stored and the new one and none stays none",
        ),
        pytest.param(
            _sums(hist={3: 1, 4: 1}, durations={9: 2}, ttft={1: 1}, tpot={2: 3}),
            {
                "histogram": {"3": 11, "4": 1},
                "duration_histogram": {"9": 2},
                "ttft_histogram": {"1": 5},
                "tpot_histogram": {"2": 4},
            },
            id="histograms add bin by bin whether stored as text bytes a decoded object or nothing",
        ),
        pytest.param(
            _sums(mixed=3, output_tokens=50),
            {"mixed": 3, "output_tokens": 350},
            id="token and mixed path counts add and a missing stored count is zero",
        ),
        pytest.param(
            _sums(paths={"A/B": {"ok": 1, "error": 1}, "B/A": {"ok": 1}}),
            {"paths": {"A/B": {"ok": 3, "error": 1}, "B/A": {"ok": 1}}},
            id="path counts add pair by pair and outcome by outcome",
        ),
    ],
)
def test_a_stored_bucket_plus_a_batchs_sums_is_what_the_update_writes(sums, expected):
    merged = _merged(_row(), sums)
    assert {c: merged[c] for c in expected} == expected
    assert merged["id"] == 7


@pytest.mark.parametrize(
    ("stored", "added", "merged"),
    [
        pytest.param({}, {"A/B": {"ok": 1}}, {"A/B": {"ok": 1}}, id="a new pair is counted from zero"),
        pytest.param({"A/B": {"ok": 2}}, {}, {"A/B": {"ok": 2}}, id="a stored pair nobody added to stays"),
        pytest.param(
            {"A/B": {"ok": 2}}, {"A/B": {"ok": 1, "error": 1}}, {"A/B": {"ok": 3, "error": 1}}, id="outcomes add"
        ),
    ],
)
def test_path_counts_merge_pair_by_pair(stored, added, merged):
    assert store._merge_paths(stored, added) == merged


def test_merging_paths_leaves_the_stored_counts_unchanged():
    stored = {"A/B": {"ok": 2}}
    store._merge_paths(stored, {"A/B": {"ok": 1}})
    assert stored == {"A/B": {"ok": 2}}


def test_a_new_bucket_holds_the_batchs_sums_with_histogram_bins_as_json_keys():
    s = _sums(requests=3, errors=1, hist={3: 2, 4: 1}, largest=700.0, paths={"A/B": {"ok": 3}})
    bucket = store._new_bucket(("default", "ms", "r1", 120.0), s)
    got = (bucket.namespace, bucket.name, bucket.revision, bucket.bucket_start, bucket.requests, bucket.errors)
    assert got == ("default", "ms", "r1", 120.0, 3, 1)
    assert (bucket.histogram, bucket.latency_max, bucket.paths) == ({"3": 2, "4": 1}, 700.0, {"A/B": {"ok": 3}})


@pytest.mark.django_db
def test_the_stored_buckets_of_a_batch_are_exactly_its_keys_of_one_modelserving():
    for name, revision, start in [("ms", "r1", 10.0), ("ms", "r1", 20.0), ("ms", "r2", 10.0), ("other", "r1", 10.0)]:
        RequestAggregate.objects.create(namespace="default", name=name, revision=revision, bucket_start=start)
    keys = [("default", "ms", "r1", 10.0), ("default", "ms", "r2", 10.0), ("default", "ms", "r2", 30.0)]
    with connection.cursor() as cursor:
        found = store._stored_buckets(cursor, "default", "ms", keys, lock=False)
    # r1 at 20 s is not asked for, the other ModelServing's bucket is not its, r2 at 30 s is not stored.
    assert sorted(found) == keys[:2]
    assert all(len(row) == 3 + len(store._AGG_COLUMNS) for row in found.values())
