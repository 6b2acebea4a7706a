"""Cluster settings: one parser for every source, a scenario's clusterSettings reach every pass,
and the trace's frames then carry each effective budget with its source."""

from __future__ import annotations

import copy

import pytest
import yaml

from controller.core.intorpercent import IntOrPercent
from controller.core.spec import ValidationError
from controller.core.strategy import ClusterSettings, parse_cluster_settings
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import ScenarioError, parse_scenario
from tests.paths import EXAMPLE_SCENARIOS


def test_every_key_is_optional_and_the_defaults_are_standard_mode_without_defaults_or_override():
    assert parse_cluster_settings({}) == ClusterSettings()
    assert parse_cluster_settings(None) == ClusterSettings()


def test_the_scenario_shape_is_read_as_written():
    parsed = parse_cluster_settings(
        {
            "deploymentMode": "Standard",
            "defaultRollout": {"maxSurge": 1, "maxUnavailable": "25%"},
            "multiNodeOverride": True,
        }
    )
    assert parsed == ClusterSettings("Standard", IntOrPercent(25, True), IntOrPercent(1, False), True)
    assert parse_cluster_settings(parsed.to_json()) == parsed


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"deploymentMode": "standard"}, "clusterSettings.deploymentMode"),
        ({"defaultRollout": {"maxSurge": "2"}}, "clusterSettings.defaultRollout.maxSurge"),
        ({"defaultRollout": {"maxUnavailable": "150%"}}, "clusterSettings.defaultRollout.maxUnavailable"),
        ({"defaultRollout": {"partition": 1}}, "clusterSettings.defaultRollout.partition"),
        ({"multiNodeOverride": "yes"}, "clusterSettings.multiNodeOverride"),
        ({"maxSurge": 1}, "clusterSettings.maxSurge"),
    ],
    ids=[
        "a-mode-in-the-wrong-case",
        "a-quoted-number-in-a-manifest-shape",
        "more-than-100-percent-unavailable",
        "partition-is-never-a-cluster-default",
        "a-string-flag-in-a-manifest-shape",
        "a-budget-outside-defaultRollout",
    ],
)
def test_a_bad_value_is_refused_naming_the_field(raw, field):
    with pytest.raises(ValidationError) as err:
        parse_cluster_settings(raw)
    assert err.value.field == field


def test_text_sources_read_numbers_flags_and_empty_strings_as_an_operator_means_them():
    parsed = parse_cluster_settings(
        {"deploymentMode": "", "defaultRollout": {"maxSurge": "2", "maxUnavailable": ""}, "multiNodeOverride": "1"},
        text=True,
    )
    assert parsed == ClusterSettings("Standard", None, IntOrPercent(2, False), True)


def scenario_with(settings: dict | None) -> dict:
    doc = yaml.safe_load((EXAMPLE_SCENARIOS / "group-rolling.yaml").read_text())
    doc = copy.deepcopy(doc)
    doc["modelServing"]["spec"]["rolloutStrategy"] = {"type": "ServingGroupRollingUpdate"}  # no budgets of its own
    if settings is not None:
        doc["clusterSettings"] = settings
    return doc


def test_a_scenarios_cluster_default_surge_replaces_groups_with_surge_and_frames_say_it_came_from_the_cluster():
    trace = run_scenario(parse_scenario(scenario_with({"defaultRollout": {"maxSurge": 1, "maxUnavailable": 0}})))
    assert trace["converged"]
    group = trace["frames"][-1]["strategy"]["group"]
    assert group["maxSurge"] == {"value": 1, "count": 1, "source": "cluster"}
    assert group["maxUnavailable"] == {"value": 0, "count": 0, "source": "cluster"}
    assert group["partition"]["source"] == "builtin"
    # Surge instead of unavailability: some frame shows a surge instance.
    assert any(inst["surge"] for f in trace["frames"] for inst in f["instances"])


def test_outside_standard_mode_the_cluster_defaults_do_not_apply_and_builtin_ones_do():
    trace = run_scenario(
        parse_scenario(scenario_with({"deploymentMode": "Serverless", "defaultRollout": {"maxSurge": 1}}))
    )
    assert trace["frames"][-1]["strategy"]["group"]["maxSurge"]["source"] == "builtin"


def test_without_cluster_settings_frames_carry_no_strategy_so_existing_traces_are_unchanged():
    trace = run_scenario(parse_scenario(scenario_with(None)))
    assert all("strategy" not in f for f in trace["frames"])


def test_a_bad_cluster_setting_in_a_scenario_is_a_one_line_error_naming_the_field():
    with pytest.raises(ScenarioError, match=r"^clusterSettings\.defaultRollout\.maxSurge: "):
        parse_scenario(scenario_with({"defaultRollout": {"maxSurge": "lots"}}))
