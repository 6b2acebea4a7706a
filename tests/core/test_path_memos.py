"""The request-path memos (``planner.labels``: whether a group's pods carry the labels they should;
``planner.paths``: a group's Ready instances per path role and template) change no plan: every pass
of coordinated updates with a request path, planned through the pass cache the earlier passes left
and without one (the reference), decides the same actions, blocked reasons and status."""

from __future__ import annotations

import pytest

from tests.coordination.test_paths_kept import path_manifest, set_images

from .harness import step
from .support import deploy, lose_pods, plan_with_and_without_memos


@pytest.mark.parametrize(
    ("scope", "groups", "images"),
    [
        pytest.param("group", 2, {"prefill": "engine:v2", "decode": "engine:v2"}, id="both roles, per group"),
        pytest.param("any", 2, {"prefill": "engine:v2", "decode": "engine:v2"}, id="both roles, any group"),
        pytest.param("group", 1, {"decode": "engine:v2"}, id="one role of the path"),
    ],
)
def test_every_pass_of_a_coordinated_update_with_a_path_plans_the_same_with_and_without_memos(scope, groups, images):
    cluster, clock = deploy(path_manifest({"prefill": 3, "decode": 2}, surge=1, scope=scope, groups=groups))
    set_images(cluster, images)
    for n in range(80):
        memoised, reference = plan_with_and_without_memos(cluster, clock)
        assert memoised == reference, f"pass {n}"
        if n == 4:
            lose_pods(cluster, next(iter(cluster.pods)))  # a group changes under its memos
        result = step(cluster, clock)
        status = cluster.ms[("default", "ms")].get("status") or {}
        if status.get("converged") and not result.actions and n > 4:
            break
    assert (cluster.ms[("default", "ms")].get("status") or {}).get("converged")
