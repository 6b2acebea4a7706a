"""spec.progressDeadlineSeconds: a rollout that makes no progress for that long is reported as
failed (Progressing=False, reason ProgressDeadlineExceeded, phase Degraded), as Deployments do;
progress clears it; a paused or complete rollout runs no deadline."""

from __future__ import annotations

from .harness import manifest, role, step
from .support import change_image, deploy, patch_spec, status


def progressing(cluster) -> tuple[str, str]:
    cond = next(c for c in status(cluster)["conditions"] if c["type"] == "Progressing")
    return cond["status"], cond["reason"]


def stuck_rollout(deadline: int = 60):
    """4 groups, one replaced at a time, onto an image that never gets Ready."""
    cluster, clock = deploy(manifest(replicas=4, roles=[role("serve")], progressDeadlineSeconds=deadline))
    cluster.fail_images.add("engine:bad")
    change_image(cluster, "engine:bad")
    return cluster, clock


def advance(cluster, clock, seconds: float) -> None:
    end = clock.t + seconds
    while clock.t < end:
        step(cluster, clock)


def test_a_rollout_without_progress_for_the_deadline_is_reported_failed_and_degraded():
    cluster, clock = stuck_rollout(deadline=60)
    advance(cluster, clock, 30)
    assert progressing(cluster) == ("True", "RollingUpdate")
    advance(cluster, clock, 40)
    assert progressing(cluster) == ("False", "ProgressDeadlineExceeded")
    assert status(cluster)["phase"] == "Degraded"
    message = next(c for c in status(cluster)["conditions"] if c["type"] == "Progressing")["message"]
    assert "progressDeadlineSeconds (60 s)" in message


def test_progress_after_the_deadline_clears_the_condition():
    cluster, clock = stuck_rollout(deadline=60)
    advance(cluster, clock, 70)
    assert progressing(cluster)[1] == "ProgressDeadlineExceeded"
    cluster.fail_images.clear()  # the image starts working: the new group gets Ready
    step(cluster, clock)
    step(cluster, clock)
    assert progressing(cluster) == ("True", "RollingUpdate")
    assert status(cluster)["phase"] != "Degraded"


def test_a_paused_rollout_runs_no_deadline_and_resuming_starts_the_clock_afresh():
    cluster, clock = stuck_rollout(deadline=60)
    advance(cluster, clock, 30)
    patch_spec(cluster, {"paused": True})
    advance(cluster, clock, 100)
    assert progressing(cluster) == ("False", "Paused")
    patch_spec(cluster, {"paused": False})
    advance(cluster, clock, 30)
    assert progressing(cluster) == ("True", "RollingUpdate")  # 30 s since resume, not 160 s


def test_a_complete_rollout_runs_no_deadline():
    cluster, clock = deploy(manifest(replicas=2, roles=[role("serve")], progressDeadlineSeconds=5))
    advance(cluster, clock, 50)
    assert progressing(cluster) == ("False", "RolloutComplete")
    assert status(cluster)["phase"] == "Healthy"


def test_the_controller_asks_to_be_woken_when_the_deadline_passes():
    cluster, clock = stuck_rollout(deadline=60)
    advance(cluster, clock, 40)
    now = clock.t
    result = step(cluster, clock)
    last = status(cluster)["progress"]["lastProgressTime"]
    assert result.requeue_after == last + 60 - now  # within the 30 s resync: asked for explicitly
