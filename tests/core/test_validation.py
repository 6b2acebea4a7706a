"""API types, defaults and validation of a ModelServing manifest.

Every invalid input must raise ``ValidationError`` whose ``field`` is the exact path of the
offending value and whose ``rule`` says what is wrong. Budgets are int-or-percent values:
``maxUnavailable`` rounds down, ``maxSurge`` and ``partition`` round up.
"""

from __future__ import annotations

import copy
import glob
import os

import pytest
import yaml

from controller.core import naming
from controller.core.intorpercent import IntOrPercent, IntOrPercentError
from controller.core.spec import (
    DEFAULT_REVISION_HISTORY_LIMIT,
    GROUP_ROLLING,
    IN_PLACE,
    RECREATE_ROLE,
    ROLE_ROLLING,
    ValidationError,
    parse_modelserving,
)
from controller.core.strategy import resolve
from tests.paths import EXAMPLE_SCENARIOS, KTHENA_EXAMPLES

from .harness import manifest, role

GROUP_CFG = "spec.rolloutStrategy.rollingUpdateConfiguration"
COORD = "spec.rolloutStrategy.roleRollingUpdateConfiguration.coordination"
EXAMPLES = str(KTHENA_EXAMPLES)
SCENARIOS = str(EXAMPLE_SCENARIOS)


def rejects(m: dict) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        parse_modelserving(m)
    err = info.value
    assert str(err) == f"{err.field}: {err.rule}"
    return err


def group_budgets(replicas: int = 4, **cfg) -> dict:
    return manifest(replicas=replicas, strategy={"type": GROUP_ROLLING, "rollingUpdateConfiguration": cfg})


def role_level(roles: list[dict], *, coordination: dict | None = None, **extra) -> dict:
    strategy: dict = {"type": ROLE_ROLLING}
    if coordination is not None:
        strategy["roleRollingUpdateConfiguration"] = {"coordination": coordination}
    return manifest(replicas=1, roles=roles, strategy=strategy, **extra)


# --------------------------------------------------------------------------------------------
# Int-or-percent parsing and rounding


@pytest.mark.parametrize(
    "raw, value, percent",
    [
        pytest.param(0, 0, False, id="zero-is-an-integer"),
        pytest.param(3, 3, False, id="a-plain-integer-is-an-integer"),
        pytest.param("25%", 25, True, id="a-percent-string-is-a-percentage"),
        pytest.param("100%", 100, True, id="one-hundred-percent-is-allowed"),
        pytest.param(2.0, 2, False, id="a-whole-float-from-yaml-is-an-integer"),
    ],
)
def test_int_or_percent_parses_integers_and_percentages(raw, value, percent):
    parsed = IntOrPercent.parse(raw)
    assert (parsed.value, parsed.percent) == (value, percent)


@pytest.mark.parametrize(
    "raw, words",
    [
        pytest.param(-1, "negative", id="a-negative-integer-is-refused"),
        pytest.param("-10%", "negative", id="a-negative-percentage-is-refused"),
        pytest.param("2", "without quotes", id="a-quoted-number-is-refused-and-told-to-drop-the-quotes"),
        pytest.param("abc", "percentage", id="a-word-is-refused"),
        pytest.param("", "percentage", id="an-empty-string-is-refused"),
        pytest.param(True, "percentage", id="a-boolean-is-not-one"),
        pytest.param(1.5, "percentage", id="a-fractional-number-is-refused"),
        pytest.param("2.5%", "percentage", id="a-fractional-percentage-is-refused"),
        pytest.param([1], "percentage", id="a-list-is-refused"),
    ],
)
def test_int_or_percent_refuses_what_is_neither(raw, words):
    with pytest.raises(IntOrPercentError) as info:
        IntOrPercent.parse(raw)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "raw, total, round_up, expected",
    [
        pytest.param("25%", 6, False, 1, id="maxUnavailable-25-percent-of-6-is-1.5-rounded-down-to-1"),
        pytest.param("25%", 6, True, 2, id="maxSurge-25-percent-of-6-is-1.5-rounded-up-to-2"),
        pytest.param("50%", 5, True, 3, id="partition-50-percent-of-5-is-2.5-rounded-up-to-3"),
        pytest.param("10%", 4, False, 0, id="maxUnavailable-10-percent-of-4-rounds-down-to-0"),
        pytest.param("10%", 4, True, 1, id="maxSurge-10-percent-of-4-rounds-up-to-1"),
        pytest.param("50%", 4, False, 2, id="an-exact-percentage-is-the-same-either-way"),
        pytest.param(3, 4, False, 3, id="an-integer-is-taken-as-is"),
    ],
)
def test_percentages_round_in_the_direction_that_keeps_the_rollout_safe(raw, total, round_up, expected):
    assert IntOrPercent.parse(raw).resolve(total, round_up=round_up) == expected


def test_effective_budgets_round_maxunavailable_down_and_maxsurge_and_partition_up():
    ms = parse_modelserving(group_budgets(6, maxUnavailable="25%", maxSurge="25%", partition="25%"))
    group = resolve(ms).group
    assert (group.max_unavailable.count, group.max_surge.count, group.partition.count) == (1, 2, 2)
    ms = parse_modelserving(group_budgets(5, maxUnavailable="50%", partition="50%"))
    group = resolve(ms).group
    assert (group.max_unavailable.count, group.partition.count) == (2, 3)


def test_role_level_percent_budgets_count_that_roles_instances():
    roles = [role("decode", replicas=6, maxUnavailable="50%", maxSurge="10%", partition="40%")]
    budgets = resolve(parse_modelserving(role_level(roles))).roles["decode"]
    # 50% of 6 = 3 (down), 10% of 6 = 0.6 -> 1 (up), 40% of 6 = 2.4 -> 3 (up)
    assert (budgets.max_unavailable.count, budgets.max_surge.count, budgets.partition.count) == (3, 1, 3)


# --------------------------------------------------------------------------------------------
# Budgets in manifests: field paths


@pytest.mark.parametrize(
    "key, value",
    [
        pytest.param("maxUnavailable", -1, id="negative-group-maxUnavailable"),
        pytest.param("maxUnavailable", "-10%", id="negative-percent-group-maxUnavailable"),
        pytest.param("maxUnavailable", "one", id="non-numeric-group-maxUnavailable"),
        pytest.param("maxUnavailable", "1", id="quoted-number-group-maxUnavailable"),
        pytest.param("maxUnavailable", "150%", id="group-maxUnavailable-above-100-percent"),
        pytest.param("maxSurge", -2, id="negative-group-maxSurge"),
        pytest.param("maxSurge", "lots", id="non-numeric-group-maxSurge"),
        pytest.param("maxSurge", "1", id="quoted-number-group-maxSurge"),
        pytest.param("partition", -1, id="negative-group-partition"),
        pytest.param("partition", "half", id="non-numeric-group-partition"),
        pytest.param("partition", "2", id="quoted-number-group-partition"),
    ],
)
def test_a_bad_group_budget_is_refused_naming_its_field(key, value):
    cfg = {"maxUnavailable": 1, "maxSurge": 1, key: value}
    err = rejects(group_budgets(**cfg))
    assert err.field == f"{GROUP_CFG}.{key}"
    assert repr(value) in err.rule or str(value) in err.rule


@pytest.mark.parametrize(
    "key, value",
    [
        pytest.param("maxUnavailable", -1, id="negative-role-maxUnavailable"),
        pytest.param("maxSurge", "x%", id="non-numeric-role-maxSurge"),
        pytest.param("partition", "3", id="quoted-number-role-partition"),
        pytest.param("partition", "-1%", id="negative-percent-role-partition"),
    ],
)
def test_a_bad_role_budget_is_refused_naming_the_role_index(key, value):
    roles = [role("prefill"), role("decode", replicas=2, **{key: value})]
    err = rejects(role_level(roles))
    assert err.field == f"spec.template.roles[1].{key}"


@pytest.mark.parametrize(
    "cfg, replicas",
    [
        pytest.param({"maxUnavailable": 0}, 4, id="maxUnavailable-0-and-no-surge"),
        pytest.param({"maxUnavailable": 0, "maxSurge": 0}, 4, id="maxUnavailable-0-and-maxSurge-0"),
        pytest.param({"maxUnavailable": "10%"}, 4, id="maxUnavailable-10-percent-of-4-rounds-to-0-and-no-surge"),
        pytest.param({"maxUnavailable": "0%", "maxSurge": "0%"}, 3, id="both-zero-percent"),
    ],
)
def test_both_group_budgets_zero_is_refused(cfg, replicas):
    err = rejects(group_budgets(replicas, **cfg))
    assert err.field == f"{GROUP_CFG}.maxUnavailable"
    assert "both" in err.rule and "0" in err.rule


@pytest.mark.parametrize(
    "cfg",
    [
        pytest.param({"maxUnavailable": 0, "maxSurge": 1}, id="maxUnavailable-0-with-a-surge-of-1"),
        pytest.param(
            {"maxUnavailable": "10%", "maxSurge": "10%"},
            id="maxUnavailable-rounding-to-0-with-a-surge-rounding-up-to-1",
        ),
        pytest.param({"maxUnavailable": 1, "maxSurge": 0}, id="maxUnavailable-1-without-surge"),
    ],
)
def test_one_budget_above_zero_is_enough(cfg):
    parse_modelserving(group_budgets(4, **cfg))


def test_both_role_budgets_zero_is_refused_on_that_role():
    roles = [role("prefill", replicas=2), role("decode", replicas=4, maxUnavailable="20%")]
    err = rejects(role_level(roles))
    assert err.field == "spec.template.roles[1].maxUnavailable"
    assert "both" in err.rule


def test_a_role_with_maxunavailable_0_and_a_surge_is_accepted():
    parse_modelserving(role_level([role("decode", replicas=2, maxUnavailable=0, maxSurge=1)]))


# --------------------------------------------------------------------------------------------
# Counts


@pytest.mark.parametrize(
    "path, mutate",
    [
        pytest.param("spec.replicas", lambda m: m["spec"].update(replicas=-1), id="negative-replicas"),
        pytest.param("spec.replicas", lambda m: m["spec"].update(replicas="3"), id="quoted-replicas"),
        pytest.param("spec.replicas", lambda m: m["spec"].update(replicas=True), id="boolean-replicas"),
        pytest.param(
            "spec.template.roles[0].replicas",
            lambda m: m["spec"]["template"]["roles"][0].update(replicas=-2),
            id="negative-role-replicas",
        ),
        pytest.param(
            "spec.template.roles[0].replicas",
            lambda m: m["spec"]["template"]["roles"][0].update(replicas="two"),
            id="non-numeric-role-replicas",
        ),
        pytest.param(
            "spec.template.roles[0].workerReplicas",
            lambda m: m["spec"]["template"]["roles"][0].update(workerReplicas=-1),
            id="negative-workerReplicas",
        ),
        pytest.param(
            "spec.revisionHistoryLimit",
            lambda m: m["spec"].update(revisionHistoryLimit=-1),
            id="negative-revisionHistoryLimit",
        ),
        pytest.param(
            "spec.drain.timeoutSeconds",
            lambda m: m["spec"].update(drain={"timeoutSeconds": -5}),
            id="negative-drain-timeout",
        ),
        pytest.param(
            "spec.drain.timeoutSeconds",
            lambda m: m["spec"].update(drain={"timeoutSeconds": "30s"}),
            id="non-numeric-drain-timeout",
        ),
        pytest.param("spec.paused", lambda m: m["spec"].update(paused="yes"), id="paused-that-is-not-a-boolean"),
    ],
)
def test_a_bad_count_is_refused_naming_its_field(path, mutate):
    m = manifest()
    mutate(m)
    assert rejects(m).field == path


# --------------------------------------------------------------------------------------------
# Roles


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("Prefill", id="uppercase-letters"),
        pytest.param("1prefill", id="starting-with-a-digit"),
        pytest.param("-prefill", id="starting-with-a-dash"),
        pytest.param("prefill-", id="ending-with-a-dash"),
        pytest.param("pre_fill", id="an-underscore"),
        pytest.param("pre.fill", id="a-dot"),
        pytest.param("abcdefghijklm", id="thirteen-characters-is-one-too-many"),
    ],
)
def test_a_role_name_that_is_not_a_short_dns_1035_label_is_refused(name):
    err = rejects(manifest(roles=[role("ok"), role(name)]))
    assert err.field == "spec.template.roles[1].name"
    assert "DNS-1035" in err.rule and "12" in err.rule


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("abcdefghijkl", id="twelve-characters"),
        pytest.param("p", id="one-letter"),
        pytest.param("d-2", id="letters-digits-and-a-dash"),
    ],
)
def test_a_short_dns_1035_role_name_is_accepted(name):
    assert parse_modelserving(manifest(roles=[role(name)])).role_names == (name,)


def test_a_missing_role_name_is_refused():
    r = role("x")
    del r["name"]
    assert rejects(manifest(roles=[r])).field == "spec.template.roles[0].name"


def test_duplicate_role_names_are_refused_at_the_second_one():
    err = rejects(manifest(roles=[role("prefill"), role("decode"), role("prefill")]))
    assert err.field == "spec.template.roles[2].name"
    assert "duplicate" in err.rule and "prefill" in err.rule


def test_no_roles_is_refused():
    m = manifest()
    m["spec"]["template"]["roles"] = []
    assert rejects(m).field == "spec.template.roles"


def test_a_worker_template_is_required_when_workerreplicas_is_above_zero():
    r = role("decode", workers=2)
    del r["workerTemplate"]
    err = rejects(manifest(roles=[role("prefill"), r]))
    assert err.field == "spec.template.roles[1].workerTemplate"
    assert "workerReplicas" in err.rule and "2" in err.rule


def test_an_unused_empty_worker_template_is_accepted_as_kthena_does():
    # model-serving__prefill-decode-disaggregation.yaml ships workerReplicas: 0 with containers: []
    r = role("decode", workers=0)
    r["workerTemplate"] = {"spec": {"containers": []}}
    parse_modelserving(manifest(roles=[r]))


def test_no_worker_template_is_fine_without_workers():
    r = role("decode", workers=0)
    r.pop("workerTemplate", None)
    parse_modelserving(manifest(roles=[r]))


def test_an_entry_template_without_containers_is_refused():
    r = role("decode")
    r["entryTemplate"]["spec"]["containers"] = []
    assert rejects(manifest(roles=[r])).field == "spec.template.roles[0].entryTemplate.spec.containers"


def test_a_missing_entry_template_is_refused():
    r = role("decode")
    del r["entryTemplate"]
    assert rejects(manifest(roles=[r])).field == "spec.template.roles[0].entryTemplate"


# --------------------------------------------------------------------------------------------
# Strategy and recovery


def test_servinggrouprecreate_with_rolerollingupdate_is_refused_and_says_why():
    err = rejects(role_level([role("prefill"), role("decode")], recoveryPolicy="ServingGroupRecreate"))
    # Kthena's validateRecoveryPolicyAndRolloutStrategy points at the rollout type it was given.
    assert err.field == "spec.rolloutStrategy.type"
    assert "ServingGroupRecreate" in err.rule and "RoleRollingUpdate" in err.rule
    # why: a role replacement would restart the whole group
    assert "whole" in err.rule and "group" in err.rule.lower()


@pytest.mark.parametrize(
    "strategy_type, recovery",
    [
        pytest.param(GROUP_ROLLING, "ServingGroupRecreate", id="group-rolling-with-group-recreate"),
        pytest.param(GROUP_ROLLING, "RoleRecreate", id="group-rolling-with-role-recreate"),
        pytest.param(GROUP_ROLLING, "None", id="group-rolling-with-no-recovery"),
        pytest.param(ROLE_ROLLING, "RoleRecreate", id="role-rolling-with-role-recreate"),
        pytest.param(ROLE_ROLLING, "None", id="role-rolling-with-no-recovery"),
        pytest.param(IN_PLACE, "RoleRecreate", id="in-place-with-role-recreate"),
    ],
)
def test_every_other_strategy_and_recovery_pair_is_accepted(strategy_type, recovery):
    ms = parse_modelserving(manifest(strategy={"type": strategy_type}, recovery=recovery))
    assert (ms.strategy.type, ms.recovery_policy) == (strategy_type, recovery)


def test_an_unknown_strategy_type_is_refused():
    assert rejects(manifest(strategy={"type": "Recreate"})).field == "spec.rolloutStrategy.type"


def test_an_unknown_recovery_policy_is_refused():
    assert rejects(manifest(recovery="Restart")).field == "spec.recoveryPolicy"


def test_group_rolling_update_configuration_is_refused_for_role_level_types():
    m = manifest(strategy={"type": ROLE_ROLLING, "rollingUpdateConfiguration": {"maxUnavailable": 1}})
    assert rejects(m).field == GROUP_CFG


def test_a_role_partition_is_refused_for_group_rolling_update():
    err = rejects(manifest(roles=[role("decode", replicas=2, partition=1)]))
    assert err.field == "spec.template.roles[0].partition"


# --------------------------------------------------------------------------------------------
# Coordination


def coordinated(coordination: dict) -> dict:
    return role_level([role("a"), role("b"), role("c")], coordination=coordination)


@pytest.mark.parametrize(
    "coordination, path, words",
    [
        pytest.param(
            {"roles": ["a", "x"], "maxSkew": "10%"},
            f"{COORD}.roles[1]",
            "'x' does not exist",
            id="a-coordinated-role-that-does-not-exist",
        ),
        pytest.param(
            {"maxSkew": "10%", "dependencies": [{"role": "x", "dependsOn": ["a"]}]},
            f"{COORD}.dependencies[0].role",
            "'x'",
            id="a-dependency-of-a-role-that-does-not-exist",
        ),
        pytest.param(
            {"maxSkew": "10%", "dependencies": [{"role": "a", "dependsOn": ["b", "zz"]}]},
            f"{COORD}.dependencies[0].dependsOn[1]",
            "'zz'",
            id="a-dependency-on-a-role-that-does-not-exist",
        ),
        pytest.param(
            {"roles": ["a", "b"], "maxSkew": "10%", "dependencies": [{"role": "a", "dependsOn": ["c"]}]},
            f"{COORD}.dependencies[0].dependsOn[0]",
            "'c'",
            id="a-dependency-on-a-role-outside-the-coordinated-set",
        ),
        pytest.param(
            {"maxSkew": "10%", "dependencies": [{"role": "a", "dependsOn": ["a"]}]},
            f"{COORD}.dependencies[0].dependsOn[0]",
            "itself",
            id="a-self-edge",
        ),
        pytest.param(
            {"maxSkew": "10%", "dependencies": [{"role": "b", "dependsOn": ["c", "b"]}]},
            f"{COORD}.dependencies[0].dependsOn[1]",
            "itself",
            id="a-self-edge-after-another-edge",
        ),
        pytest.param(
            {"maxSkew": "10%", "dependencies": [{"role": "a", "dependsOn": ["b"]}, {"role": "b", "dependsOn": ["a"]}]},
            f"{COORD}.dependencies",
            "cycle",
            id="a-two-role-cycle",
        ),
        pytest.param(
            {
                "maxSkew": "10%",
                "dependencies": [
                    {"role": "a", "dependsOn": ["b"]},
                    {"role": "b", "dependsOn": ["c"]},
                    {"role": "c", "dependsOn": ["a"]},
                ],
            },
            f"{COORD}.dependencies",
            "cycle",
            id="a-three-role-cycle",
        ),
        pytest.param({"maxSkew": 10}, f"{COORD}.maxSkew", "percentage", id="maxSkew-as-a-plain-integer"),
        pytest.param({"maxSkew": "10"}, f"{COORD}.maxSkew", "percentage", id="maxSkew-as-a-quoted-integer"),
        pytest.param({"maxSkew": "ten%"}, f"{COORD}.maxSkew", "percentage", id="maxSkew-that-is-not-a-number"),
        pytest.param({"maxSkew": "-5%"}, f"{COORD}.maxSkew", "negative", id="maxSkew-negative"),
        pytest.param({"maxSkew": "0%"}, f"{COORD}.maxSkew", "0%", id="maxSkew-of-zero-allows-no-progress"),
        pytest.param({"roles": ["a"]}, f"{COORD}.maxSkew", "required", id="maxSkew-missing"),
    ],
)
def test_bad_coordination_is_refused_naming_the_field(coordination, path, words):
    err = rejects(coordinated(coordination))
    assert err.field == path
    assert words in err.rule


def test_a_dependency_cycle_error_spells_out_the_cycle():
    err = rejects(
        coordinated(
            {
                "maxSkew": "10%",
                "dependencies": [
                    {"role": "a", "dependsOn": ["b"]},
                    {"role": "b", "dependsOn": ["c"]},
                    {"role": "c", "dependsOn": ["a"]},
                ],
            }
        )
    )
    assert "a -> b -> c -> a" in err.rule


def test_an_acyclic_dependency_chain_is_accepted():
    ms = parse_modelserving(
        coordinated(
            {"maxSkew": "10%", "dependencies": [{"role": "a", "dependsOn": ["b"]}, {"role": "b", "dependsOn": ["c"]}]}
        )
    )
    coordination = ms.strategy.coordination
    assert coordination.max_skew_percent == 10
    assert coordination.depends_on("a") == ("b",) and coordination.depends_on("c") == ()
    assert coordination.roles == ("a", "b", "c")  # all roles when none are listed


def test_a_diamond_of_dependencies_is_not_a_cycle():
    parse_modelserving(
        coordinated(
            {
                "maxSkew": "25%",
                "dependencies": [{"role": "a", "dependsOn": ["b", "c"]}, {"role": "b", "dependsOn": ["c"]}],
            }
        )
    )


def test_coordination_is_refused_for_group_rolling_update():
    m = manifest(
        roles=[role("a"), role("b")],
        strategy={"type": GROUP_ROLLING, "roleRollingUpdateConfiguration": {"coordination": {"maxSkew": "10%"}}},
    )
    assert rejects(m).field == COORD


# --------------------------------------------------------------------------------------------
# Defaults


def test_defaults_are_those_of_domain_md():
    m = {
        "apiVersion": naming.API_VERSION,
        "kind": "ModelServing",
        "metadata": {"name": "ms"},
        "spec": {
            "template": {
                "roles": [
                    {"name": "serve", "entryTemplate": {"spec": {"containers": [{"name": "engine", "image": "e:1"}]}}}
                ]
            }
        },
    }
    ms = parse_modelserving(m)
    assert ms.namespace == "default"
    assert ms.replicas == 1
    (serve,) = ms.roles
    assert (serve.replicas, serve.worker_replicas, serve.worker_template) == (1, 0, None)
    assert ms.strategy.type == GROUP_ROLLING
    assert ms.recovery_policy == RECREATE_ROLE
    assert ms.revision_history_limit == DEFAULT_REVISION_HISTORY_LIMIT == 10
    assert ms.paused is False
    effective = resolve(ms)
    group = effective.group
    assert (group.max_unavailable.count, group.max_surge.count, group.partition.count) == (1, 0, 0)
    role_budgets = effective.roles["serve"]
    assert (role_budgets.max_unavailable.count, role_budgets.max_surge.count, role_budgets.partition.count) == (1, 0, 0)


def test_the_additions_to_kthenas_api_are_read():
    m = manifest(
        replicas=3,
        strategy={"type": GROUP_ROLLING, "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1}},
        paused=True,
        revisionHistoryLimit=3,
        drain={"timeoutSeconds": 45},
    )
    ms = parse_modelserving(m)
    assert (ms.paused, ms.revision_history_limit, ms.drain_timeout_seconds) == (True, 3, 45.0)
    assert resolve(ms).group.max_surge.count == 1
    assert parse_modelserving(manifest(strategy={"type": IN_PLACE})).strategy.type == IN_PLACE


def test_an_unknown_api_version_is_refused():
    m = manifest()
    m["apiVersion"] = "apps/v1"
    assert rejects(m).field == "apiVersion"


# --------------------------------------------------------------------------------------------
# Real manifests


def _modelserving_docs(path: str) -> list[dict]:
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") == "ModelServing"]


def _example_params():
    params = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml"))):
        name = os.path.basename(path)[: -len(".yaml")]
        params.append(pytest.param(path, id=f"kthena-example-{name}-parses"))
    return params


def test_the_kthena_examples_are_all_there():
    assert len(glob.glob(os.path.join(EXAMPLES, "*.yaml"))) >= 20


@pytest.mark.parametrize("path", _example_params())
@pytest.mark.parametrize(
    "api_version",
    [pytest.param(naming.KTHENA_API_VERSION, id="as-kthena"), pytest.param(naming.API_VERSION, id="as-rolloutui")],
)
def test_every_kthena_example_modelserving_parses_under_both_api_versions(path, api_version):
    docs = _modelserving_docs(path)
    assert len(docs) == 1, "take the ModelServing document of each file"
    doc = copy.deepcopy(docs[0])
    assert doc["apiVersion"] == naming.KTHENA_API_VERSION
    doc["apiVersion"] = api_version
    ms = parse_modelserving(doc)
    assert ms.replicas == int(doc["spec"].get("replicas", 1))
    assert ms.role_names == tuple(r["name"] for r in doc["spec"]["template"]["roles"])


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=f"scenario-{os.path.basename(p)[:-5]}-parses")
        for p in sorted(glob.glob(os.path.join(SCENARIOS, "*.yaml")))
    ],
)
def test_every_example_scenarios_modelserving_parses(path):
    with open(path) as f:
        scenario = yaml.safe_load(f)
    if "inferenceService" in scenario:
        pytest.skip("an InferenceService scenario: tests/sim/test_sim_kserve_handover.py runs it")
    ms = parse_modelserving(scenario["modelServing"])
    assert ms.name == scenario["modelServing"]["metadata"]["name"]
