"""Canary weights in the simulated routers (``simcluster.weights``): the first hop's choice as a
property, and ``manage.py simulate`` of examples/scenarios/canary-weight-10.yaml (a 10% canary on 4
groups) asserted from its trace."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.simcluster import routing, weights
from tests.paths import EXAMPLE_SCENARIOS, REPO


def pod(name: str, revision: str) -> dict:
    return {"metadata": {"name": name, "labels": {naming.LABEL_REVISION: revision}}}


def share_to_canary(percent: int, stable: int, canary: int, draws: int, seed: int) -> float:
    pods = [pod(f"s{i}", "old") for i in range(stable)] + [pod(f"c{i}", "new") for i in range(canary)]
    rng = random.Random(seed)
    weight = weights.Weight(percent, "new")
    hits = 0
    for _ in range(draws):
        first = weights.first_hop(pods, weight, rng, routing.revision_label)
        assert first and len({routing.revision_label(p) for p in first}) == 1
        hits += routing.revision_label(first[0]) == "new"
    return hits / draws


@settings(max_examples=40, deadline=None)
@given(
    percent=st.integers(0, 100),
    stable=st.integers(1, 9),
    canary=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_share_of_first_hops_on_the_update_revision_converges_to_the_weight_whatever_the_groups(
    percent, stable, canary, seed
):
    draws = 4000
    p = percent / 100
    # Five standard deviations of a binomial share: a correct router fails this once in ~3.5 million.
    bound = 5 * math.sqrt(p * (1 - p) / draws) + 1e-9
    assert abs(share_to_canary(percent, stable, canary, draws, seed) - p) <= bound


def test_without_a_weight_every_pod_is_a_candidate_and_nothing_is_drawn():
    pods = [pod("a", "old"), pod("b", "new")]
    rng = random.Random(7)
    before = rng.getstate()
    assert weights.first_hop(pods, None, rng, routing.revision_label) is pods
    assert rng.getstate() == before


def test_a_weight_with_no_routable_canary_instance_sends_everything_to_stable_and_never_rejects():
    pods = [pod("a", "old"), pod("b", "old")]
    rng = random.Random(1)
    for _ in range(200):
        assert weights.first_hop(pods, weights.Weight(100, "new"), rng, routing.revision_label) == pods


def test_the_weight_is_read_from_the_modelservings_canary_status():
    ms = {"status": {"canary": {"revision": "new", "weight": 10}}}
    assert weights.of_modelserving(ms) == weights.Weight(10, "new")
    assert weights.of_modelserving({"status": {"canary": {"revision": "new"}}}) is None
    assert weights.of_modelserving(None) is None


def test_a_10_percent_canary_on_4_groups_receives_10_percent_of_the_requests_in_its_windows(tmp_path):
    out = tmp_path / "trace.json"
    proc = subprocess.run(
        [sys.executable, "manage.py", "simulate", str(EXAMPLE_SCENARIOS / "canary-weight-10.yaml"), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(out.read_text())
    frames = [f for f in trace["frames"] if "canary" in f]
    at_10 = min(f["t"] for f in frames if f["canary"].get("weight") == 10)
    at_100 = min(f["t"] for f in frames if f["canary"].get("weight") == 100)
    # The weight follows the steps: 0 before setWeight, 10 after it, 100 once every step is done.
    assert frames[0]["canary"]["weight"] == 0 and trace["converged"]
    canary_rev = next(a["toRevision"] for a in trace["audit"] if a["action"] == "setImage")
    # Only group 3 ran the canary until the last step: by load alone it would get ~25%.
    groups = {
        i["group"]
        for f in trace["frames"]
        if f["t"] < at_10 + 60
        for i in f["instances"]
        if i["revision"] == canary_rev
    }
    assert groups == {3}
    windows = [w for w in trace["analysis"] if w["start"] >= at_10 and w["end"] <= at_100]
    assert len(windows) >= 4
    canary = sum(w["figures"]["canary"]["started"] for w in windows)
    total = canary + sum(w["figures"]["stable"]["started"] for w in windows)
    assert 5.0 <= 100 * canary / total <= 15.0
    for w in windows:
        started = w["figures"]["canary"]["started"], w["figures"]["stable"]["started"]
        assert 5.0 <= 100 * started[0] / sum(started) <= 15.0, w
