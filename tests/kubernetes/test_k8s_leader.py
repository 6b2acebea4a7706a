"""LeaseElector against the API server double: acquire, renew, take-over only after expiry."""

from __future__ import annotations

import threading

import pytest

from controller.k8s import LeaseElector
from controller.k8s.leader import from_microtime
from tests.waiting import wait_until

NS = "rolloutui"
LEASES = "coordination.k8s.io/v1/leases"


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def elector(api_client, clock, identity: str, **kwargs) -> LeaseElector:
    return LeaseElector(
        api_client,
        NS,
        "rolloutui-controller",
        identity=identity,
        lease_duration=15,
        renew_deadline=10,
        retry_period=2,
        clock=clock,
        **kwargs,
    )


def lease(apiserver) -> dict:
    return apiserver.call(lambda: dict(apiserver.emu.store[(LEASES, NS, "rolloutui-controller")]))


def test_the_first_candidate_creates_the_lease_and_leads(api_client, apiserver, clock):
    a = elector(api_client, clock, "a")
    assert not a.is_leader()
    assert a.try_acquire_or_renew()
    assert a.is_leader()
    spec = lease(apiserver)["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert from_microtime(spec["renewTime"]) == pytest.approx(clock.t)
    assert spec["renewTime"].endswith("Z") and "." in spec["renewTime"]  # RFC 3339 MicroTime


def test_the_holder_renews_and_keeps_its_acquire_time(api_client, apiserver, clock):
    a = elector(api_client, clock, "a")
    a.try_acquire_or_renew()
    acquired = lease(apiserver)["spec"]["acquireTime"]
    clock.advance(2)
    assert a.try_acquire_or_renew()
    spec = lease(apiserver)["spec"]
    assert spec["acquireTime"] == acquired
    assert from_microtime(spec["renewTime"]) == pytest.approx(clock.t)
    assert spec["leaseTransitions"] == 0


def test_a_second_candidate_does_not_take_over_a_valid_lease(api_client, apiserver, clock):
    a, b = elector(api_client, clock, "a"), elector(api_client, clock, "b")
    assert a.try_acquire_or_renew()
    clock.advance(14)  # one second before expiry
    assert not b.try_acquire_or_renew()
    assert not b.is_leader()
    assert lease(apiserver)["spec"]["holderIdentity"] == "a"


def test_a_second_candidate_takes_over_an_expired_lease_and_counts_the_transition(api_client, apiserver, clock):
    a, b = elector(api_client, clock, "a"), elector(api_client, clock, "b")
    assert a.try_acquire_or_renew()
    clock.advance(16)  # a stopped renewing more than leaseDurationSeconds ago
    assert not a.is_leader()  # and a knows it is no longer allowed to act
    assert b.try_acquire_or_renew()
    assert b.is_leader()
    spec = lease(apiserver)["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert from_microtime(spec["acquireTime"]) == pytest.approx(clock.t)
    # The old holder, back, sees the new valid holder and stays a follower.
    assert not a.try_acquire_or_renew()


def test_of_two_candidates_racing_for_an_expired_lease_only_one_wins(api_client, apiserver, clock):
    a, b, c = (elector(api_client, clock, n) for n in "abc")
    assert a.try_acquire_or_renew()
    clock.advance(20)
    # b and c both read the expired Lease; c writes first; b's write carries the stale
    # resourceVersion and the API server refuses it (409), so b does not lead.
    stale = b._read()
    assert c.try_acquire_or_renew()
    b._read = lambda: stale
    assert not b.try_acquire_or_renew()
    assert not b.is_leader()
    assert lease(apiserver)["spec"]["holderIdentity"] == "c"


def test_leadership_lapses_when_renewals_stop_for_the_renew_deadline(api_client, clock):
    a = elector(api_client, clock, "a")
    a.try_acquire_or_renew()
    clock.advance(9.5)
    assert a.is_leader()
    clock.advance(1)
    assert not a.is_leader()  # renew_deadline (10 s) passed: stop acting before anyone may take over


def test_release_on_stop_lets_a_successor_take_over_at_once(api_client, apiserver, clock):
    a, b = elector(api_client, clock, "a"), elector(api_client, clock, "b")
    assert a.try_acquire_or_renew()
    a.stop()
    assert not a.is_leader()
    assert lease(apiserver)["spec"]["holderIdentity"] == ""
    assert b.try_acquire_or_renew()  # no waiting for expiry
    assert lease(apiserver)["spec"]["holderIdentity"] == "b"


def test_a_release_by_a_non_holder_leaves_the_lease_alone(api_client, apiserver, clock):
    a, b = elector(api_client, clock, "a"), elector(api_client, clock, "b")
    a.try_acquire_or_renew()
    b.release()
    assert lease(apiserver)["spec"]["holderIdentity"] == "a"


def test_the_election_loop_reports_leading_and_stepping_down(api_client, apiserver):
    started, stopped = threading.Event(), threading.Event()
    a = LeaseElector(
        api_client,
        NS,
        identity="loop",
        lease_duration=3,
        renew_deadline=2,
        retry_period=0.1,
        on_started_leading=started.set,
        on_stopped_leading=stopped.set,
    ).start()
    assert started.wait(5)
    assert a.is_leader()
    versions = {lease(apiserver)["metadata"]["resourceVersion"]}

    def renewed_twice() -> bool:
        versions.add(lease(apiserver)["metadata"]["resourceVersion"])
        return len(versions) >= 3

    wait_until(renewed_twice, what="two renewals of the lease", timeout=5, interval=0.02)
    assert lease(apiserver)["spec"]["holderIdentity"] == "loop"
    a.stop(timeout=5)
    assert stopped.is_set()
    assert lease(apiserver)["spec"]["holderIdentity"] == ""


def test_inconsistent_timings_are_refused():
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaseElector(None, NS, lease_duration=10, renew_deadline=10, retry_period=2)  # type: ignore[arg-type]
