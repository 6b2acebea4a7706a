"""The work-queue policy shared by the Celery tasks and the simulator's controller."""

from __future__ import annotations

import pytest

from controller.core.workqueue import (
    COALESCE_SECONDS,
    HOT_LOOP_INTERVAL,
    HOT_LOOP_PASSES,
    PASSES_PER_TURN,
    PassHistory,
    already_queued,
    backoff_seconds,
    requeue_seconds,
    turn_is_over,
)

BACKOFF = [
    ("the first failure waits 0.1 s", 1, 0.1),
    ("the second waits twice as long", 2, 0.2),
    ("the seventh waits 6.4 s", 7, 6.4),
    ("the eighth would wait 12.8 s and waits 10 s", 8, 10.0),
    ("the hundredth waits 10 s", 100, 10.0),
    ("the two-thousandth (hours of failing passes) still waits 10 s", 2000, 10.0),
]


@pytest.mark.parametrize(("case", "failures", "seconds"), BACKOFF, ids=[b[0] for b in BACKOFF])
def test_failed_passes_back_off_from_a_tenth_of_a_second_doubling_to_ten_seconds(case, failures, seconds):
    assert backoff_seconds(failures) == pytest.approx(seconds)


QUEUED = [
    ("nothing queued: queue it", None, 10.0, False),
    ("a pass queued earlier covers the request", 9.0, 10.0, True),
    ("a pass queued at the same time covers it", 10.0, 10.0, True),
    ("a pass queued later would be late: queue another", 11.0, 10.0, False),
]


@pytest.mark.parametrize(("case", "pending", "wanted", "covered"), QUEUED, ids=[q[0] for q in QUEUED])
def test_a_pass_already_queued_no_later_than_wanted_covers_the_request(case, pending, wanted, covered):
    assert already_queued(pending, wanted) is covered


TURNS = [
    ("after the first pass the worker runs the next one asked for", 1, False),
    ("a healthy chain of three passes runs in one turn", 3, False),
    ("the nineteenth pass still leaves room for one more", 19, False),
    ("after the twentieth pass the ModelServing goes back to the queue", 20, True),
    ("a turn never runs past the limit", 21, True),
]


@pytest.mark.parametrize(("case", "passes", "over"), TURNS, ids=[t[0] for t in TURNS])
def test_a_worker_runs_at_most_twenty_passes_of_one_modelserving_in_a_turn(case, passes, over):
    assert PASSES_PER_TURN == 20
    assert turn_is_over(passes) is over


def test_a_requested_wake_up_is_never_sooner_than_the_coalescing_delay():
    assert requeue_seconds(0) == COALESCE_SECONDS
    assert requeue_seconds(-3) == COALESCE_SECONDS
    assert requeue_seconds(60) == 60.0


def test_passes_spaced_wider_than_two_coalescing_delays_never_count_as_a_hot_loop():
    history = PassHistory()
    for i in range(1000):
        history = history.after_pass(i * 0.011)
    assert history.streak == 0 and not history.throttled and history.wait_before_pass(20.0) is None


def test_the_two_hundredth_back_to_back_pass_throttles_to_one_pass_a_second():
    history, t = PassHistory(), 0.0
    for _ in range(HOT_LOOP_PASSES):
        history = history.after_pass(t)
        t += COALESCE_SECONDS
    assert not history.throttled
    history = history.after_pass(t)
    assert history.throttled
    # Right after the pass it waits the rest of the interval; a second later it may run again.
    assert history.wait_before_pass(t + COALESCE_SECONDS) == pytest.approx(HOT_LOOP_INTERVAL - COALESCE_SECONDS)
    assert history.wait_before_pass(t + HOT_LOOP_INTERVAL) is None
    # Throttling stays on even when the passes slow down.
    assert history.after_pass(t + 5).throttled
