"""The state a pass hands to the page bears the time its pods were listed: a pass that acted lists
them again after its actions and shows that list, so its view has the time of that second list; a
pass that did nothing shows its first list, with the pass's time (read before that list)."""

from __future__ import annotations

from controller.core.reconcile import reconcile

from .harness import CountingRouter, manifest, role
from .support import NAME, NS, change_image, deploy, status


class MovingClock:
    """A wall clock that moves one second each time it is read (a pass takes time)."""

    def __init__(self, t: float) -> None:
        self.t = t
        self.reads: list[float] = []

    def now(self) -> float:
        self.t += 1.0
        self.reads.append(self.t)
        return self.t


class RecordingCluster:
    """Notes the clock's latest reading at each list of pods."""

    def __init__(self, cluster, clock: MovingClock) -> None:
        self._cluster, self._clock = cluster, clock
        self.listed_at: list[float] = []

    def __getattr__(self, name):
        return getattr(self._cluster, name)

    def list_pods(self, namespace, name):
        self.listed_at.append(self._clock.reads[-1])
        return self._cluster.list_pods(namespace, name)


def test_a_pass_that_acted_shows_the_pods_listed_after_its_actions_at_the_time_of_that_list():
    cluster, fixed = deploy(manifest(replicas=3, roles=[role("serve")]))
    change_image(cluster, "engine:v2")
    clock = MovingClock(fixed.t)
    recording = RecordingCluster(cluster, clock)
    result = reconcile(recording, CountingRouter(), clock, NS, NAME)
    assert result.actions  # the rollout started: a group is taken down
    first, second = recording.listed_at
    assert second > first
    assert first == clock.reads[0]  # the pass's time
    assert result.view["time"] == second == clock.reads[-1]  # read just before the second list
    assert result.audit == [] or all(entry["t"] == clock.reads[0] for entry in result.audit)


def test_a_pass_that_did_nothing_shows_its_only_list_at_the_pass_time():
    cluster, fixed = deploy(manifest(replicas=2, roles=[role("serve")]))
    clock = MovingClock(fixed.t)
    recording = RecordingCluster(cluster, clock)
    result = reconcile(recording, CountingRouter(), clock, NS, NAME)
    assert not result.actions and status(cluster).get("converged")
    assert len(recording.listed_at) == 1
    assert result.view["time"] == clock.reads[0]
