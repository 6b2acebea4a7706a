"""One figure, one meaning: the groups available during a rollout with surge, as the live status
(``availableReplicas``), the preview the advisor judges by, and the state history (the progress
points the charts draw) count them.

The upstream rule: a surge replica that is Ready serves and counts. A Deployment's
``availableReplicas`` counts every available pod of the Deployment, surge pods included (so it may
read 5 of 4 mid-rollout); Kthena's counts the ServingGroups in the Running state, and its maxSurge
design gives a surge group no surge identity, so a Running surge group counts like any other. The
planner keeps its floor by the same count (``planner.group_rolling``: "a Ready surge group
counts"), so with ``maxUnavailable: 0`` none of the three may dip below the groups asked for.
"""

from __future__ import annotations

import copy
import dataclasses

from controller.core import advisor
from controller.runtime.progress import progress_point
from controller.simcluster.config import ClusterConfig, Span
from controller.simcluster.preview import LiveState, PreviewCluster, preview_from
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import Scenario
from tests.factories import group_strategy, modelserving, role

TIMING = {"schedule": 1, "pull": 2, "start": 1, "load": 10, "terminate": 1}


def surge_only(replicas: int = 2) -> dict:
    """Groups of one 1-GPU instance, replaced with ``maxUnavailable: 0, maxSurge: 1``: every group
    goes only once a Ready surge group stands in for it."""
    return modelserving(
        name="demo",
        replicas=replicas,
        strategy=group_strategy(maxUnavailable=0, maxSurge=1),
        roles=[role("serve", image="engine:v1", gpus=1)],
    )


def image_patch(ms: dict, image: str) -> dict:
    roles = copy.deepcopy(ms["spec"]["template"]["roles"])
    roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = image
    return {"spec": {"template": {"roles": roles}}}


def test_a_ready_surge_group_is_counted_as_available_by_the_status_the_preview_and_the_history_alike():
    ms = surge_only()
    patch = image_patch(ms, "engine:v2")
    copied = PreviewCluster(
        node_gpus=[2, 2], config=ClusterConfig(timing={k: Span.fixed(v) for k, v in TIMING.items()})
    )
    config = dataclasses.replace(copied.config, nodes=2, gpus_per_node=2)
    original = Runner(Scenario("original", 0, 3600.0, config, None, ms, []), frames=False)
    passes: list[tuple[float, dict]] = []
    original.kind.on_pass.append(lambda t, result: passes.append((t, result.status)))
    original.as_operator(lambda: original.store.create_modelserving(ms))
    original.loop.call_at(0.0, original.kind.start_controller)
    original.loop.run_until(60.0)  # brought up, Ready
    live = LiveState.read(original.store, "default", "demo", original.loop.now())
    timeline = preview_from(live, patch, copied)  # what the advisor judges a candidate by

    t0 = original.loop.now()
    original.as_operator(lambda: original.store.patch_modelserving("default", "demo", patch))
    original.kind.forget_convergence()
    first = len(passes)
    while not (original.converged and original.converged_at is not None and original.converged_at >= t0):
        original.loop.run_until(original.loop.now() + 5.0)
    rollout = passes[first:]

    surge_stood_in = False
    for t, status in rollout:
        groups = status["groups"]
        ready_surge = sum(1 for g in groups if g.get("surge") and g["ready"])
        # The status: every Ready group, surge ones included.
        assert status["availableReplicas"] == sum(1 for g in groups if g["ready"]), t
        # The history: the point the charts draw is that same figure.
        assert progress_point(status, t)["available"] == status["availableReplicas"], t
        surge_stood_in |= ready_surge > 0 and any(not g["ready"] for g in groups if not g.get("surge"))
    assert surge_stood_in, "no pass had a Ready surge group standing in for a group being replaced"

    # The preview of the same change on the copy: the same figure at every change of it.
    def steps(samples):
        out: list[tuple[float, int]] = []
        for t, available in samples:
            if not out or out[-1][1] != available:
                out.append((round(t, 3), available))
        return out

    assert timeline.converged
    status_steps = steps((t - t0, status["availableReplicas"]) for t, status in rollout)
    assert steps((s.t, s.available) for s in timeline.samples) == status_steps

    # maxUnavailable 0 keeps both groups available throughout, by all three counts, and the
    # advisor, reading the preview, says so.
    assert min(available for _, available in status_steps) == 2
    assert max(available for _, available in status_steps) == 3  # 2 groups and a Ready surge group
    outcome = advisor.outcome_of(timeline, desired=2)
    current = advisor.Candidate({"type": "ServingGroupRollingUpdate", "maxUnavailable": 0, "maxSurge": 1}, True, 1)
    row = advisor.judge(current, outcome, advisor.Floor(2, "maxUnavailable 0"))
    assert row["feasible"] and row["minAvailable"] == 2, row
