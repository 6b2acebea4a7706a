"""Coordinated RoleRollingUpdate: skew quotas, the dependency startup gate and the teardown order
(domain.md "Coordinated multi-role update", kthena-modelserving.md section 4).

Progress and started replacements are read from the pods by ``helpers.role_views`` (never from
the planner's counters or its actions), and every pass of a rollout is judged by
``helpers.check_pass``, the contract's rules written out: ``ceil(min(1, minReadyProgress +
maxSkew) * T)``, the startup gate, the teardown order and the per-role budgets.
Drain is off (timeoutSeconds 0) unless a test is about drain, so a started replacement is a delete.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from .helpers import (
    NAME,
    NS,
    CountingRouter,
    chain,
    check_pass,
    converged_cluster,
    coordinated,
    manifest,
    min_ready_progress,
    quota,
    role,
    role_views,
    roll,
    set_images,
    started_between,
    started_in_pass,
    step,
    target_role_hashes,
)

NO_DRAIN = {"timeoutSeconds": 0}

# Several tests below found bugs in 7eec38f (same-pass teardown, skew/teardown deadlocks, stalls
# reported as Progressing); 82a46d6 fixed them, so they are plain tests now.


def build(counts: dict[str, int], *, skew="10%", deps=None, replicas=1, role_extra=None, coord_roles=None, drain=None):
    role_extra = role_extra or {}
    roles = [role(n, replicas=c, **role_extra.get(n, {"maxUnavailable": "100%"})) for n, c in counts.items()]
    m = manifest(replicas=replicas, roles=roles, strategy=coordinated(skew, deps, coord_roles), drain=drain or NO_DRAIN)
    return converged_cluster(m)


def reasons(result, role_name=None, kind=None):
    return [
        b["reason"]
        for b in result.blocked
        if (role_name is None or b["role"] == role_name) and (kind is None or b.get("kind") == kind)
    ]


# -- start quotas from zero -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "counts, skew, expected",
    [
        pytest.param(
            {"a": 100, "b": 50, "c": 10},
            "10%",
            {"a": 10, "b": 5, "c": 1},
            id="seed example A=100 B=50 C=10 at 10% gives 10, 5, 1",
        ),
        pytest.param(
            {"a": 2, "b": 4, "c": 10}, "10%", {"a": 1, "b": 1, "c": 1}, id="kthena 2, 4, 10 at 10% each start one"
        ),
        pytest.param(
            {"a": 8, "b": 4, "c": 10}, "10%", {"a": 1, "b": 1, "c": 1}, id="kthena 8, 4, 10 at 10% each start one"
        ),
        pytest.param(
            {"prefill": 10, "decode": 20}, "10%", {"prefill": 1, "decode": 2}, id="PD 10 prefill 20 decode at 10%"
        ),
        pytest.param({"a": 100, "b": 50, "c": 10}, "25%", {"a": 25, "b": 13, "c": 3}, id="25% rounds up per role"),
        pytest.param({"a": 3, "b": 7}, "100%", {"a": 3, "b": 7}, id="100% skew lets the budget decide"),
    ],
)
def test_start_quotas_from_zero_are_ceil_of_skew_times_target_per_role(counts, skew, expected):
    cluster, clock = build(counts, skew=skew)
    set_images(cluster, "engine:v2")
    started, _ = started_in_pass(cluster, clock)
    assert started == expected
    assert {r: v.in_flight for r, v in role_views(cluster).items()} == expected


def test_the_seed_example_with_a_calls_b_calls_c_starts_only_c_first():
    cluster, clock = build({"a": 100, "b": 50, "c": 10}, deps=chain("a", "b", "c"))
    set_images(cluster, "engine:v2")
    started, result = started_in_pass(cluster, clock)
    assert started == {"c": 1}
    assert any("dependency b" in r for r in reasons(result, "a"))
    assert any("dependency c" in r for r in reasons(result, "b"))
    assert any("maxSkew" in r for r in reasons(result, "c", "skew"))


def test_in_flight_replacements_count_against_the_quota_on_later_passes():
    cluster, clock = build({"a": 100, "b": 50, "c": 10})
    set_images(cluster, "engine:v2")
    first, _ = started_in_pass(cluster, clock)
    assert first == {"a": 10, "b": 5, "c": 1}
    # The deletions are still terminating: a second pass (or a restarted controller) starts nothing.
    again, _ = started_in_pass(cluster, clock)
    assert again == {}
    # The pods are gone (missing slots), the replacements are created but not Ready: still nothing new.
    cluster.settle()
    started, creating = started_in_pass(cluster, clock)
    assert started == {}
    assert {a.verb for a in creating.actions} == {"create"}


# -- the proposal's worked examples ----------------------------------------------------------------


def test_kthena_chain_of_three_with_four_each_starts_c_then_b_then_a_then_all_three():
    """A, B, C with 4 each, maxUnavailable 1, maxSkew 10%, A -> B -> C: each step is 25%.

    domain.md: new B and C must be Ready before new A starts, and B depends on C, so C goes first,
    then B once a new C is Ready, then A once a new B is Ready; after A's first is Ready the
    baseline is 25% and all three proceed together, governed only by skew and maxUnavailable, until
    the teardown order puts the last old instances in the order A, then B, then C."""
    cluster, clock = build(
        {"a": 4, "b": 4, "c": 4}, deps=chain("a", "b", "c"), role_extra={n: {"maxUnavailable": 1} for n in "abc"}
    )
    set_images(cluster, "engine:v2")
    starts = []
    first_ready_when_started = {}

    def on_pass(result, before, after):
        started = started_between(before[0], after[0])
        if started:
            starts.append(frozenset(started))
        for r in started:
            first_ready_when_started.setdefault(r, {d: before[0][d].replaced_ready for d in "abc"})

    roll(cluster, clock, on_pass=on_pass)
    assert starts[:4] == [frozenset("c"), frozenset("b"), frozenset("a"), frozenset("abc")]
    last = {r: max(i for i, s in enumerate(starts) if r in s) for r in "abc"}
    assert last["a"] < last["b"] < last["c"]
    assert first_ready_when_started["b"]["c"] >= 1
    assert first_ready_when_started["a"]["b"] >= 1 and first_ready_when_started["a"]["c"] >= 1


def test_kthena_different_partitions_a_stops_at_its_partition_while_b_and_c_complete():
    extra = {"a": {"maxUnavailable": 1, "partition": 2}, "b": {"maxUnavailable": 1}, "c": {"maxUnavailable": 1}}
    cluster, clock = build({"a": 4, "b": 4, "c": 4}, role_extra=extra)
    old = target_role_hashes(cluster)
    set_images(cluster, "engine:v2")
    new = target_role_hashes(cluster)
    violations = []

    def on_pass(result, before, after):
        p = after[0]
        base = min_ready_progress(before[0])
        for r, rp in p.items():
            if rp.started > quota(base, Fraction(10, 100), rp.target):
                violations.append((r, rp, base))

    roll(cluster, clock, on_pass=on_pass)
    assert violations == []
    by_instance = {}
    for pod in cluster.pods.values():
        labels = pod["metadata"]["labels"]
        by_instance[(labels["serving.rolloutui.io/role"], int(labels["serving.rolloutui.io/role-ordinal"]))] = labels[
            "serving.rolloutui.io/role-template-hash"
        ]
    assert [by_instance[("a", k)] for k in range(4)] == [old["a"], old["a"], new["a"], new["a"]]
    assert all(by_instance[(r, k)] == new[r] for r in "bc" for k in range(4))


def test_unchanged_roles_do_not_lower_the_baseline_and_satisfy_dependencies():
    cluster, clock = build({"a": 10, "b": 4}, deps={"a": ["b"]})
    set_images(cluster, "engine:v2", roles=["a"])
    started, result = started_in_pass(cluster, clock)
    assert started == {"a": 1}
    assert not reasons(result, "a", "dependency")


def test_roles_outside_the_coordination_set_spend_only_their_own_budget():
    cluster, clock = build(
        {"a": 10, "b": 10, "c": 10},
        coord_roles=["a", "b"],
        role_extra={"a": {"maxUnavailable": 5}, "b": {"maxUnavailable": 5}, "c": {"maxUnavailable": 5}},
    )
    set_images(cluster, "engine:v2")
    started, _ = started_in_pass(cluster, clock)
    assert started == {"a": 1, "b": 1, "c": 5}


# -- skew bound, dependency gate and teardown order on every pass of a full rollout -------------


PROPERTY = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)


class BusyRouter(CountingRouter):
    """Every pod has one long request in flight, so every drain lasts until its timeout."""

    def in_flight(self, namespace, pod_name):
        return self.counts.get(pod_name, 1)


def random_rollout(counts, skew, unavailable, deps, groups, surge_single_dependencies=True, drain=None):
    names = ["a", "b", "c"][: len(counts)]
    extra = {}
    for i, n in enumerate(names):
        # Kthena refuses a role's maxUnavailable above that role's replicas (validateMaxUnavailableForRoles).
        extra[n] = {"maxUnavailable": min(unavailable[i], counts[i])}
        # A dependency with a single instance needs surge (domain.md); give it one.
        if surge_single_dependencies and n in {d for on in deps.values() for d in on} and counts[i] == 1:
            extra[n]["maxSurge"] = 1
    cluster, clock = build(
        dict(zip(names, counts)), skew=f"{skew}%", deps=deps or None, role_extra=extra, replicas=groups, drain=drain
    )
    set_images(cluster, "engine:v2")
    return cluster, clock


def all_on_target(cluster) -> bool:
    new = target_role_hashes(cluster)
    return {p["metadata"]["labels"]["serving.rolloutui.io/role-template-hash"] for p in cluster.pods.values()} == set(
        new.values()
    )


COUNTS = st.lists(st.integers(1, 9), min_size=2, max_size=3)
SKEWS = st.sampled_from([1, 5, 10, 25, 34, 50, 100])
UNAVAILABLE = st.lists(st.integers(1, 4), min_size=3, max_size=3)


@PROPERTY
@given(counts=COUNTS, skew=SKEWS, unavailable=UNAVAILABLE, groups=st.integers(1, 2))
def test_without_dependencies_no_role_ever_starts_more_than_its_quota_and_the_rollout_completes(
    counts, skew, unavailable, groups
):
    cluster, clock = random_rollout(counts, skew, unavailable, {}, groups)
    problems: list[str] = []
    roll(cluster, clock, on_pass=check_pass(Fraction(skew, 100), {}, {}, problems))
    assert problems == []
    assert all_on_target(cluster)


@PROPERTY
@example(counts=[10, 5], skew=10, unavailable=[1, 1, 1], groups=1)
@given(counts=COUNTS, skew=SKEWS, unavailable=UNAVAILABLE, groups=st.integers(1, 2))
def test_with_a_dependency_chain_every_pass_keeps_the_skew_bound_and_the_startup_gate(
    counts, skew, unavailable, groups
):
    deps = chain(*["a", "b", "c"][: len(counts)])
    cluster, clock = random_rollout(counts, skew, unavailable, deps, groups)
    problems: list[str] = []
    roll(
        cluster,
        clock,
        on_pass=check_pass(Fraction(skew, 100), deps, {}, problems, teardown=False),
        max_steps=250,
        require_converged=False,
    )
    assert problems == []


@PROPERTY
@example(counts=[1, 1], skew=100, unavailable=[1, 1, 1], groups=1)
@example(counts=[2, 2], skew=100, unavailable=[1, 1, 1], groups=1)
@given(counts=COUNTS, skew=SKEWS, unavailable=UNAVAILABLE, groups=st.integers(1, 2))
def test_with_a_dependency_chain_an_old_dependency_is_kept_on_every_pass_while_an_old_caller_exists(
    counts, skew, unavailable, groups
):
    """With drains (3 s, every pod busy until the timeout) so that an old caller visibly still
    exists while it drains."""
    deps = chain(*["a", "b", "c"][: len(counts)])
    cluster, clock = random_rollout(counts, skew, unavailable, deps, groups, drain={"timeoutSeconds": 3})
    problems: list[str] = []
    roll(
        cluster,
        clock,
        on_pass=check_pass(Fraction(skew, 100), deps, {}, problems, bound=False),
        max_steps=400,
        require_converged=False,
        router=BusyRouter(),
    )
    assert problems == []


@PROPERTY
@example(counts=[3, 2], skew=10, unavailable=[1, 1, 1], groups=1)
@given(counts=COUNTS, skew=SKEWS, unavailable=UNAVAILABLE, groups=st.integers(1, 2))
def test_with_a_dependency_chain_the_rollout_always_completes(counts, skew, unavailable, groups):
    deps = chain(*["a", "b", "c"][: len(counts)])
    cluster, clock = random_rollout(counts, skew, unavailable, deps, groups)
    roll(cluster, clock, max_steps=250)
    assert all_on_target(cluster)


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    a=st.integers(1, 6),
    b=st.integers(1, 6),
    pa=st.integers(0, 5),
    pb=st.integers(0, 5),
    skew=st.sampled_from([10, 20, 50]),
)
def test_partitions_shrink_the_eligible_target_and_the_bound_holds_against_it(a, b, pa, pb, skew):
    pa, pb = min(pa, a - 1), min(pb, b - 1)
    extra = {"a": {"maxUnavailable": 1, "partition": pa}, "b": {"maxUnavailable": 1, "partition": pb}}
    cluster, clock = build({"a": a, "b": b}, skew=f"{skew}%", role_extra=extra)
    set_images(cluster, "engine:v2")
    problems: list[str] = []
    roll(cluster, clock, on_pass=check_pass(Fraction(skew, 100), {}, {}, problems))
    assert problems == []
    progress = role_views(cluster)
    assert progress["a"].ready == a - pa and progress["b"].ready == b - pb
    assert progress["a"].old == pa and progress["b"].old == pb


# -- dependency gate and teardown order ----------------------------------------------------------


def test_a_caller_never_starts_before_its_new_dependency_is_ready_even_when_the_dependency_is_slow():
    cluster, clock = build(
        {"a": 4, "b": 4}, deps={"a": ["b"]}, role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": 1}}
    )
    set_images(cluster, "engine:v2")
    cluster.fail_images.add("engine:v2")  # new b never becomes Ready
    for _ in range(10):
        result = step(cluster, clock)
    assert not any(a.role == "a" and a.verb in ("delete", "drain") for a in result.actions)
    progress = role_views(cluster)
    assert progress["a"].old == 4
    assert any("dependency b" in r for r in reasons(result, "a", "dependency"))


def test_an_old_dependency_instance_stays_while_an_old_caller_exists_even_while_it_drains():
    """Teardown: while an old A exists (a draining A still serves its in-flight requests, which
    call B), keep an old B that is routable (not draining, not deleting)."""
    m = manifest(
        replicas=1,
        roles=[role("a", replicas=2, maxUnavailable=1), role("b", replicas=2, maxUnavailable=1)],
        strategy=coordinated("100%", {"a": ["b"]}),
        drain={"timeoutSeconds": 60},
    )
    cluster, clock = converged_cluster(m)
    set_images(cluster, "engine:v2")
    router = CountingRouter()
    # Every pod serves a long request, so drains last until the timeout.
    for name in cluster.pods:
        router.counts[name] = 1
    problems = []
    hashes = target_role_hashes(cluster)
    for _ in range(200):
        for name in cluster.pods:
            router.counts.setdefault(name, 1)
        result = step(cluster, clock, router)
        p = role_views(cluster, hashes=hashes)
        if p["a"].old_alive > 0 and p["b"].old == 0:
            problems.append((clock.t, p["a"], p["b"]))
        if (cluster.get_modelserving(NS, NAME).get("status") or {}).get("converged") and not result.actions:
            break
        clock.t += 5
    assert problems == []


@pytest.mark.parametrize(
    "max_unavailable", [pytest.param(1, id="maxUnavailable 1"), pytest.param("100%", id="maxUnavailable 100%")]
)
def test_a_single_instance_dependency_without_surge_is_blocked_with_a_reason_naming_the_ways_out(max_unavailable):
    cluster, clock = build(
        {"a": 2, "b": 1},
        deps={"a": ["b"]},
        role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": max_unavailable}},
    )
    set_images(cluster, "engine:v2")
    for _ in range(5):
        result = step(cluster, clock)
    assert not any(a.verb in ("delete", "drain", "create") for a in result.actions)
    text = " ".join(reasons(result, "b")).lower()
    assert "surge" in text and "interruption" in text and "cross-version compatib" in text
    status = cluster.get_modelserving(NS, NAME)["status"]
    assert status.get("phase") == "Blocked"
    assert role_views(cluster)["b"].old == 1 and role_views(cluster)["a"].old == 2


@pytest.mark.parametrize(
    "callers, b_unavailable, skew",
    [
        pytest.param(1, 0, "10%", id="one caller, dependency maxUnavailable 0"),
        pytest.param(1, 1, "10%", id="one caller, dependency maxUnavailable 1"),
        pytest.param(2, 0, "10%", id="two callers at 10%"),
        pytest.param(2, 1, "50%", id="two callers at 50%"),
        pytest.param(4, 0, "10%", id="four callers at 10%"),
    ],
)
def test_a_single_instance_dependency_with_max_surge_one_completes(callers, b_unavailable, skew):
    cluster, clock = build(
        {"a": callers, "b": 1},
        skew=skew,
        deps={"a": ["b"]},
        role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": b_unavailable, "maxSurge": 1}},
    )
    set_images(cluster, "engine:v2")
    problems: list[str] = []
    roll(
        cluster,
        clock,
        on_pass=check_pass(Fraction(skew.rstrip("%")) / 100, {"a": ["b"]}, {}, problems, teardown=False),
        max_steps=120,
    )
    assert problems == []
    hashes = target_role_hashes(cluster)
    labels = [p["metadata"]["labels"] for p in cluster.pods.values()]
    assert sorted((lb["serving.rolloutui.io/role"], lb["serving.rolloutui.io/role-ordinal"]) for lb in labels) == [
        ("a", str(k)) for k in range(callers)
    ] + [("b", "0")]
    assert all(
        lb["serving.rolloutui.io/role-template-hash"] == hashes[lb["serving.rolloutui.io/role"]] for lb in labels
    )


@pytest.mark.parametrize(
    "a, b, skew, b_surge",
    [
        pytest.param(4, 4, "10%", 0, id="equal counts complete"),
        pytest.param(3, 2, "10%", 0, id="A=3 B=2 at 10%"),
        pytest.param(10, 5, "10%", 0, id="A=10 B=5 at 10%"),
        pytest.param(10, 5, "10%", 1, id="A=10 B=5 at 10% with surge on B"),
    ],
)
def test_a_multi_instance_dependency_with_coarser_steps_than_its_caller_completes(a, b, skew, b_surge):
    cluster, clock = build(
        {"a": a, "b": b},
        skew=skew,
        deps={"a": ["b"]},
        role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": 1, "maxSurge": b_surge}},
    )
    set_images(cluster, "engine:v2")
    roll(cluster, clock, max_steps=200)
    assert all_on_target(cluster)


def test_a_stalled_coordinated_rollout_is_not_reported_as_progressing():
    """When neither role can ever move (skew waits on the dependency, the dependency waits on the
    caller) the phase must say so, not claim progress forever."""
    cluster, clock = build(
        {"a": 3, "b": 2},
        skew="10%",
        deps={"a": ["b"]},
        role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": 1, "maxSurge": 1}},
    )
    set_images(cluster, "engine:v2")
    result = roll(cluster, clock, max_steps=60, require_converged=False)
    status = cluster.get_modelserving(NS, NAME)["status"]
    if status.get("converged"):
        return  # no stall, nothing to report
    assert result.actions == []
    assert status["phase"] == "Blocked", result.blocked


def test_a_held_dependency_instance_counts_as_done_only_once_everything_else_of_that_role_is_ready():
    """A=5 depends on B=3, B may replace 2 at once, maxSkew 5%. Once a new B is Ready, B has
    1 Ready, 1 replacement in flight and 1 old instance that teardown keeps for old A. B's progress
    is 1/3 until its in-flight replacement is Ready, so A may have ceil((1/3 + 5%) * 5) = 2 started,
    not ceil((2/3 + 5%) * 5) = 4."""
    cluster, clock = build(
        {"a": 5, "b": 3},
        skew="5%",
        deps={"a": ["b"]},
        role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": 2}},
    )
    set_images(cluster, "engine:v2")
    problems: list[str] = []
    roll(
        cluster,
        clock,
        on_pass=check_pass(Fraction(5, 100), {"a": ["b"]}, {}, problems, teardown=False),
        max_steps=150,
        require_converged=False,
    )
    assert problems == []


def test_a_changed_dependency_fully_protected_by_its_partition_blocks_its_callers_with_a_reason():
    """Kthena: a changed dependency whose replicas are all below its partition has T = 0, never
    gets a Ready new instance, and blocks its dependents; intended, and said in words."""
    cluster, clock = build(
        {"a": 3, "b": 2},
        deps={"a": ["b"]},
        role_extra={"a": {"maxUnavailable": 1}, "b": {"maxUnavailable": 1, "partition": 2}},
    )
    set_images(cluster, "engine:v2")
    for _ in range(5):
        result = step(cluster, clock)
    assert not any(a.verb in ("delete", "drain") for a in result.actions)
    text = " ".join(reasons(result, "a"))
    assert "partition" in text and "b" in text
    assert cluster.get_modelserving(NS, NAME)["status"]["phase"] == "Blocked"
