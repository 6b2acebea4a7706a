"""Standard mode's traffic as the predictor's Service sends it: over the Ready pods of every
ReplicaSet its selector matches (Kubernetes Services send to Ready endpoints only; a Deployment's
ReplicaSets old and new carry the same ``app`` label), not to the new ReplicaSet as soon as the
Deployment changes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.kserve.view import spread_by_ready_pods
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import load_scenario
from tests.paths import TEST_SCENARIOS

_TRACE: dict = {}


def trace() -> dict:
    if not _TRACE:
        _TRACE.update(run_scenario(load_scenario(TEST_SCENARIOS / "isvc-default-rollout.yaml")))
    return _TRACE


def ready_by_revision(frame: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in frame["instances"]:
        if i["state"] == "Ready":
            out[i["revision"]] = out.get(i["revision"], 0) + 1
    return out


def test_right_after_the_change_all_traffic_stays_on_the_old_pods_until_a_new_one_is_ready():
    frames = [f for f in trace()["frames"] if f["t"] >= 150]
    old = next(iter(ready_by_revision([f for f in trace()["frames"] if f["t"] < 150][-1])))
    first_new_ready = next(f["t"] for f in frames if set(ready_by_revision(f)) - {old})
    for f in frames:
        if f["t"] >= first_new_ready:
            break
        assert [(t["revision"], t["percent"]) for t in f["traffic"]] == [(old, 100)], f


def test_during_the_rollout_each_replicaset_gets_its_share_of_the_ready_pods():
    # A Service picks among Ready endpoints alike: 6 old and 2 new Ready pods -> 75% and 25%.
    for f in trace()["frames"]:
        ready = ready_by_revision(f)
        total = sum(ready.values())
        shares = {t["revision"]: t["percent"] for t in f["traffic"]}
        if not total:
            continue
        assert set(shares) == set(ready), f
        assert sum(shares.values()) == 100
        for revision, count in ready.items():
            assert abs(shares[revision] - 100 * count / total) < 1, (f["t"], shares, ready)


@given(percent=st.integers(0, 100), ready=st.lists(st.integers(0, 20), min_size=1, max_size=4))
def test_the_shares_of_a_backend_always_add_up_to_its_percent(percent, ready):
    shares = spread_by_ready_pods(percent, ready)
    if sum(ready) == 0:
        assert shares == [0] * len(ready)
    else:
        assert sum(shares) == percent
        assert all(s == 0 for s, n in zip(shares, ready, strict=True) if n == 0)


@pytest.mark.parametrize(
    "percent,ready,shares",
    [(100, [6, 2], [75, 25]), (100, [1, 2], [33, 67]), (75, [3, 0], [75, 0]), (100, [0, 0], [0, 0])],
    ids=["6 and 2 Ready pods", "1 and 2 Ready pods round by the largest remainder", "a backend at 75%", "no Ready pod"],
)
def test_a_backends_share_is_spread_in_proportion_to_ready_pods(percent, ready, shares):
    assert spread_by_ready_pods(percent, ready) == shares
