"""A pass acts only on the spec it read: when the spec changes while the pass plans (an operator's
rollback or pause landing mid-pass), the pass applies none of its actions and asks to run again."""

from __future__ import annotations

from controller.core.reconcile import reconcile

from .harness import CountingRouter, MiniCluster, manifest, role
from .support import NAME, NS, change_image, deploy, patch_spec, status


class SpecChangesMidPass(MiniCluster):
    """Runs ``change`` right after the pass's first read of the ModelServing, as an API write
    landing while the pass observes and plans would."""

    def __init__(self, change=None):
        super().__init__()
        self.change = change
        self.reads = 0

    def get_modelserving(self, namespace, name):
        obj = super().get_modelserving(namespace, name)
        self.reads += 1
        if self.reads == 1 and self.change is not None:
            change, self.change = self.change, None
            change(self)
        return obj


def rolling_cluster():
    m = manifest(replicas=3, roles=[role("serve")])
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    moving = SpecChangesMidPass()
    moving.__dict__.update(cluster.__dict__)
    return moving, clock


def test_a_pass_whose_spec_changed_while_it_planned_applies_nothing_and_runs_again_at_once():
    cluster, clock = rolling_cluster()
    cluster.change = lambda c: patch_spec(c, {"paused": True})
    cluster.reads = 0
    before = dict(cluster.pods)
    result = reconcile(cluster, CountingRouter(), clock, NS, NAME)
    assert result.actions == []
    assert result.requeue_after == 0.0
    assert cluster.pods.keys() == before.keys()  # nothing deleted, nothing created


def test_the_next_pass_plans_from_the_new_spec():
    cluster, clock = rolling_cluster()
    cluster.change = lambda c: patch_spec(c, {"paused": True})
    cluster.reads = 0
    reconcile(cluster, CountingRouter(), clock, NS, NAME)
    result = reconcile(cluster, CountingRouter(), clock, NS, NAME)
    assert status(cluster)["observedGeneration"] == cluster.ms[(NS, NAME)]["metadata"]["generation"]
    assert status(cluster)["phase"] == "Paused"
    assert not [a for a in result.actions if a.verb in ("delete", "drain")]


def test_a_pass_with_an_unchanged_spec_acts_as_planned():
    cluster, clock = rolling_cluster()
    cluster.reads = 0
    result = reconcile(cluster, CountingRouter(), clock, NS, NAME)
    assert [a.verb for a in result.actions if a.verb in ("delete", "drain")]
