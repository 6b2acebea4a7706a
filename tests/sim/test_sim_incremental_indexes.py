"""The simulated cluster's incremental indexes answer as the plain walks they replace (issue 27).

The router keeps its routable set from the store's changes (``SimRouter._note_pod_change``) and the
store keeps each ModelServing's pod list in name order (``InMemoryStore.list_pods``); both are
checked against a walk of every pod after every change of a few scenarios, and across a preview's
copy (``restore``, which announces nothing)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from controller.simcluster import routing
from controller.simcluster.config import ClusterConfig, Span
from controller.simcluster.modelserving import ModelServingKind
from controller.simcluster.preview import PreviewCluster, bring_up, preview_from
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario
from tests.factories import group_strategy, modelserving, role

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _plain_list(store, namespace, ms_name):
    """What list_pods answered before its kept list: the bucket's pods sorted by name."""
    bucket = store._pods_by_ms.get((namespace, ms_name), {})
    return [bucket[name] for name in sorted(bucket)]


def _check_after_every_change(runner):
    store, router = runner.store, runner.router
    ns, name = runner.scenario.namespace, runner.scenario.ms_name
    checked: list[str] = []

    def check(change):
        if change.kind != "Pod":
            return
        listed = store.list_pods(ns, name)
        plain = _plain_list(store, ns, name)
        assert len(listed) == len(plain) and all(a is b for a, b in zip(listed, plain, strict=True))
        kept = router._routable_pods()
        walked = routing.routable_entries(plain)
        assert [p["metadata"]["name"] for p in kept] == [p["metadata"]["name"] for p in walked]
        assert all(a is b for a, b in zip(kept, walked, strict=True))
        assert list(router.routable_pods(ns, name)) == [p["metadata"]["name"] for p in walked]
        checked.append(change.type)

    store.add_listener(check)  # after the router's: it sees the change the router has taken
    return checked


@pytest.mark.parametrize("scenario", ["drain-no-loss.yaml", "paths-pd-affine.yaml", "surge-unschedulable.yaml"])
def test_the_kept_routable_set_and_pod_list_equal_a_walk_of_the_pods_after_every_change(scenario):
    runner = Runner(load_scenario(EXAMPLES / scenario))
    checked = _check_after_every_change(runner)
    runner.run()
    assert {"ADDED", "MODIFIED", "DELETED"} <= set(checked)


def test_a_preview_copy_lists_its_restored_pods_and_keeps_the_routable_set_from_there():
    timing = {k: Span.fixed(v) for k, v in {"schedule": 1, "pull": 2, "start": 1, "load": 10, "terminate": 1}.items()}
    cluster = PreviewCluster(node_gpus=[2, 2, 2], config=ClusterConfig(timing=timing))
    ms = modelserving(name="demo", replicas=4, strategy=group_strategy(maxUnavailable=1), roles=[role("serve")])
    live = bring_up(ms, cluster)
    roles = copy.deepcopy(ms["spec"]["template"]["roles"])
    roles[0]["entryTemplate"]["spec"]["containers"][0]["image"] = "engine:v2"
    checked = []
    original = ModelServingKind.start_controller

    def start_and_check(kind):
        # The copy's pods were put in without a change: the first list must find them all.
        ns, name = kind.scenario.namespace, kind.scenario.ms_name
        assert len(kind.router._routable_pods()) == 4
        assert kind.router._routable_pods() == routing.routable_entries(_plain_list(kind.store, ns, name))
        checked.append(_check_after_every_change(kind))  # filled as the changes come
        original(kind)

    ModelServingKind.start_controller = start_and_check
    try:
        timeline = preview_from(live, {"spec": {"template": {"roles": roles}}}, cluster)
    finally:
        ModelServingKind.start_controller = original
    assert timeline.converged and "DELETED" in checked[0]


def test_a_restore_after_the_first_list_makes_the_router_list_again():
    runner = Runner(load_scenario(EXAMPLES / "drain-no-loss.yaml"))
    runner.run()
    router, store = runner.router, runner.store
    ns, name = runner.scenario.namespace, runner.scenario.ms_name
    before = router._routable_pods()
    pods = list(store.list_pods(ns, name))
    for pod in pods:
        store.remove_pod(ns, pod["metadata"]["name"])
    assert router._routable_pods() == []
    store.restore(pods=pods)  # announced to nobody
    assert [p["metadata"]["name"] for p in router._routable_pods()] == [p["metadata"]["name"] for p in before]
