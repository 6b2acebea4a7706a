"""Canary weights (``setWeight`` steps): parsed strictly, run by the real reconcile pass on the
planner-test cluster, shown in the status (``status.canary.weight``) and in the page's view with
the split observed in the analysis windows."""

from __future__ import annotations

import pytest

from controller.core import controls
from controller.core.canary import Canary, CanaryError, Step, parse_canary, weight_at
from controller.core.reconcile import reconcile
from controller.core.view import observed_weight
from tests.factories import group_strategy, with_canary

from .harness import CountingRouter, manifest, role
from .support import NAME, NS, change_image, deploy, status

WEIGHTED = [
    {"setPartition": "75%"},
    {"setWeight": 10},
    {"pause": {"durationSeconds": 60}},
    {"setWeight": 50},
    {"pause": {}},
    {"setPartition": 0},
]


def parse(steps, **extra):
    return parse_canary(
        {"steps": steps, **extra},
        "spec.rolloutStrategy.canary",
        strategy_type="ServingGroupRollingUpdate",
        group_partition_set=False,
    )


def test_a_set_weight_step_is_parsed_and_written_back_as_given():
    canary = parse([{"setWeight": 0}, {"setWeight": 10}, {"setWeight": 100}])
    assert [s.set_weight for s in canary.steps] == [0, 10, 100]
    assert [s.to_json() for s in canary.steps] == [{"setWeight": 0}, {"setWeight": 10}, {"setWeight": 100}]
    assert canary.weighted


REFUSED = [
    pytest.param([{"setWeight": 101}], "spec.rolloutStrategy.canary.steps[0].setWeight", id="above 100"),
    pytest.param([{"setWeight": -1}], "spec.rolloutStrategy.canary.steps[0].setWeight", id="below 0"),
    pytest.param([{"setWeight": "10%"}], "spec.rolloutStrategy.canary.steps[0].setWeight", id="a percent string"),
    pytest.param([{"setWeight": 10.5}], "spec.rolloutStrategy.canary.steps[0].setWeight", id="a fraction"),
    pytest.param([{"setWeight": True}], "spec.rolloutStrategy.canary.steps[0].setWeight", id="a boolean"),
    pytest.param([{"setWieght": 10}], "spec.rolloutStrategy.canary.steps[0].setWieght", id="a misspelt step"),
    pytest.param([{"setWeight": 10, "pause": {}}], "spec.rolloutStrategy.canary.steps[0]", id="two kinds in a step"),
]


@pytest.mark.parametrize(("steps", "field"), REFUSED)
def test_a_wrong_set_weight_is_refused_naming_its_field(steps, field):
    with pytest.raises(CanaryError) as err:
        parse(steps)
    assert err.value.field == field


ROUTING_REFUSED = [
    pytest.param({"gateway": {}}, "spec.rolloutStrategy.canary.trafficRouting.gateway", id="unknown provider"),
    pytest.param({}, "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI", id="no gatewayAPI"),
    pytest.param(
        {"gatewayAPI": {"httpRoute": "Chat_Route"}},
        "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI.httpRoute",
        id="a route name that is no object name",
    ),
    pytest.param(
        {"gatewayAPI": {"httpRoute": "r", "backendKind": "Ingress"}},
        "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI.backendKind",
        id="an unknown backend kind",
    ),
    pytest.param(
        {"gatewayAPI": {"httpRoute": "r", "backendKind": "InferencePool"}},
        "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI.endpointPickerRef",
        id="an InferencePool without its endpoint picker",
    ),
    pytest.param(
        {"gatewayAPI": {"httpRoute": "r", "endpointPickerRef": {"name": "epp"}}},
        "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI.endpointPickerRef",
        id="an endpoint picker for Services",
    ),
    pytest.param(
        {
            "gatewayAPI": {
                "httpRoute": "r",
                "backendKind": "InferencePool",
                "endpointPickerRef": {"name": "e", "port": 0},
            }
        },
        "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI.endpointPickerRef.port",
        id="a picker port out of range",
    ),
    pytest.param(
        {"gatewayAPI": {"httpRoute": "r", "weights": [90, 10]}},
        "spec.rolloutStrategy.canary.trafficRouting.gatewayAPI.weights",
        id="a misspelt field",
    ),
]


@pytest.mark.parametrize(("routing", "field"), ROUTING_REFUSED)
def test_a_wrong_traffic_routing_is_refused_naming_its_field(routing, field):
    with pytest.raises(CanaryError) as err:
        parse([{"setWeight": 10}], trafficRouting=routing)
    assert err.value.field == field


def test_traffic_routing_through_inference_pools_is_parsed():
    canary = parse(
        [{"setWeight": 10}],
        trafficRouting={
            "gatewayAPI": {
                "httpRoute": "chat-route",
                "backendKind": "InferencePool",
                "endpointPickerRef": {"name": "epp", "port": 9002},
            }
        },
    )
    assert canary.gateway_api.to_json() == {
        "httpRoute": "chat-route",
        "backendKind": "InferencePool",
        "endpointPickerRef": {"name": "epp", "port": 9002},
    }


# (steps, step index, phase) -> weight: the last setWeight at or before the step, 0 before the first,
# 100 once every step is done, 0 once the canary is rolled back, aborted or failed; None without any.
WEIGHT_AT = [
    pytest.param(0, "Running", 0, id="before the first setWeight the canary gets nothing"),
    pytest.param(1, "Running", 10, id="a setWeight step sets it"),
    pytest.param(2, "Paused", 10, id="it holds through the steps after it"),
    pytest.param(4, "Paused", 50, id="the next setWeight replaces it"),
    pytest.param(6, "Succeeded", 100, id="every step done: all traffic"),
    pytest.param(2, "RolledBack", 0, id="a rolled back canary: nothing"),
    pytest.param(4, "Aborted", 0, id="an aborted canary: nothing"),
    pytest.param(2, "Failed", 0, id="a failed canary: nothing"),
]


@pytest.mark.parametrize(("index", "phase", "weight"), WEIGHT_AT)
def test_the_weight_at_each_step(index, phase, weight):
    assert weight_at(parse(WEIGHTED), index, phase) == weight


def test_a_canary_without_set_weight_has_no_weight_so_requests_follow_load():
    canary = Canary((Step(pause=True, pause_seconds=10),), None)
    assert not canary.weighted
    assert weight_at(canary, 0, "Running") is None and weight_at(canary, 1, "Succeeded") is None


# ----------------------------------------------------------------------- through the reconcile pass


def weighted_rollout(steps=WEIGHTED):
    strategy = with_canary(group_strategy(maxUnavailable=1), steps, None)
    cluster, clock = deploy(manifest(replicas=4, roles=[role("serve")], strategy=strategy))
    change_image(cluster, "engine:v2")
    return cluster, clock


def run(cluster, clock, seconds, *, settle=True):
    end = clock.t + seconds
    while clock.t < end:
        reconcile(cluster, CountingRouter(), clock, NS, NAME)
        if settle:
            cluster.settle()
        clock.t += 1


def canary(cluster) -> dict:
    return status(cluster).get("canary") or {}


def test_the_status_carries_the_weight_of_the_step_the_canary_is_at_and_100_when_done():
    cluster, clock = weighted_rollout()
    run(cluster, clock, 10)
    assert (canary(cluster)["stepIndex"], canary(cluster)["weight"]) == (2, 10)
    assert "weightMessage" not in canary(cluster)  # group 3 runs the canary and is Ready
    run(cluster, clock, 60)
    assert (canary(cluster)["stepIndex"], canary(cluster)["phase"], canary(cluster)["weight"]) == (4, "Paused", 50)
    cluster.patch_modelserving(NS, NAME, controls.promote(cluster.get_modelserving(NS, NAME)))
    run(cluster, clock, 30)
    assert (canary(cluster)["phase"], canary(cluster)["weight"]) == ("Succeeded", 100)


def test_an_aborted_canary_has_weight_0():
    cluster, clock = weighted_rollout()
    run(cluster, clock, 10)
    ms = cluster.get_modelserving(NS, NAME)
    cluster.patch_modelserving(NS, NAME, controls.abort(ms, cluster.list_revisions(NS, NAME)))
    run(cluster, clock, 30)
    assert (canary(cluster)["phase"], canary(cluster)["weight"]) == ("Aborted", 0)


def test_a_weight_with_no_ready_canary_instance_says_it_sends_nothing_there():
    cluster, clock = weighted_rollout([{"setWeight": 20}, {"setPartition": "75%"}, {"pause": {}}])
    run(cluster, clock, 1, settle=False)  # the canary group's pods are not Ready yet
    assert canary(cluster)["weight"] == 20
    assert "no instance of the update revision is Ready" in canary(cluster)["weightMessage"]
    run(cluster, clock, 10)
    assert canary(cluster)["weight"] == 20 and "weightMessage" not in canary(cluster)


def test_a_canary_without_set_weight_writes_no_weight():
    cluster, clock = weighted_rollout([{"setPartition": "75%"}, {"pause": {}}])
    run(cluster, clock, 10)
    assert canary(cluster)["phase"] == "Paused" and "weight" not in canary(cluster)


def window(start, canary_started, stable_started):
    return {
        "start": start,
        "end": start + 30,
        "figures": {"canary": {"started": canary_started}, "stable": {"started": stable_started}},
    }


def test_the_observed_split_counts_the_started_requests_of_the_windows_run_wholly_at_the_weight():
    windows = [window(0, 50, 50), window(30, 9, 91), window(60, 11, 89)]
    assert observed_weight(windows, 30) == {"percent": 10.0, "canary": 20, "total": 200, "windows": 2}
    # A window that began before the weight took its value is not counted; none with requests: None.
    assert observed_weight(windows, 40)["windows"] == 1
    assert observed_weight(windows, 95) is None
    assert observed_weight([window(0, 0, 0)], None) is None


def test_the_status_says_since_when_the_weight_holds():
    cluster, clock = weighted_rollout()
    run(cluster, clock, 10)
    since = canary(cluster)["weightSince"]
    run(cluster, clock, 20)
    assert canary(cluster)["weight"] == 10 and canary(cluster)["weightSince"] == since
    run(cluster, clock, 60)
    assert canary(cluster)["weight"] == 50 and canary(cluster)["weightSince"] > since
