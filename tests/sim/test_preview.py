"""The simulated cluster's public preview: a manifest and a change run on a copy, as a timeline."""

from __future__ import annotations

import copy
from dataclasses import replace as dataclasses_replace
from pathlib import Path

import pytest

from controller.core.view import expand_waiting
from controller.simcluster.config import ClusterConfig, ImageBehaviour, Span
from controller.simcluster.preview import PreviewCluster, preview_change
from tests.factories import group_strategy, modelserving, role

TIMING = {"schedule": 1, "pull": 2, "start": 1, "load": 10, "terminate": 1}


def manifest(replicas=4):
    return modelserving(
        name="demo", replicas=replicas, strategy=group_strategy(maxUnavailable=1), roles=[role("serve")]
    )


def image_patch(ms, image):
    roles = copy.deepcopy(ms["spec"]["template"]["roles"])
    roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = image
    return {"spec": {"template": {"roles": roles}}}


def cluster(**images):
    timing = {k: Span.fixed(v) for k, v in TIMING.items()}
    return PreviewCluster(
        node_gpus=[2, 2, 2],
        config=ClusterConfig(timing=timing, images={k: ImageBehaviour(**v) for k, v in images.items()}),
    )


def test_an_image_change_rolls_out_one_group_at_a_time_and_the_timeline_shows_it():
    ms = manifest()
    timeline = preview_change(ms, image_patch(ms, "engine:v2"), cluster())
    assert timeline.baseline_converged and timeline.converged and timeline.nodes == 3
    # Four groups, one at a time: each is replaced (terminate 1 + schedule 1 + pull 2 + start 1 + load 10).
    assert 4 * 15 <= timeline.converged_after <= 4 * 15 + 5
    assert all(s.t >= 0 for s in timeline.samples)
    assert min(s.available for s in timeline.samples) == 3  # never below the budget's floor
    assert timeline.samples[-1].available == 4
    assert timeline.requests is None  # no traffic asked for


def test_a_change_that_cannot_finish_is_reported_as_not_converged_within_the_limit():
    ms = manifest(replicas=2)
    timeline = preview_change(
        ms, image_patch(ms, "engine:bad"), cluster(**{"engine:bad": {"crash": True}}), rollout_limit=300
    )
    assert timeline.baseline_converged and not timeline.converged and timeline.converged_after is None
    assert 300 <= timeline.simulated_seconds <= 305
    assert any(s.blocked for s in timeline.samples)


def test_the_preview_never_changes_what_it_was_given():
    ms = manifest()
    patch = image_patch(ms, "engine:v2")
    before = copy.deepcopy((ms, patch))
    preview_change(ms, patch, cluster())
    assert (ms, patch) == before


def test_a_hundred_group_change_rolls_out_in_ten_batches_never_below_the_floor_and_converges():
    # The large preview of bench sim (1,000 groups) at a tenth of its size: 100 groups of an entry
    # and two workers (300 pods) on 8-GPU nodes; maxUnavailable 10% = 10 groups per batch, each
    # batch terminate 1 + schedule 1 + pull 2 + start 1 + load 10 = 15 s: 10 x 15 = 150 s.
    ms = modelserving(
        name="demo",
        replicas=100,
        strategy=group_strategy(maxUnavailable="10%"),
        roles=[role("serve", workers=2, image="engine:v1", gpus=1)],
    )
    new_role = role("serve", workers=2, image="engine:v2", gpus=1)
    timing = {k: Span.fixed(v) for k, v in TIMING.items()}
    big = PreviewCluster(node_gpus=[8] * 40, config=ClusterConfig(timing=timing))
    timeline = preview_change(ms, {"spec": {"template": {"roles": [new_role]}}}, big)
    assert timeline.baseline_converged and timeline.converged
    assert 10 * 15 <= timeline.converged_after <= 10 * 15 + 5
    assert min(s.available for s in timeline.samples) == 90  # the floor: 100 - 10% of 100
    assert timeline.samples[-1].available == 100


CORPUS = [
    "tests/scenarios/canary-healthy.yaml",
    "tests/scenarios/drain-multinode.yaml",
    "tests/scenarios/inplace-image-bump.yaml",
    "tests/scenarios/pd-coordinated.yaml",
    "tests/scenarios/drain-lossless-role-rollout.yaml",
    "tests/scenarios/inplace-bad-image.yaml",
    "examples/scenarios/drain-no-loss.yaml",
    "examples/scenarios/partition-protected-recovery.yaml",
    "examples/scenarios/surge-unschedulable.yaml",
]


def converged_by_the_view(ms, view, revisions) -> bool:
    """scenarios.md's rule read from the full state view, as the page shows it: the update revision
    (or, under role-level strategies, its role template) on every instance outside the partition,
    every instance Ready with all its pods, nothing draining, no surge, exactly the desired
    instances, the latest generation observed."""
    from controller.core import strategy
    from controller.core.revisions import History, role_hashes
    from controller.core.spec import parse_modelserving

    if (ms.get("status") or {}).get("observedGeneration") != ms["metadata"].get("generation"):
        return False
    spec = parse_modelserving(ms)
    eff = strategy.resolve(spec)
    history = History.from_objects(revisions)
    update = view["updateRevision"]
    instances = view["instances"]
    expected = {(g, r.name, o) for g in range(spec.replicas) for r in spec.roles for o in range(r.replicas)}
    if {(i["group"], i["role"], i["ordinal"]) for i in instances} != expected or len(instances) != len(expected):
        return False
    per = {r.name: r.pods_per_instance for r in spec.roles}
    for i in instances:
        if i["state"] != "Ready" or i["draining"] or i["surge"] or not i["pods"] == i["readyPods"] == per[i["role"]]:
            return False
        protected = (
            i["ordinal"] < eff.roles[i["role"]].partition.count
            if spec.role_level
            else i["group"] < eff.group.partition.count
        )
        if protected or i["revision"] == update:
            continue
        have, want = history.data_of(i["revision"]), history.data_of(update)
        if not (spec.role_level and have and want and role_hashes(have).get(i["role"]) == role_hashes(want)[i["role"]]):
            return False
    return True


@pytest.mark.parametrize("path", CORPUS)
def test_convergence_and_the_previews_samples_agree_with_the_full_view_on_every_pass(path):
    """On every pass of these scenarios (canary, drains with traffic, in-place updates, coordinated
    roles, a role-level rollout, a bad image, a partition, an unschedulable surge): the runner's convergence,
    read from the observed pods, is the contract read from the page's full view of the cluster
    after the pass, and what the preview samples from the pass's status (available groups, the
    reasons it waits, the update revision) is what that view shows."""
    from controller.core.view import build_view
    from controller.simcluster.runner import Runner
    from controller.simcluster.scenario import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parents[2] / path)
    runner = Runner(scenario)
    compared = []

    def compare(t, result):
        ns, name = scenario.namespace, scenario.ms_name
        ms, revisions = runner.store.get_modelserving(ns, name), runner.store.list_revisions(ns, name)
        view = build_view(ms, runner.store.list_pods(ns, name), revisions, runner.router.in_flight_by_pod(), t)
        assert runner.converged == converged_by_the_view(ms, view, revisions), t
        status = result.status
        assert status["availableReplicas"] == view["counts"]["availableReplicas"]
        assert status["updateRevision"] == view["updateRevision"]
        assert [b["reason"] for b in expand_waiting(status.get("waiting") or [])] == [
            b["reason"] for b in view["blocked"]
        ]
        compared.append(runner.converged)

    runner.kind.on_pass.append(compare)
    runner.run()
    assert len(compared) > 10 and False in compared


def test_the_preview_runs_with_the_collectors_thresholds_raised_and_puts_them_back_even_when_stopped():
    import gc

    from controller.simcluster.run import BATCH_YOUNG_THRESHOLD

    before = gc.get_threshold()
    during = []

    def progress(phase, t):
        during.append(gc.get_threshold())
        if phase == "rolling out":
            raise TimeoutError("the caller's wall-time budget")  # as the dashboard stops a long preview

    ms = manifest()
    with pytest.raises(TimeoutError):
        preview_change(ms, image_patch(ms, "engine:v2"), cluster(), progress=progress)
    assert during and all(t[0] >= BATCH_YOUNG_THRESHOLD for t in during)
    assert gc.get_threshold() == before


def test_a_preview_from_a_copy_rolls_out_as_the_change_does_on_the_cluster_it_was_copied_from():
    """The copy (``preview_from``: objects, revisions and pods restored where they are, on the same
    clock) against the original: the same change applied to the cluster the copy was made of, run
    by the controller that brought it up. Same capacity at every pass, same reasons, same end."""
    import dataclasses

    from controller.simcluster.preview import LiveState, preview_from
    from controller.simcluster.runner import Runner
    from controller.simcluster.scenario import Scenario

    ms = modelserving(
        name="demo",
        replicas=20,
        strategy=group_strategy(maxUnavailable="20%"),
        roles=[role("serve", workers=2, image="engine:v1", gpus=1)],
    )
    patch = {"spec": {"template": {"roles": [role("serve", workers=2, image="engine:v2", gpus=1)]}}}
    timing = {k: Span.fixed(v) for k, v in TIMING.items()}
    copied = PreviewCluster(node_gpus=[8] * 9, config=ClusterConfig(timing=timing))

    config = dataclasses.replace(copied.config, nodes=9, gpus_per_node=8)
    original = Runner(Scenario("original", 0, 3600.0, config, None, ms, []), frames=False)
    passes = []
    original.kind.on_pass.append(lambda t, result: passes.append((t, result.status["availableReplicas"])))
    original.as_operator(lambda: original.store.create_modelserving(ms))
    original.loop.call_at(0.0, original.kind.start_controller)
    original.loop.run_until(100.0)  # brought up, Ready for a while
    live = LiveState.read(original.store, "default", "demo", original.loop.now())
    timeline = preview_from(live, patch, copied)

    t0 = original.loop.now()
    original.as_operator(lambda: original.store.patch_modelserving("default", "demo", patch))
    original.kind.forget_convergence()
    first = len(passes)
    while not (original.converged and original.converged_at is not None and original.converged_at >= t0):
        original.loop.run_until(original.loop.now() + 5.0)

    def steps(samples):  # (t, available) at each change of the available count
        out = []
        for t, available in samples:
            if not out or out[-1][1] != available:
                out.append((round(t, 3), available))
        return out

    assert timeline.baseline_converged and timeline.converged
    assert timeline.converged_after == round(original.converged_at - t0, 3)
    assert steps((s.t, s.available) for s in timeline.samples) == steps((t - t0, a) for t, a in passes[first:])
    assert len(steps((s.t, s.available) for s in timeline.samples)) > 4  # it did roll in batches


def test_a_preview_from_a_copy_sends_the_clusters_traffic_from_the_change_on():
    from controller.simcluster.config import Traffic
    from controller.simcluster.preview import bring_up, preview_from

    ms = manifest()
    timing = {k: Span.fixed(v) for k, v in TIMING.items()}
    quiet = PreviewCluster(node_gpus=[2, 2, 2], config=ClusterConfig(timing=timing))
    busy = dataclasses_replace(quiet, traffic=Traffic(rps=5, duration=Span(0.5, 1.0)))
    live = bring_up(ms, quiet)
    timeline = preview_from(live, image_patch(ms, "engine:v2"), busy)
    assert timeline.converged and timeline.requests["total"] > 100
