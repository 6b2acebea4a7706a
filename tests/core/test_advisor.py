"""The strategy advisor's pure search (controller.core.advisor): floor, candidates, judging, ranking."""

from __future__ import annotations

import pytest

from controller.core import advisor as a
from controller.core.spec import parse_modelserving
from controller.core.strategy import ClusterSettings
from tests.factories import group_strategy, modelserving, role


def demo_like(**budgets) -> dict:
    """4 groups of 6 GPUs: prefill 1 x (2 + 2 worker) and decode 2 x 1."""
    return modelserving(
        name="demo",
        replicas=4,
        strategy=group_strategy(**(budgets or {"maxUnavailable": 1})),
        roles=[role("prefill", workers=1, gpus=2), role("decode", replicas=2, gpus=1)],
    )


def role_level(**coordination) -> dict:
    strategy = {"type": "RoleRollingUpdate"}
    if coordination:
        strategy["roleRollingUpdateConfiguration"] = {"coordination": coordination}
    return modelserving(
        name="pd",
        replicas=2,
        strategy=strategy,
        roles=[
            role("prefill", replicas=2, gpus=1, maxUnavailable=1),
            role("decode", replicas=4, gpus=1, maxUnavailable=1),
        ],
    )


def floor3() -> a.Floor:
    return a.Floor(3, "test")


# --- the floor ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "budgets,load,expected,says",
    [
        ({"maxUnavailable": 1}, None, 3, "current strategy's floor"),
        ({"maxUnavailable": 2}, None, 2, "current strategy's floor"),
        ({"maxUnavailable": 2}, 3, 3, "what the offered load needs"),
        ({"maxUnavailable": 1}, 2, 3, "the offered load needs 2"),
        ({"maxUnavailable": 1}, 9, 4, "what the offered load needs"),  # never more than there are
    ],
)
def test_the_floor_is_the_larger_of_the_strategy_floor_and_the_load_and_says_which(budgets, load, expected, says):
    ms = parse_modelserving(demo_like(**budgets))
    floor = a.floor_of(ms, None, load_groups=load, load_why="decode needs it")
    assert floor.groups == expected and says in floor.why


def test_a_floor_asked_for_is_used_as_given_and_one_out_of_range_names_the_field():
    ms = parse_modelserving(demo_like())
    assert a.floor_of(ms, None, load_groups=3, load_why="", override=1).groups == 1
    with pytest.raises(a.AdvisorError) as err:
        a.floor_of(ms, None, load_groups=None, load_why="", override=5)
    assert err.value.field == "floor"


def test_a_role_level_floor_is_the_groups_worth_of_every_role_its_budgets_keep_serving():
    # 2 groups; prefill 1 of 2 and decode 1 of 4 may be down in every group: half of prefill serves.
    floor = a.floor_of(parse_modelserving(role_level()), None, load_groups=None, load_why="x")
    assert floor.groups == 1 and "prefill 1 of 2, decode 3 of 4 instances per group keep serving" in floor.why


def test_a_role_budget_that_may_take_a_whole_role_down_in_every_group_is_infeasible_without_a_preview():
    cands = a.candidates(role_level(), settings=None, free_gpus=100, floor=a.Floor(1, ""), limit=12)
    whole = [c for c in cands if c.strategy.get("roles", {}).get("prefill", {}).get("maxUnavailable") == 2]
    assert whole and all(not c.simulate and "below the floor of 1" in c.reason for c in whole)
    assert all(c.keeps >= 1 for c in cands if c.simulate)


# --- candidates --------------------------------------------------------------------------------------------
def test_the_current_strategy_comes_first_and_the_rest_stay_within_the_floor_and_the_free_gpus():
    cands = a.candidates(demo_like(), settings=None, free_gpus=20, floor=floor3())
    assert cands[0].current and cands[0].strategy == {
        "type": "ServingGroupRollingUpdate",
        "maxUnavailable": 1,
        "maxSurge": 0,
    }
    simulated = [c for c in cands if c.simulate]
    assert all(c.strategy["maxUnavailable"] <= 1 and c.strategy["maxSurge"] * 6 <= 20 for c in simulated)
    assert len({c.key for c in cands}) == len(cands)  # no two alike


@pytest.mark.parametrize(
    "free,floor,reason",
    [
        (8, 3, "surge 2 needs 12 GPUs, 8 free"),
        (20, 3, "surge 4 needs 24 GPUs, 20 free"),
        (20, 3, "maxUnavailable 2 may take 2 groups of 4 down: below the floor of 3"),
        (20, 2, "maxUnavailable 3 may take 3 groups of 4 down: below the floor of 2"),
    ],
)
def test_a_candidate_beyond_the_free_gpus_or_the_floor_is_infeasible_with_the_reason_in_words(free, floor, reason):
    cands = a.candidates(demo_like(), settings=None, free_gpus=free, floor=a.Floor(floor, ""))
    reasons = [c.reason for c in cands if not c.simulate]
    assert reason in reasons


def test_at_most_limit_candidates_are_simulated_and_the_current_is_always_one_of_them():
    cands = a.candidates(demo_like(), settings=None, free_gpus=100, floor=a.Floor(0, ""), limit=3)
    assert sum(c.simulate for c in cands) == 3 and cands[0].current
    with pytest.raises(a.AdvisorError) as err:
        a.candidates(demo_like(), settings=None, free_gpus=100, floor=floor3(), limit=0)
    assert err.value.field == "limit"


def test_a_current_strategy_written_differently_but_resolving_alike_is_not_tried_twice():
    cands = a.candidates(demo_like(maxUnavailable="25%"), settings=None, free_gpus=20, floor=floor3())
    ones = [c for c in cands if c.strategy.get("maxUnavailable") == 1 and c.strategy.get("maxSurge") == 0]
    assert len(ones) == 1 and ones[0].current


def test_role_level_candidates_set_every_roles_budgets_and_try_max_skew_when_coordinated():
    cands = a.candidates(role_level(maxSkew="50%"), settings=None, free_gpus=100, floor=a.Floor(1, ""), limit=12)
    assert cands[0].current and cands[0].strategy["maxSkew"] == "50%"
    others = [c for c in cands[1:] if c.simulate]
    assert {c.strategy["maxSkew"] for c in others} >= {"25%", "100%"}
    assert all(set(c.strategy["roles"]) == {"prefill", "decode"} for c in others)
    assert all(c.strategy["roles"]["prefill"]["maxUnavailable"] <= 2 for c in others)  # capped at its instances


def test_applying_a_role_level_candidate_keeps_the_canary_and_everything_but_the_budgets():
    manifest = role_level(maxSkew="50%")
    strategy = {"type": "RoleRollingUpdate", "roles": {"prefill": {"maxUnavailable": 2, "maxSurge": 0},
                "decode": {"maxUnavailable": 4, "maxSurge": 1}}, "maxSkew": "100%"}  # fmt: skip
    after = a.apply_strategy(manifest, strategy)
    roles = {r["name"]: r for r in after["spec"]["template"]["roles"]}
    assert (roles["decode"]["maxUnavailable"], roles["decode"]["maxSurge"]) == (4, 1)
    assert roles["decode"]["entryTemplate"] == manifest["spec"]["template"]["roles"][1]["entryTemplate"]
    assert after["spec"]["rolloutStrategy"]["roleRollingUpdateConfiguration"]["coordination"]["maxSkew"] == "100%"
    assert manifest["spec"]["template"]["roles"][1]["maxUnavailable"] == 1  # the input is not changed


def test_applying_a_group_candidate_keeps_the_partition_and_canary_as_written():
    manifest = demo_like(maxUnavailable=1, partition=1)
    after = a.apply_strategy(manifest, {"type": "ServingGroupRollingUpdate", "maxUnavailable": 0, "maxSurge": 2})
    assert after["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "maxUnavailable": 0,
        "maxSurge": 2,
        "partition": 1,
    }


def test_multi_node_override_makes_budgets_alike_and_they_are_tried_once():
    settings = ClusterSettings(multi_node_override=True)
    cands = a.candidates(demo_like(), settings=settings, free_gpus=20, floor=a.Floor(0, ""))
    # prefill has a worker: the override forces maxUnavailable 0 and maxSurge 100%, whatever is written.
    assert sum(c.simulate for c in cands) == 1


# --- judging and ranking -----------------------------------------------------------------------------------
def cand(mu, surge, *, current=False, gpus=None, reason=None):
    return a.Candidate(
        {"type": "ServingGroupRollingUpdate", "maxUnavailable": mu, "maxSurge": surge},
        current,
        6 * surge if gpus is None else gpus,
        reason,
    )


def out(duration, low, *, at=10.0, converged=True, desired=4):
    return a.Outcome(converged, duration, low, at, desired)


@pytest.mark.parametrize(
    "outcomes,recommended",
    [
        ([out(400, 3), out(130, 3), out(100, 2)], 1),  # the fastest dips below the floor
        ([out(400, 3), out(130, 3), out(130, 3)], 1),  # a tie goes to the fewer GPUs (surge 1 over 2)
        ([out(400, 3), out(None, 3, converged=False), out(500, 3)], 0),  # the current is the fastest left
        ([out(400, 2), out(130, 2), out(100, 1)], None),  # nothing keeps the floor
    ],
)
def test_the_recommendation_is_the_fastest_candidate_that_finished_and_kept_the_floor(outcomes, recommended):
    cands = [cand(1, 0, current=True), cand(1, 1), cand(1, 2)]
    advice = a.advise(cands, outcomes, floor3())
    assert advice["recommended"] == recommended
    if recommended is not None:
        rec = advice["candidates"][recommended]
        assert rec["feasible"]
        assert all(rec["durationSeconds"] <= r["durationSeconds"] for r in advice["candidates"] if r["feasible"])


def test_each_candidate_says_why_in_words():
    floor = floor3()
    assert (
        a.judge(cand(1, 1), out(130, 3), floor)["why"]
        == "done in 2.2 min, never below 3 of 4 groups, borrows 6 GPUs for up to 2.2 min"
    )
    assert (
        a.judge(cand(2, 0), out(60, 2, at=15), floor)["why"]
        == "went down to 2 of 4 groups after 15 s: below the floor of 3"
    )
    assert "did not finish" in a.judge(cand(0, 1), out(None, 4, converged=False), floor)["why"]
    assert a.judge(cand(1, 4, reason="surge 4 needs 24 GPUs, 20 free"), None, floor)["why"] == (
        "surge 4 needs 24 GPUs, 20 free (not simulated)"
    )


def test_the_summary_compares_the_recommendation_with_the_current_strategy():
    advice = a.advise([cand(1, 0, current=True), cand(1, 2)], [out(372, 3), out(120, 3)], floor3())
    assert advice["summary"].startswith("3.1x faster than the current strategy (2.0 min instead of 6.2 min)")
    assert "never below 3 of 4 groups, borrows 12 GPUs for up to 2.0 min" in advice["summary"]


def test_the_same_outcomes_give_the_same_advice():
    cands = [cand(1, 0, current=True), cand(1, 1), cand(1, 2)]
    outcomes = [out(400, 3), out(130, 3), out(100, 3)]
    assert a.advise(cands, outcomes, floor3()) == a.advise(list(cands), list(outcomes), floor3())


def test_the_lowest_capacity_is_the_fewest_available_groups_the_preview_saw_and_when():
    # The samples' ``available`` is the status' availableReplicas, Ready surge groups included
    # (tests/advisor/test_surge_counts_alike.py): the advisor adds nothing to it.
    from controller.simcluster.preview import PassSample, Timeline

    samples = [PassSample(0.0, 5, [], "r2"), PassSample(15.0, 3, [], "r2"), PassSample(30.0, 3, [], "r2")]
    outcome = a.outcome_of(Timeline(True, True, 90.0, 90.0, 6, samples), 4)
    assert (outcome.min_available, outcome.min_at, outcome.duration) == (3, 15.0, 90.0)
