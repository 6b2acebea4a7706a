"""The simulated cluster's public preview: a manifest and a change run on a copy, as a timeline."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

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


SUMMARY_SCENARIOS = [
    "tests/scenarios/canary-healthy.yaml",
    "tests/scenarios/drain-multinode.yaml",
    "tests/scenarios/inplace-image-bump.yaml",
    "tests/scenarios/pd-coordinated.yaml",
    "examples/scenarios/drain-no-loss.yaml",
    "examples/scenarios/partition-protected-recovery.yaml",
]
INSTANCE_SUMMARY_KEYS = ("group", "role", "ordinal", "revision", "state", "pods", "readyPods", "surge", "draining")


@pytest.mark.parametrize("path", SUMMARY_SCENARIOS)
def test_the_summary_view_the_preview_reads_is_the_full_view_without_the_pages_detail(path):
    """On every pass of these scenarios (canary, drains with traffic, in-place updates, coordinated
    roles, a partition): every field of ``build_view(summary=True)`` equals the full view's."""
    from controller.core.view import build_view
    from controller.simcluster.runner import Runner
    from controller.simcluster.scenario import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parents[2] / path)
    runner = Runner(scenario)
    compared = []

    def compare(t, _view):
        ns, name = scenario.namespace, scenario.ms_name
        args = (
            runner.store.get_modelserving(ns, name),
            runner.store.list_pods(ns, name),
            runner.store.list_revisions(ns, name),
            runner.router.in_flight_by_pod(),
            t,
        )
        full, summary = build_view(*args), build_view(*args, summary=True)
        assert summary["instances"] == [{k: i[k] for k in INSTANCE_SUMMARY_KEYS} for i in full["instances"]]
        assert {k: v for k, v in summary.items() if k != "instances"} == {
            k: full[k] for k in summary if k != "instances"
        }
        compared.append(t)

    runner.on_pass.append(compare)
    runner.run()
    assert len(compared) > 10
