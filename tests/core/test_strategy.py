"""The effective rollout strategy, with the source of every value.

Highest first: the multi-node override (opt-in, roles with workers), the object's own values, the
cluster default (only in Standard deployment mode), the built-in default.
"""

from __future__ import annotations

import pytest

from controller.core.intorpercent import IntOrPercent
from controller.core.spec import GROUP_ROLLING, ROLE_ROLLING, parse_modelserving
from controller.core.strategy import BUILTIN, CLUSTER, MULTI_NODE, OBJECT, ClusterSettings, resolve

from .harness import manifest, role

P = IntOrPercent.parse


def effective(m, settings=None):
    return resolve(parse_modelserving(m), settings)


def triple(budgets):
    return {
        "maxUnavailable": (
            budgets.max_unavailable.written,
            budgets.max_unavailable.count,
            budgets.max_unavailable.source,
        ),
        "maxSurge": (budgets.max_surge.written, budgets.max_surge.count, budgets.max_surge.source),
        "partition": (budgets.partition.written, budgets.partition.count, budgets.partition.source),
    }


def test_with_nothing_set_every_value_is_the_builtin_default():
    eff = effective(manifest(replicas=4))
    assert triple(eff.group) == {
        "maxUnavailable": (1, 1, BUILTIN),
        "maxSurge": (0, 0, BUILTIN),
        "partition": (0, 0, BUILTIN),
    }
    assert eff.type == GROUP_ROLLING


def test_the_cluster_default_applies_in_standard_mode_and_says_so():
    settings = ClusterSettings(deployment_mode="Standard", default_max_unavailable=P("50%"), default_max_surge=P(1))
    eff = effective(manifest(replicas=4), settings)
    assert triple(eff.group) == {
        "maxUnavailable": ("50%", 2, CLUSTER),
        "maxSurge": (1, 1, CLUSTER),
        "partition": (0, 0, BUILTIN),
    }


@pytest.mark.parametrize(
    "mode", [pytest.param("RawDeployment", id="raw-deployment-mode"), pytest.param("Serverless", id="serverless-mode")]
)
def test_the_cluster_default_is_ignored_outside_standard_mode(mode):
    settings = ClusterSettings(deployment_mode=mode, default_max_unavailable=P(2), default_max_surge=P(1))
    eff = effective(manifest(replicas=4), settings)
    assert triple(eff.group)["maxUnavailable"] == (1, 1, BUILTIN)
    assert triple(eff.group)["maxSurge"] == (0, 0, BUILTIN)


def test_the_objects_own_values_win_over_the_cluster_default():
    settings = ClusterSettings(default_max_unavailable=P(3), default_max_surge=P(2))
    m = manifest(replicas=4, strategy={"rollingUpdateConfiguration": {"maxUnavailable": "25%", "partition": 2}})
    eff = effective(m, settings)
    assert triple(eff.group) == {
        "maxUnavailable": ("25%", 1, OBJECT),
        "maxSurge": (2, 2, CLUSTER),
        "partition": (2, 2, OBJECT),
    }


def test_each_value_keeps_its_own_source():
    settings = ClusterSettings(default_max_surge=P("50%"))
    m = manifest(replicas=4, strategy={"rollingUpdateConfiguration": {"maxUnavailable": 2}})
    eff = effective(m, settings)
    assert [v[2] for v in triple(eff.group).values()] == [OBJECT, CLUSTER, BUILTIN]


def test_partition_is_never_taken_from_the_cluster():
    settings = ClusterSettings(default_max_unavailable=P(2))
    assert effective(manifest(replicas=4), settings).group.partition.source == BUILTIN


def test_the_multi_node_override_is_opt_in():
    m = manifest(
        replicas=4, roles=[role("decode", workers=2)], strategy={"rollingUpdateConfiguration": {"maxUnavailable": 2}}
    )
    eff = effective(m, ClusterSettings(multi_node_override=False))
    assert triple(eff.group)["maxUnavailable"] == (2, 2, OBJECT)


def test_the_multi_node_override_wins_over_the_object_for_roles_with_workers():
    m = manifest(
        replicas=4, roles=[role("decode", workers=2)], strategy={"rollingUpdateConfiguration": {"maxUnavailable": 2}}
    )
    eff = effective(m, ClusterSettings(multi_node_override=True))
    assert triple(eff.group)["maxUnavailable"] == (0, 0, MULTI_NODE)
    assert triple(eff.group)["maxSurge"] == ("100%", 4, MULTI_NODE)
    assert triple(eff.group)["partition"] == (0, 0, BUILTIN)


def test_the_multi_node_override_leaves_single_node_roles_alone():
    m = manifest(
        replicas=4, roles=[role("serve", workers=0)], strategy={"rollingUpdateConfiguration": {"maxUnavailable": 2}}
    )
    eff = effective(m, ClusterSettings(multi_node_override=True))
    assert triple(eff.group)["maxUnavailable"] == (2, 2, OBJECT)
    assert eff.roles["serve"].max_unavailable.source == BUILTIN


def test_at_role_level_the_override_applies_only_to_the_role_with_workers():
    roles = [role("prefill", replicas=2, maxUnavailable=1), role("decode", replicas=3, workers=1, maxUnavailable=2)]
    eff = effective(
        manifest(replicas=1, roles=roles, strategy={"type": ROLE_ROLLING}), ClusterSettings(multi_node_override=True)
    )
    assert triple(eff.roles["prefill"])["maxUnavailable"] == (1, 1, OBJECT)
    assert triple(eff.roles["decode"])["maxUnavailable"] == (0, 0, MULTI_NODE)
    assert triple(eff.roles["decode"])["maxSurge"] == ("100%", 3, MULTI_NODE)


def test_role_budgets_resolve_against_that_roles_replicas_with_sources():
    roles = [role("decode", replicas=4, maxUnavailable="50%")]
    eff = effective(
        manifest(replicas=2, roles=roles, strategy={"type": ROLE_ROLLING}), ClusterSettings(default_max_surge=P("25%"))
    )
    assert triple(eff.roles["decode"]) == {
        "maxUnavailable": ("50%", 2, OBJECT),
        "maxSurge": ("25%", 1, CLUSTER),
        "partition": (0, 0, BUILTIN),
    }


def test_the_json_form_carries_value_count_and_source_for_the_dashboard():
    eff = effective(manifest(replicas=4, strategy={"rollingUpdateConfiguration": {"maxUnavailable": "50%"}}))
    data = eff.to_json()
    assert data["type"] == GROUP_ROLLING
    assert data["group"]["maxUnavailable"] == {"value": "50%", "count": 2, "source": OBJECT}
    assert data["group"]["maxSurge"] == {"value": 0, "count": 0, "source": BUILTIN}
    assert data["roles"]["serve"]["total"] == 1


def test_the_status_written_by_the_planner_shows_the_strategy_with_sources():
    from controller.core.observe import observe
    from controller.core.planner import plan
    from controller.core.revisions import History

    ms = parse_modelserving(manifest(replicas=4))
    p = plan(ms, History([]), observe([]), 0.0, settings=ClusterSettings(default_max_surge=P(1)))
    assert p.status["strategy"]["group"]["maxSurge"] == {"value": 1, "count": 1, "source": CLUSTER}


def test_a_cluster_default_that_would_stall_the_rollout_falls_back_to_one_unavailable():
    # 10% of 4 rounds down to 0 and there is no surge: a default alone must not deadlock.
    eff = effective(manifest(replicas=4), ClusterSettings(default_max_unavailable=P("10%")))
    assert eff.group.max_unavailable.count == 1
    assert eff.group.max_unavailable.source == CLUSTER
