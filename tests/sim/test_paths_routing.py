"""Requests through roles: the consistency rule, revision-affine and blind routing, token figures."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.spec import Traffic
from controller.simcluster import paths, routing, weights
from controller.simcluster.config import ClusterConfig, ImageBehaviour, Span
from controller.simcluster.config import Traffic as Load

ROLES = ("prefill", "decode")


def _revisions(table: dict[str, dict[str, str]]) -> paths.Revisions:
    """``{revision: {role: role template hash}}`` -> what the router knows of the revisions."""
    compat: dict[tuple[str, str], set[str]] = {}
    for rev, roles in table.items():
        for role, rhash in roles.items():
            compat.setdefault((role, rhash), set()).add(rev)
    numbers = {rev: i + 1 for i, rev in enumerate(table)}
    return paths.Revisions({k: frozenset(v) for k, v in compat.items()}, numbers)


def _pod(name, role, revision, rhash, group=0, image="engine:v1", uid=None):
    return {
        "metadata": {
            "name": name,
            "uid": uid or f"uid-{name}",
            "labels": {
                naming.LABEL_ROLE: role,
                naming.LABEL_REVISION: revision,
                naming.LABEL_ROLE_TEMPLATE_HASH: rhash,
                naming.LABEL_GROUP_ORDINAL: str(group),
                naming.LABEL_POD_INDEX: "0",
            },
        },
        "spec": {"containers": [{"name": "engine", "image": image}]},
    }


# Revision A: prefill p1, decode d1. B changes prefill only (decode d1 equal in A and B). C changes
# decode only, from B (prefill p2 equal in B and C).
HISTORY = {
    "A": {"prefill": "p1", "decode": "d1"},
    "B": {"prefill": "p2", "decode": "d1"},
    "C": {"prefill": "p2", "decode": "d2"},
}


@pytest.mark.parametrize(
    ("prefill", "decode", "consistent_with"),
    [
        (("A", "p1"), ("A", "d1"), {"A"}),  # both from A
        (("B", "p2"), ("A", "d1"), {"B"}),  # decode unchanged in B: a decode pod made from A serves B
        (("A", "p1"), ("B", "d1"), {"A"}),  # ... and a decode pod made from B serves A
        (("B", "p2"), ("C", "d2"), {"C"}),  # prefill unchanged in C: B's prefill serves C
        (("B", "p2"), ("B", "d1"), {"B"}),
        (("A", "p1"), ("C", "d2"), set()),  # A's prefill, C's decode: mixed
        (("C", "p2"), ("A", "d1"), {"B"}),  # C's prefill template is B's, A's decode template too
    ],
)
def test_a_path_is_consistent_with_the_revisions_every_hop_template_is_equal_in(prefill, decode, consistent_with):
    revs = _revisions(HISTORY)
    hops = [_pod("p", "prefill", *prefill), _pod("d", "decode", *decode)]
    assert paths.consistent_revisions(paths.compatible(p, revs) for p in hops) == frozenset(consistent_with)


def test_an_unchanged_role_is_compatible_with_both_revisions_and_a_changed_one_only_with_its_own():
    revs = _revisions(HISTORY)
    assert paths.compatible(_pod("d", "decode", "A", "d1"), revs) == {"A", "B"}
    assert paths.compatible(_pod("p", "prefill", "A", "p1"), revs) == {"A"}


def test_a_pod_of_a_revision_no_longer_stored_is_still_compatible_with_its_own():
    assert paths.compatible(_pod("p", "prefill", "Z", "zz"), _revisions(HISTORY)) == {"Z"}


def _table(pods, routing_="revisionAffine", scope="group", history=HISTORY):
    return paths.PathTable(Traffic(ROLES, scope, routing_), pods, _revisions(history))


def test_affine_routing_refuses_a_request_when_no_consistent_path_exists():
    pods = [_pod("p-a", "prefill", "A", "p1"), _pod("d-c", "decode", "C", "d2")]
    assert _table(pods).choose(lambda p: 0) is None


def test_blind_routing_sends_the_same_request_down_a_mixed_path_and_says_where_it_broke():
    pods = [_pod("p-a", "prefill", "A", "p1"), _pod("d-c", "decode", "C", "d2")]
    table = _table(pods, "blind")
    choice = table.choose(lambda p: 0)
    assert choice.mixed
    assert choice.first_break(table.compat_of) == ("A", "C")


def test_affine_routing_starts_only_where_a_path_can_be_completed_even_when_that_pod_is_busier():
    pods = [
        _pod("p-a", "prefill", "A", "p1"),  # idle, but no decode of A in the group
        _pod("p-c", "prefill", "C", "p2"),  # busy
        _pod("d-c", "decode", "C", "d2"),
    ]
    busy = {"p-a": 0, "p-c": 5, "d-c": 0}
    choice = _table(pods).choose(lambda p: busy[p["metadata"]["name"]])
    assert [p["metadata"]["name"] for p in choice.pods] == ["p-c", "d-c"]
    assert choice.revision == "C"


def test_scope_group_keeps_hops_in_the_first_hops_group_and_scope_any_crosses_groups():
    pods = [
        _pod("p0", "prefill", "A", "p1", group=0),
        _pod("d0", "decode", "A", "d1", group=0),
        _pod("d1", "decode", "A", "d1", group=1),
    ]
    busy = {"p0": 0, "d0": 3, "d1": 0}
    in_group = _table(pods).choose(lambda p: busy[p["metadata"]["name"]])
    across = _table(pods, scope="any").choose(lambda p: busy[p["metadata"]["name"]])
    assert [p["metadata"]["name"] for p in in_group.pods] == ["p0", "d0"]
    assert [p["metadata"]["name"] for p in across.pods] == ["p0", "d1"]


def test_a_path_of_an_unchanged_first_role_is_counted_under_the_newest_revision_it_is_consistent_with():
    # Decode changed in C, prefill did not (B's prefill template): B's prefill -> C's decode is C's.
    pods = [_pod("p-b", "prefill", "B", "p2"), _pod("d-c", "decode", "C", "d2")]
    assert _table(pods).choose(lambda p: 0).revision == "C"


# -- the property: affine never mixes, never refuses while a consistent path exists ------------------

_pod_strategy = st.tuples(st.sampled_from(ROLES), st.sampled_from(["A", "B", "C"]), st.integers(0, 2))


@settings(max_examples=300, deadline=None)
@given(
    pods=st.lists(_pod_strategy, max_size=10),
    scope=st.sampled_from(["group", "any"]),
    busy=st.lists(st.integers(0, 4), min_size=10, max_size=10),
)
def test_affine_routing_never_mixes_and_never_refuses_while_a_consistent_path_exists(pods, scope, busy):
    objs = [_pod(f"pod-{i}", role, rev, HISTORY[rev][role], group=group) for i, (role, rev, group) in enumerate(pods)]
    load = {p["metadata"]["name"]: busy[i] for i, p in enumerate(objs)}
    table = _table(objs, scope=scope)
    revs = _revisions(HISTORY)
    # Brute force: every prefill x decode pair in scope, consistent or not.
    exists = any(
        (
            scope == "any"
            or a["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL]
            == b["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL]
        )
        and paths.consistent_revisions([paths.compatible(a, revs), paths.compatible(b, revs)])
        for a, b in itertools.product(
            [p for p in objs if p["metadata"]["labels"][naming.LABEL_ROLE] == "prefill"],
            [p for p in objs if p["metadata"]["labels"][naming.LABEL_ROLE] == "decode"],
        )
    )
    choice = table.choose(lambda p: load[p["metadata"]["name"]])
    if not exists:
        assert choice is None
        return
    assert choice is not None
    assert [paths.role_of(p) for p in choice.pods] == list(ROLES)
    assert not choice.mixed
    assert choice.revisions == paths.consistent_revisions(paths.compatible(p, revs) for p in choice.pods)
    if scope == "group":
        assert len({paths.group_of(p) for p in choice.pods}) == 1


# -- token figures and KV formats ---------------------------------------------------------------------


def _config(**images):
    return ClusterConfig(images={name: ImageBehaviour(**spec) for name, spec in images.items()})


def test_a_request_with_token_figures_lasts_ttft_plus_output_tokens_times_tpot():
    config = _config(
        **{
            "engine:v1": {"ttft_ms": Span.fixed(100), "tpot_ms": Span.fixed(99)},  # the prefill image
            "engine:v2": {"ttft_ms": Span.fixed(999), "tpot_ms": Span.fixed(20)},  # the decode image
        }
    )
    pods = [_pod("p", "prefill", "A", "p1", image="engine:v1"), _pod("d", "decode", "A", "d1", image="engine:v2")]
    load = Load(rps=1, duration=Span.fixed(1), input_tokens=Span.fixed(500), output_tokens=Span.fixed(50))
    choice = paths.Choice(pods, frozenset({"A"}), "A")
    req = routing.send_path(1, 10.0, None, choice, load, config, random.Random(0))
    # ttft from the first hop's image, tpot from the last hop's: 0.1 s + 50 x 20 ms = 1.1 s.
    assert (req.ttft_ms, req.tpot_ms, req.input_tokens, req.output_tokens) == (100, 20, 500, 50)
    assert req.busy == pytest.approx(1.1)
    assert req.hop_busy == pytest.approx((0.1, 1.1))
    assert req.answer == routing.OK
    record = req.record()
    assert record["path"] == [
        {"role": "prefill", "pod": "p", "revision": "A"},
        {"role": "decode", "pod": "d", "revision": "A"},
    ]
    assert (record["ttftMs"], record["tpotMs"], record["mixed"]) == (100, 20, False)


def test_without_token_figures_a_path_request_lasts_its_drawn_duration_and_its_latency_is_its_ttft():
    config = _config(**{"engine:v1": {"latency_ms": Span.fixed(150)}})
    pods = [_pod("p", "prefill", "A", "p1"), _pod("d", "decode", "A", "d1")]
    req = routing.send_path(
        1, 0.0, 7.5, paths.Choice(pods, frozenset({"A"}), "A"), Load(1, Span.fixed(7.5)), config, random.Random(0)
    )
    assert (req.latency_ms, req.ttft_ms, req.tpot_ms, req.output_tokens) == (150, 150, None, None)
    assert req.hop_busy == pytest.approx((0.15, 7.5))


def test_hops_that_declare_different_kv_formats_fail_with_kv_mismatch_at_the_first_token():
    config = _config(
        **{
            "engine:v1": {"kv_format": "a", "ttft_ms": Span.fixed(100)},
            "engine:v2": {"kv_format": "b"},
        }
    )
    pods = [_pod("p", "prefill", "A", "p1", image="engine:v1"), _pod("d", "decode", "C", "d2", image="engine:v2")]
    req = routing.send_path(
        1, 0.0, 5.0, paths.Choice(pods, frozenset(), "A"), Load(1, Span.fixed(5)), config, random.Random(0)
    )
    assert (req.answer, req.path_error, req.mixed) == (routing.ERROR, paths.KV_MISMATCH, True)
    assert req.hop_busy == pytest.approx((0.1, 0.1))


def test_an_undeclared_kv_format_agrees_with_any():
    assert not paths.kv_mismatch(["a", None, "a"])
    assert paths.kv_mismatch(["a", "b"])


def test_the_summary_counts_paths_and_mixed_pairs_only_when_requests_went_down_paths():
    plain = routing.Request(1, 0.0, "p", "u", "A", 100.0, 1.0, result=routing.OK, end=1.0)
    assert "paths" not in routing.summary([plain])
    assert "ttftP50" not in routing.summary([plain])["byRevision"]["A"]
    hops = (("prefill", "p", "u", "A"), ("decode", "d", "v", "A"))
    ok = routing.Request(
        1,
        0.0,
        "p",
        "u",
        "A",
        100.0,
        1.0,
        result=routing.OK,
        end=1.0,
        hops=hops,
        mixed=False,
        ttft_ms=100.0,
        tpot_ms=20.0,
        output_tokens=45,
    )
    bad = routing.Request(
        2,
        0.0,
        "p",
        "u",
        "A",
        100.0,
        1.0,
        result=routing.ERROR,
        end=0.1,
        hops=hops,
        mixed=True,
        mixed_pair="A/C",
        path_error=paths.KV_MISMATCH,
        ttft_ms=100.0,
    )
    refused = routing.refused(3, 0.0, path=True)
    out = routing.summary([ok, bad, refused])
    assert out["paths"] == {"total": 3, "consistent": 1, "mixed": 1, "noRoute": 1, "kvMismatch": 1}
    assert out["mixedByPair"] == {"A/C": 1}
    assert out["byRevision"]["A"]["ttftP50"] == 100
    assert out["byRevision"]["A"]["tpotP99"] == 20
    assert out["byRevision"]["A"]["outputTokens"] == 45


@pytest.mark.parametrize(("percent", "expected"), [(100, "C"), (0, "B")])
def test_a_canary_weight_puts_an_affine_path_on_the_side_it_drew_even_from_an_unchanged_first_role(percent, expected):
    # C changed decode only: B's prefill pod can start a path of B (stable) or of C (canary).
    pods = [
        _pod("p-b", "prefill", "B", "p2"),
        _pod("d-b", "decode", "B", "d1"),
        _pod("d-c", "decode", "C", "d2"),
    ]
    table = _table(pods)
    rng = random.Random(1)
    for _ in range(20):
        choice = paths.route(table, lambda p: 0, weights.Weight(percent, "C"), rng)
        assert choice.revision == expected and not choice.mixed
