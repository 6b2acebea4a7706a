"""Token figures and paths in request records (the traffic contract's "Request records"): accepted
and bounded at ingestion, stored, summed per bucket, read back as TTFT / TPOT percentiles and
``mixedPaths`` by the analysis and the comparison, counted by revision pair for the Paths panel;
``ttft*`` checks count the requests still running without a first token by their age."""

from __future__ import annotations

import json
import math

import pytest

from controller.core.analysis import judge_window
from controller.core.canary import parse_canary
from controller.core.evidence import TTFT_EVIDENCE, judge_latency
from controller.core.latency import Sums, path_outcome
from controller.core.pathview import consistent_revisions
from controller.models import RequestAggregate, RequestRecord
from controller.records import store
from controller.records.figures import DatabaseMetrics, compare
from tests.records.test_api import ingester, post, record, token_client  # noqa: F401 (fixtures)

HOP_A = [{"role": "prefill", "pod": "p-0", "revision": "a"}, {"role": "decode", "pod": "d-0", "revision": "a"}]
HOP_AB = [{"role": "prefill", "pod": "p-0", "revision": "a"}, {"role": "decode", "pod": "d-1", "revision": "b"}]


def rec(i, *, revision="a", status="ok", started=None, finished=None, **tokens):
    began = 1000.0 + i if started is None else started
    return {
        "request_id": f"r{i}",
        "namespace": "default",
        "name": "ms",
        "revision": revision,
        "latency_ms": None if status in ("running", "timeout") else 100.0,
        "status": status,
        "feedback": None,
        "started": began,
        "finished": None if status == "running" else (began + 1.0 if finished is None else finished),
        **tokens,
    }


# -- ingestion -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_record_with_token_figures_and_a_path_is_stored_as_sent(ingester):  # noqa: F811
    body = record(
        1,
        ttftMs=180.5,
        tpotMs=32.0,
        inputTokens=812,
        outputTokens=240.0,
        path=[
            {"role": "prefill", "pod": "chat-0-prefill-0", "revision": "5f8d2c42cf"},
            {"role": "decode", "revision": "5f8d2c42cf"},
        ],
        mixed=False,
    )
    resp = post(token_client(ingester), [body])
    assert resp.status_code == 201, resp.content
    row = RequestRecord.objects.get()
    assert (row.ttft_ms, row.tpot_ms, row.input_tokens, row.output_tokens, row.mixed) == (180.5, 32.0, 812, 240, False)
    assert row.path[1] == {"role": "decode", "revision": "5f8d2c42cf"} and row.path_error == ""
    agg = RequestAggregate.objects.get()
    assert agg.output_tokens == 240 and agg.paths == {"5f8d2c42cf/5f8d2c42cf": {"consistent": 1}}


BAD = [
    ("a negative time to first token is refused", {"ttftMs": -1}, "ttftMs", "at least 0"),
    ("an infinite time per output token is refused", {"tpotMs": math.inf}, "tpotMs", "finite"),
    ("a time to first token over a day is refused", {"ttftMs": 1e12}, "ttftMs", "at most"),
    ("a fraction of a token is refused", {"outputTokens": 2.5}, "outputTokens", "whole number"),
    ("a token count given as text is refused", {"inputTokens": "12"}, "inputTokens", "must be a number"),
    ("too many input tokens are refused", {"inputTokens": 10**9}, "inputTokens", "at most"),
    ("mixed given as a string is refused", {"mixed": "yes"}, "mixed", "true or false"),
    ("a path that is not a list is refused", {"path": "prefill,decode"}, "path", "list of hops"),
    ("a hop without its revision is refused", {"path": [{"role": "prefill"}]}, "path", "revision is required"),
    (
        "a hop with an unknown field is refused",
        {"path": [{"role": "p", "revision": "a", "gpu": 1}]},
        "path",
        "unknown field",
    ),
    ("a path of more than 16 hops is refused", {"path": [{"role": "p", "revision": "a"}] * 17}, "path", "at most 16"),
    ("a hop revision with a slash is refused", {"path": [{"role": "p", "revision": "a/b"}]}, "path", "Kubernetes name"),
    ("an unknown path error is refused", {"pathError": "timeout"}, "pathError", "noRoute"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("over, field, words", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_token_figure_or_path_is_refused_naming_the_field_and_nothing_is_stored(ingester, over, field, words):  # noqa: F811
    client = token_client(ingester)
    raw = json.dumps([record(0), record(1, **over)], allow_nan=True)
    resp = client.post("/api/request-records/", data=raw, content_type="application/json")
    assert resp.status_code == 400, resp.content
    problems = resp.json()["records"]["1"]
    assert field in problems and words in " ".join(problems[field]), problems
    assert not RequestRecord.objects.exists()


# -- figures -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_ttft_and_tpot_percentiles_are_read_from_the_stored_sums_and_the_raw_edges_alike():
    # 100 requests, 1 a second from 1,000: TTFT i ms + 50, TPOT 20 ms (every tenth 80 ms).
    store.write_records(
        [rec(i, ttft_ms=50.0 + i, tpot_ms=80.0 if i % 10 == 0 else 20.0, output_tokens=100) for i in range(100)]
    )
    for start, end in ((1000.0, 1100.0), (1003.0, 1067.0)):
        got = DatabaseMetrics().window("default", "ms", "a", start, end)
        raw = Sums()
        for i in range(int(start) - 1000, int(end) - 1000):
            raw.add("ok", 100.0, None)
            raw.add_tokens(ttft_ms=50.0 + i, tpot_ms=80.0 if i % 10 == 0 else 20.0, output_tokens=100)
        want = raw.figures()
        for key in ("ttftP50Ms", "ttftP95Ms", "ttftP99Ms", "tpotP50Ms", "tpotP95Ms", "tpotP99Ms", "outputTokens"):
            assert got[key] == want[key], (start, end, key)
    whole = DatabaseMetrics().window("default", "ms", "a", 1000.0, 1100.0)
    assert whole["ttftP50Ms"] == 100.0 and whole["ttftP99Ms"] == 149.0  # bucket bounds, capped by the largest
    assert whole["tpotP50Ms"] == 20.0 and whole["tpotP95Ms"] == 80.0 and whole["outputTokens"] == 10_000


@pytest.mark.django_db
def test_tpot_counts_finished_answers_only_and_mixed_paths_are_counted():
    store.write_records(
        [
            rec(0, tpot_ms=30.0, path=HOP_A, mixed=False),
            rec(1, tpot_ms=900.0, status="timeout", path=HOP_AB, mixed=True),
            rec(2, status="error", path=HOP_AB, mixed=True, path_error="kvMismatch"),
            rec(3, status="error", path=[], path_error="noRoute"),
        ]
    )
    got = DatabaseMetrics().window("default", "ms", "a", 1000.0, 1010.0)
    assert got["tpotP99Ms"] == 30.0  # the timed-out request's 900 ms is not a time per token
    assert got["mixedPaths"] == 2
    assert RequestAggregate.objects.get().paths == {
        "a/a": {"consistent": 1},
        "a/b": {"mixed": 1, "kvMismatch": 1},
        "a/-": {"noRoute": 1},
    }


OUTCOMES = [
    ("a path of one revision is consistent", HOP_A, False, None, ("a/a", "consistent")),
    ("a path over two revisions is mixed", HOP_AB, True, None, ("a/b", "mixed")),
    ("a refused request has no hop", [], None, "noRoute", ("r/-", "noRoute")),
    ("a KV cache mismatch is named before mixed", HOP_AB, True, "kvMismatch", ("a/b", "kvMismatch")),
    ("a record that says nothing of a path is not counted", None, None, None, None),
]


@pytest.mark.parametrize("path, mixed, error, want", [o[1:] for o in OUTCOMES], ids=[o[0] for o in OUTCOMES])
def test_the_outcome_of_a_record_for_the_paths_panel(path, mixed, error, want):
    assert path_outcome(path, mixed, error, "r") == want


@pytest.mark.django_db
def test_the_comparison_gives_ttft_and_tpot_per_revision_and_per_bucket():
    store.write_records([rec(i, ttft_ms=100.0, tpot_ms=25.0) for i in range(30)])
    store.write_records(
        [rec(100 + i, revision="b", ttft_ms=400.0, tpot_ms=60.0, started=1000.0 + i) for i in range(30)]
    )
    got = compare("default", "ms", 1000.0, 1030.0, 10.0)
    assert got["revisions"]["a"]["ttftP95Ms"] == 100.0 and got["revisions"]["b"]["ttftP95Ms"] == 400.0
    assert got["revisions"]["b"]["tpotP95Ms"] == 60.0
    assert {p["tpotP95Ms"] for p in got["series"] if p["revision"] == "b"} == {60.0}


# -- analysis on TTFT ----------------------------------------------------------------------------


def analysis(metric, **check):
    raw = {
        "steps": [{"setPartition": 0}],
        "analysis": {"intervalSeconds": 30, "minRequests": 10, "metrics": [{"metric": metric, **check}]},
    }
    return parse_canary(
        raw, "spec.rolloutStrategy.canary", strategy_type="ServingGroupRollingUpdate", group_partition_set=False
    ).analysis


@pytest.mark.django_db
def test_a_canary_whose_running_requests_have_no_first_token_past_the_limit_fails_its_ttft_check():
    # Stable: 40 finished, TTFT 200 ms. Canary: 36 finished with TTFT 200 ms and 4 still running for
    # 5 s without a first token: 4 of 40 are known to be above 1,000 ms, p95 allows 2 -> Fail.
    store.write_records([rec(i, revision="stable", ttft_ms=200.0) for i in range(40)])
    store.write_records([rec(100 + i, revision="canary", ttft_ms=200.0, started=1000.0 + i / 2) for i in range(36)])
    store.write_records([rec(200 + i, revision="canary", status="running", started=1020.0 + i) for i in range(4)])
    metrics = DatabaseMetrics()
    stable = metrics.window("default", "ms", "stable", 1000.0, 1030.0, at=1030.0)
    canary = metrics.window("default", "ms", "canary", 1000.0, 1030.0, at=1030.0)
    assert canary["started"] == 40 and canary[TTFT_EVIDENCE]["waiting"] == [7000.0, 8000.0, 9000.0, 10000.0]
    result = judge_window(analysis("ttftP95Ms", max=1000), 1000.0, 1030.0, "stable", "canary", stable, canary)
    assert result.verdict == "Fail" and result.failed == ("ttftP95Ms",)
    assert (
        "canary TTFT p95 is above the limit 1,000 ms: 4 of 40 requests took longer, 4 of them still unanswered"
        in result.reasons[0]
    )
    assert TTFT_EVIDENCE not in result.to_json()["figures"]["canary"]
    # The same requests younger than the limit are undecided, and a ratio to stable reads stable's p95.
    young = metrics.window("default", "ms", "canary", 1000.0, 1030.0, at=1023.5)
    assert judge_latency(analysis("ttftP95Ms", max=10_000).checks[0], young, stable)[0] == "Inconclusive"
    ratio = judge_window(
        analysis("ttftP95Ms", maxRatioToStable=1.5), 1000.0, 1030.0, "stable", "canary", stable, canary
    )
    assert ratio.verdict == "Fail" and "1.5x stable TTFT p95 200 ms" in ratio.reasons[0]


@pytest.mark.django_db
def test_ttft_and_tpot_checks_pass_on_a_canary_as_fast_as_stable_and_mixed_paths_fail_max_zero():
    for revision in ("stable", "canary"):
        store.write_records(
            [rec(i, revision=revision, ttft_ms=150.0, tpot_ms=20.0, path=HOP_A, mixed=False) for i in range(30)]
        )
    store.write_records([rec(99, revision="canary", ttft_ms=150.0, tpot_ms=20.0, path=HOP_AB, mixed=True)])
    m = DatabaseMetrics()
    stable, canary = (m.window("default", "ms", r, 1000.0, 1100.0) for r in ("stable", "canary"))
    for metric, check in (("ttftP99Ms", {"maxDeltaToStable": 50}), ("tpotP95Ms", {"maxRatioToStable": 1.2})):
        assert judge_window(analysis(metric, **check), 1000, 1100, "stable", "canary", stable, canary).verdict == "Pass"
    mixed = judge_window(analysis("mixedPaths", max=0), 1000, 1100, "stable", "canary", stable, canary)
    assert mixed.verdict == "Fail" and mixed.reasons == ("canary mixed-path requests 1 is above the limit 0",)


@pytest.mark.django_db
def test_records_without_token_figures_leave_a_ttft_check_without_data():
    store.write_records([rec(i, revision=r) for r in ("stable", "canary") for i in range(20)])
    m = DatabaseMetrics()
    stable, canary = (m.window("default", "ms", r, 1000.0, 1100.0) for r in ("stable", "canary"))
    got = judge_window(analysis("ttftP99Ms", max=500), 1000, 1100, "stable", "canary", stable, canary)
    assert got.verdict == "Inconclusive" and got.reasons == ("no canary TTFT p99 in this window",)


# -- paths per group -----------------------------------------------------------------------------

HASHES = {
    "a": {"prefill": "P1", "decode": "D1"},
    "b": {"prefill": "P2", "decode": "D1"},
    "c": {"prefill": "P3", "decode": "D3"},
}
GROUPS = [
    ("one revision in a group is a consistent path", [("prefill", "a"), ("decode", "a")], ["a"]),
    ("an unchanged decode serves the new prefill too", [("prefill", "b"), ("decode", "a")], ["b"]),
    ("a changed decode of another revision leaves no consistent path", [("prefill", "c"), ("decode", "a")], []),
    ("an instance that is not Ready is no hop", [("prefill", "a"), ("decode", "a!")], []),
]


@pytest.mark.parametrize("instances, want", [g[1:] for g in GROUPS], ids=[g[0] for g in GROUPS])
def test_which_revisions_a_group_has_a_consistent_path_for(instances, want):
    insts = [
        {"group": 0, "role": role, "revision": rev.rstrip("!"), "state": "Creating" if rev.endswith("!") else "Ready"}
        for role, rev in instances
    ]
    assert consistent_revisions(insts, ["prefill", "decode"], HASHES) == {0: want}


# -- the Paths panel's API -----------------------------------------------------------------------


@pytest.fixture
def pd(db, monkeypatch):
    """A prefill -> decode ModelServing ``pd`` on the embedded cluster, with records of four outcomes."""
    from rolloutui.services import cluster as cluster_service
    from tests.factories import modelserving, role
    from tests.live.helpers import ManualClock

    clock = ManualClock(1_700_000_600.0)
    monkeypatch.setattr(cluster_service, "get_clock", lambda: clock)
    c = cluster_service.get_cluster()
    c.create_modelserving(
        modelserving(name="pd", roles=[role("prefill"), role("decode")], traffic={"path": ["prefill", "decode"]})
    )
    c.create_modelserving(modelserving(name="plain", roles=[role("decode")]))
    ab = [{"role": "prefill", "revision": "a"}, {"role": "decode", "revision": "b"}]
    base = {"namespace": "default", "name": "pd", "revision": "a", "latency_ms": 90.0, "feedback": None}
    rows = []
    for i in range(60):
        began = 1_700_000_300.0 + i * 5
        kind = i % 4
        rows.append(
            {
                **base,
                "request_id": str(i),
                "status": "ok" if kind == 0 else "error",
                "started": began,
                "finished": began + 1,
                "path": []
                if kind == 3
                else ab
                if kind
                else [{"role": "prefill", "revision": "a"}, {"role": "decode", "revision": "a"}],
                "mixed": None if kind == 3 else kind != 0,
                "path_error": {2: "kvMismatch", 3: "noRoute"}.get(kind),
            }
        )
    store.write_records(rows)
    return clock


def test_the_paths_api_counts_requests_per_revision_pair_and_outcome(pd, viewer_client):
    resp = viewer_client.get("/api/modelservings/default/pd/paths/?window=300&bucket=60")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["path"] == ["prefill", "decode"] and body["reason"] is None
    assert body["totals"] == {"consistent": 15, "mixed": 15, "noRoute": 15, "kvMismatch": 15}
    assert {(p["pair"], p["first"], p["last"]) for p in body["series"]} == {
        ("a/a", "a", "a"),
        ("a/b", "a", "b"),
        ("a/-", "a", "-"),
    }
    assert [p["bucketStart"] for p in body["series"] if p["pair"] == "a/b"] == [
        1_700_000_300.0 + 60 * k for k in range(5)
    ]
    assert all(p["mixed"] == 3 and p["kvMismatch"] == 3 for p in body["series"] if p["pair"] == "a/b")
    assert isinstance(body["groups"], list)


def test_a_modelserving_without_a_path_has_no_paths_and_says_why(pd, viewer_client):
    body = viewer_client.get("/api/modelservings/default/plain/paths/").json()
    assert body["path"] == [] and body["series"] == [] and "no request path" in body["reason"]


@pytest.mark.parametrize(
    "query, field", [("window=abc", "window"), ("window=90000", "window"), ("window=60&bucket=120", "bucket")]
)
def test_a_bad_paths_window_is_named(pd, viewer_client, query, field):
    resp = viewer_client.get(f"/api/modelservings/default/pd/paths/?{query}")
    assert resp.status_code == 400 and field in resp.json()


def test_the_paths_of_an_unknown_modelserving_are_404(pd, viewer_client):
    assert viewer_client.get("/api/modelservings/default/nope/paths/").status_code == 404


def test_a_refused_request_counts_on_the_paths_panel_and_not_as_an_error_of_any_revision(db):
    """A request refused for want of a consistent path (noRoute) reached no revision: the demo's
    first seconds, before any pod was Ready, read as the stable revision's errors beside a canary."""
    from controller.models import RequestAggregate
    from controller.records.figures import _window_sums
    from controller.records.store import write_records

    base = {"namespace": "default", "name": "refusals", "revision": "aaa", "feedback": None}
    served = {
        **base,
        "status": "ok",
        "latency_ms": 100.0,
        "started": 1000.0,
        "finished": 1001.0,
        "path": [
            {"role": "prefill", "pod": "p-0", "revision": "aaa"},
            {"role": "decode", "pod": "d-0", "revision": "aaa"},
        ],
        "mixed": False,
    }
    refused = {
        **base,
        "status": "error",
        "latency_ms": None,
        "started": 1000.5,
        "finished": 1000.5,
        "path": [],
        "mixed": False,
        "path_error": "noRoute",
    }
    write_records([{**served, "request_id": f"ok-{i}"} for i in range(3)] + [{**refused, "request_id": "refused"}])
    (bucket,) = RequestAggregate.objects.filter(name="refusals")
    assert (bucket.requests, bucket.errors) == (3, 0)
    assert bucket.paths == {"aaa/aaa": {"consistent": 3}, "aaa/-": {"noRoute": 1}}
    figures = _window_sums("default", "refusals", 1000.0, 1002.0)["aaa"].figures()  # raw records: a part bucket
    assert figures["requests"] == 3 and figures["errorRate"] == 0.0
