"""Reconciles asked for by the simulated cluster's writes: one per ModelServing per pass or tick,
sent after the last write (``enqueue.coalesced``), and none lost."""

from __future__ import annotations

import pytest
from django.db import transaction

from controller.runtime import enqueue, periodic, reconciler
from controller.runtime.reconciler import run_reconcile
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick

from .helpers import manifest

# Autocommit, as in the worker: a write's on_commit callback runs at once (in a test transaction
# it would wait for a commit that never comes).
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def events(monkeypatch):
    """What was sent and published, in order."""
    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(enqueue, "send", lambda namespace, name, **kw: seen.append(("sent", namespace, name)))
    monkeypatch.setattr(reconciler, "publish_state", lambda namespace, name, view: seen.append(("published", name)))
    return seen


def test_requests_in_a_coalesced_block_are_sent_once_each_at_its_end_in_the_order_asked(events):
    with enqueue.coalesced():
        for name in ("b", "a", "b", "b", "a"):
            enqueue.reconcile_soon("default", name)
        assert events == []
    assert events == [("sent", "default", "b"), ("sent", "default", "a")]


def test_outside_a_block_each_request_is_sent_when_its_write_commits(events):
    enqueue.reconcile_soon("default", "a")
    assert events == [("sent", "default", "a")]


def test_a_block_that_raises_still_sends_what_its_writes_asked_for(events):
    with pytest.raises(RuntimeError), enqueue.coalesced():
        enqueue.reconcile_soon("default", "a")
        raise RuntimeError("the pass failed after a write")
    assert events == [("sent", "default", "a")]


def test_a_transaction_committing_after_the_block_sends_its_request_itself(events):
    with transaction.atomic():
        with enqueue.coalesced():
            enqueue.reconcile_soon("default", "a")
        assert events == []  # not committed yet, and the block is over: nothing held it
    assert events == [("sent", "default", "a")]


def test_a_pass_that_creates_many_pods_asks_for_one_reconcile_after_it_published(events):
    cluster = DatabaseCluster(actor="test")
    cluster.add_node(8)
    cluster.create_modelserving(manifest(replicas=6))
    run_reconcile("default", "small")
    assert len(cluster.list_pods("default", "small")) == 6
    assert [e for e in events if e[0] == "sent"] == [("sent", "default", "small")]
    assert events[-1] == ("sent", "default", "small")  # after the pass published the state


def test_a_tick_that_moves_many_pods_asks_for_one_reconcile_per_modelserving(events, monkeypatch):
    cluster = DatabaseCluster(actor="test")
    cluster.add_node(8)
    cluster.create_modelserving(manifest(name="one", replicas=3))
    cluster.create_modelserving(manifest(name="two", replicas=3))
    run_reconcile("default", "one")
    run_reconcile("default", "two")
    events.clear()
    # Far enough ahead that every pod has a step due (scheduled, pulled, started, loaded).
    monkeypatch.setattr(periodic, "tick", lambda c: tick(c, now=c.clock.now() + 3600))
    report = periodic.sim_tick()
    assert report["advanced"] + report["bound"] >= 6
    assert sorted(events) == [("sent", "default", "one"), ("sent", "default", "two")]
