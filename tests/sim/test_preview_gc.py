"""The preview's collector thresholds (issue 27): the young generation raised while it runs
(``preview.preview_gc``, around ``run.batch_gc``), the process's thresholds put back after."""

from __future__ import annotations

import gc

import pytest

from controller.simcluster import preview
from controller.simcluster.config import ClusterConfig, Span
from controller.simcluster.preview import PREVIEW_YOUNG_THRESHOLD, PreviewCluster, preview_change, preview_gc
from tests.factories import group_strategy, modelserving, role


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_the_young_generation_is_raised_while_a_preview_runs_and_put_back_after(thresholds):
    with preview_gc():
        assert gc.get_threshold() == (PREVIEW_YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_preview_runs_under_the_raised_threshold_and_leaves_the_process_as_it_was(thresholds, monkeypatch):
    seen = []
    roll_out = preview._roll_out

    def spying(*args, **kwargs):
        seen.append(gc.get_threshold())
        return roll_out(*args, **kwargs)

    monkeypatch.setattr(preview, "_roll_out", spying)
    timing = {k: Span.fixed(v) for k, v in {"schedule": 1, "pull": 2, "start": 1, "load": 10, "terminate": 1}.items()}
    cluster = PreviewCluster(node_gpus=[2, 2], config=ClusterConfig(timing=timing))
    ms = modelserving(name="demo", replicas=2, strategy=group_strategy(maxUnavailable=1), roles=[role("serve")])
    patch = {"spec": {"paused": True}}
    preview_change(ms, patch, cluster, rollout_limit=30)
    assert seen and seen[0][0] == PREVIEW_YOUNG_THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)
