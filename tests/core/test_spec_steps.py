"""The named steps of ``parse_modelserving``, one table each: what each step accepts (with the
defaults it applies) and the field and rule of what it refuses.

``parse_modelserving`` runs them in this order and reports the first rule broken; the whole-manifest
rules are in ``test_validation.py`` and ``test_kthena_admission.py``.
"""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.core.intorpercent import IntOrPercent
from controller.core.spec import (
    GROUP_ROLLING,
    IN_PLACE,
    RECREATE_GROUP,
    RECREATE_NONE,
    RECREATE_ROLE,
    ROLE_ROLLING,
    Budgets,
    Strategy,
    ValidationError,
    _canary,
    _identity,
    _recovery_policy,
    _role,
    _role_budgets,
    _role_name,
    _roles_list,
    _settings,
    _strategy,
    _strategy_type,
    _worker_template,
)
from tests.factories import pod_template, role

ROLES0 = "spec.template.roles[0]"
GROUP_CFG = "spec.rolloutStrategy.rollingUpdateConfiguration"
COORD = "spec.rolloutStrategy.roleRollingUpdateConfiguration.coordination"


def refused(step, *args) -> tuple[str, str]:
    with pytest.raises(ValidationError) as info:
        step(*args)
    return info.value.field, info.value.rule


def ms(**fields) -> dict:
    return {"apiVersion": naming.API_VERSION, "kind": naming.KIND, "metadata": {"name": "llm"}, **fields}


@pytest.mark.parametrize(
    "manifest, expected",
    [
        pytest.param(ms(), (naming.API_VERSION, "llm", "default"), id="a namespace not written is default"),
        pytest.param(
            {**ms(), "apiVersion": naming.KTHENA_API_VERSION, "metadata": {"name": "llm", "namespace": "team-a"}},
            (naming.KTHENA_API_VERSION, "llm", "team-a"),
            id="kthenas api version is read as ours",
        ),
    ],
)
def test_the_identity_step_reads_api_version_name_and_namespace(manifest, expected):
    assert _identity(manifest)[:3] == expected


@pytest.mark.parametrize(
    "manifest, field, words",
    [
        pytest.param([], "(manifest)", "must be an object", id="a list is no manifest"),
        pytest.param({**ms(), "apiVersion": "v1"}, "apiVersion", "got 'v1'", id="another api version is refused"),
        pytest.param({**ms(), "kind": "Deployment"}, "kind", "got 'Deployment'", id="another kind is refused"),
        pytest.param({**ms(), "metadata": None}, "metadata", "required", id="metadata is required"),
        pytest.param(
            ms(metadata={"name": "LLM"}), "metadata.name", "lowercase DNS name", id="an uppercase name is refused"
        ),
        pytest.param(
            ms(metadata={"name": "llm", "namespace": "a.b"}),
            "metadata.namespace",
            "lowercase DNS label",
            id="a namespace with a dot is no dns label",
        ),
    ],
)
def test_the_identity_step_refuses_naming_the_field(manifest, field, words):
    got_field, rule = refused(_identity, manifest)
    assert got_field == field and words in rule


@pytest.mark.parametrize(
    "template, words",
    [
        pytest.param({}, "must list at least one role", id="no roles are refused"),
        pytest.param({"roles": []}, "must list at least one role", id="an empty roles list is refused"),
        pytest.param({"roles": [{}] * 5}, "at most 4 roles, got 5", id="five roles are one too many"),
    ],
)
def test_the_roles_list_step_wants_one_to_four_roles(template, words):
    field, rule = refused(_roles_list, template)
    assert field == "spec.template.roles" and words in rule


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param({}, GROUP_ROLLING, id="no type is a serving group rolling update"),
        pytest.param({"type": ROLE_ROLLING}, ROLE_ROLLING, id="a role rolling update is kept"),
        pytest.param({"type": IN_PLACE}, IN_PLACE, id="an in place update is kept"),
    ],
)
def test_the_strategy_type_step_defaults_to_group_rolling(raw, expected):
    assert _strategy_type(raw) == expected


def test_the_strategy_type_step_refuses_an_unknown_type_naming_the_choices():
    field, rule = refused(_strategy_type, {"type": "Recreate"})
    assert field == "spec.rolloutStrategy.type" and GROUP_ROLLING in rule and "'Recreate'" in rule


@pytest.mark.parametrize(
    "name, seen, words",
    [
        pytest.param(None, set(), "required", id="a role without a name is refused"),
        pytest.param("Decode", set(), "DNS-1035 label", id="an uppercase role name is refused"),
        pytest.param("a-very-long-role", set(), "at most 12 characters", id="a name over twelve characters is refused"),
        pytest.param("decode", {"decode"}, "duplicate role name 'decode'", id="a name seen before is a duplicate"),
    ],
)
def test_the_role_name_step_refuses_naming_the_name_field(name, seen, words):
    field, rule = refused(_role_name, name, ROLES0, seen)
    assert field == f"{ROLES0}.name" and words in rule


def test_the_role_name_step_adds_the_name_to_those_seen():
    seen: set[str] = set()
    assert _role_name("decode", ROLES0, seen) == "decode" and seen == {"decode"}


@pytest.mark.parametrize(
    "worker, workers, expected",
    [
        pytest.param(pod_template(), 1, pod_template(), id="a worker template with workers is kept"),
        pytest.param(None, 0, None, id="no worker template without workers is none"),
        pytest.param(
            {"spec": {"containers": []}}, 0, None, id="kthenas empty worker template without workers is dropped"
        ),
        pytest.param(pod_template(), 0, pod_template(), id="a full worker template without workers is kept"),
    ],
)
def test_the_worker_template_step_keeps_a_template_only_where_it_has_containers(worker, workers, expected):
    assert _worker_template(worker, workers, ROLES0) == expected


@pytest.mark.parametrize(
    "worker, workers, field, words",
    [
        pytest.param(
            None,
            2,
            "workerTemplate",
            "required when workerReplicas > 0 (workerReplicas is 2)",
            id="a worker template is required with workers",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "w"}]}},
            0,
            "workerTemplate.spec.containers[0].image",
            "required",
            id="an unused worker template with containers is still checked",
        ),
    ],
)
def test_the_worker_template_step_refuses_naming_the_field(worker, workers, field, words):
    got_field, rule = refused(_worker_template, worker, workers, ROLES0)
    assert got_field == f"{ROLES0}.{field}" and words in rule


@pytest.mark.parametrize(
    "raw, strategy_type, kthena_api, expected",
    [
        pytest.param({}, GROUP_ROLLING, False, Budgets(), id="no budgets written are none"),
        pytest.param(
            {"maxUnavailable": "x", "maxSurge": "y"},
            GROUP_ROLLING,
            True,
            Budgets(),
            id="kthena ignores unreadable role budgets outside role rolling updates",
        ),
        pytest.param(
            {"maxUnavailable": 1, "partition": "50%"},
            ROLE_ROLLING,
            False,
            Budgets(IntOrPercent(1, False), None, IntOrPercent(50, True)),
            id="a role rolling update reads the role budgets as written",
        ),
    ],
)
def test_the_role_budgets_step_reads_the_budgets_as_written(raw, strategy_type, kthena_api, expected):
    assert _role_budgets(raw, ROLES0, strategy_type, kthena_api, 2) == expected


@pytest.mark.parametrize(
    "raw, strategy_type, replicas, field, words",
    [
        pytest.param(
            {"maxUnavailable": "x"}, GROUP_ROLLING, 2, "maxUnavailable", "", id="our api refuses an unreadable budget"
        ),
        pytest.param(
            {"partition": 1},
            GROUP_ROLLING,
            2,
            "partition",
            "applies only to",
            id="a role partition under a group rolling update is refused",
        ),
        pytest.param({"maxSurge": 1}, IN_PLACE, 2, "maxSurge", "have no surge", id="an in place role cannot surge"),
        pytest.param(
            {"maxUnavailable": "10%"},
            ROLE_ROLLING,
            4,
            "maxUnavailable",
            "cannot both be 0",
            id="role budgets that never move are refused",
        ),
        pytest.param(
            {"maxUnavailable": 3},
            ROLE_ROLLING,
            2,
            "maxUnavailable",
            "role's replicas (2)",
            id="more unavailable than the replicas is refused",
        ),
    ],
)
def test_the_role_budgets_step_refuses_what_the_strategy_type_forbids(raw, strategy_type, replicas, field, words):
    got_field, rule = refused(_role_budgets, raw, ROLES0, strategy_type, False, replicas)
    assert got_field == f"{ROLES0}.{field}" and words in rule


def test_the_role_step_builds_a_role_and_checks_the_names_kthena_generates():
    built = _role(role("decode", replicas=2, workers=1), ROLES0, set(), "llm", 4, GROUP_ROLLING, False)
    assert (built.name, built.replicas, built.worker_replicas, built.pods_per_instance) == ("decode", 2, 1, 2)
    field, rule = refused(_role, role("decode"), ROLES0, set(), "x" * 60, 4, GROUP_ROLLING, False)
    assert field == "metadata.name" and "the names Kthena generates" in rule


def test_the_role_step_wants_worker_replicas_written_on_kthenas_api():
    raw = role("decode")
    del raw["workerReplicas"]
    field, rule = refused(_role, raw, ROLES0, set(), "llm", 1, GROUP_ROLLING, True)
    assert field == f"{ROLES0}.workerReplicas" and "required by Kthena's API" in rule


@pytest.mark.parametrize(
    "raw, strategy_type, expected",
    [
        pytest.param(
            {},
            GROUP_ROLLING,
            Strategy(GROUP_ROLLING, Budgets(), None, False),
            id="nothing written is a group rolling update without budgets",
        ),
        pytest.param(
            {"type": GROUP_ROLLING, "rollingUpdateConfiguration": {"maxSurge": 1}},
            GROUP_ROLLING,
            Strategy(GROUP_ROLLING, Budgets(max_surge=IntOrPercent(1, False)), None, True),
            id="a group rolling update reads its group budgets and that the type is written",
        ),
    ],
)
def test_the_strategy_step_reads_group_budgets_and_whether_the_type_is_written(raw, strategy_type, expected):
    assert _strategy(raw, strategy_type, 4, ("serve",)) == expected


def test_the_strategy_step_reads_the_coordination_of_a_role_rolling_update():
    raw = {"type": ROLE_ROLLING, "roleRollingUpdateConfiguration": {"coordination": {"maxSkew": "10%"}}}
    coordination = _strategy(raw, ROLE_ROLLING, 1, ("prefill", "decode")).coordination
    assert coordination is not None and (coordination.roles, coordination.max_skew_percent) == (
        ("prefill", "decode"),
        10,
    )


@pytest.mark.parametrize(
    "raw, strategy_type, field, words",
    [
        pytest.param(
            {"rollingUpdateConfiguration": {"maxUnavailable": 0}},
            GROUP_ROLLING,
            f"{GROUP_CFG}.maxUnavailable",
            "cannot both be 0",
            id="group budgets that never move are refused",
        ),
        pytest.param(
            {"type": ROLE_ROLLING, "rollingUpdateConfiguration": {"maxSurge": 1}},
            ROLE_ROLLING,
            GROUP_CFG,
            "applies only to ServingGroupRollingUpdate",
            id="group budgets under a role rolling update are refused",
        ),
        pytest.param(
            {"roleRollingUpdateConfiguration": {"coordination": {"maxSkew": "10%"}}},
            ROLE_ROLLING,
            "spec.rolloutStrategy.type",
            "set explicitly",
            id="coordination wants the type written out",
        ),
        pytest.param(
            {"roleRollingUpdateConfiguration": {"coordination": {"maxSkew": "10%"}}},
            GROUP_ROLLING,
            COORD,
            "applies only to RoleRollingUpdate",
            id="coordination under a group rolling update is refused",
        ),
    ],
)
def test_the_strategy_step_refuses_naming_the_field(raw, strategy_type, field, words):
    got_field, rule = refused(_strategy, raw, strategy_type, 4, ("serve",))
    assert got_field == field and words in rule


def test_the_canary_step_reads_no_canary_as_none_and_reports_a_canary_error_as_a_validation_error():
    strategy = Strategy(GROUP_ROLLING, Budgets(), None, False)
    assert _canary({}, strategy) is None
    field, _ = refused(_canary, {"canary": {"steps": "x"}}, strategy)
    assert field.startswith("spec.rolloutStrategy.canary")


@pytest.mark.parametrize(
    "spec, strategy_type, expected",
    [
        pytest.param({}, GROUP_ROLLING, RECREATE_ROLE, id="no policy is role recreate"),
        pytest.param({"recoveryPolicy": RECREATE_NONE}, ROLE_ROLLING, RECREATE_NONE, id="none is kept"),
        pytest.param(
            {"recoveryPolicy": RECREATE_GROUP},
            GROUP_ROLLING,
            RECREATE_GROUP,
            id="group recreate with a group rolling update is kept",
        ),
    ],
)
def test_the_recovery_policy_step_defaults_to_role_recreate(spec, strategy_type, expected):
    assert _recovery_policy(spec, strategy_type) == expected


@pytest.mark.parametrize(
    "spec, field, words",
    [
        pytest.param({"recoveryPolicy": "Always"}, "spec.recoveryPolicy", "got 'Always'", id="an unknown policy"),
        pytest.param(
            {"recoveryPolicy": RECREATE_GROUP},
            "spec.recoveryPolicy",
            "cannot be combined",
            id="group recreate with role rolling names the policy when no strategy is written",
        ),
        pytest.param(
            {"recoveryPolicy": RECREATE_GROUP, "rolloutStrategy": {"type": ROLE_ROLLING}},
            "spec.rolloutStrategy.type",
            "cannot be combined",
            id="group recreate with role rolling names the type when the strategy is written",
        ),
    ],
)
def test_the_recovery_policy_step_refuses_naming_the_field(spec, field, words):
    got_field, rule = refused(_recovery_policy, spec, ROLE_ROLLING if "combined" in words else GROUP_ROLLING)
    assert got_field == field and words in rule


@pytest.mark.parametrize(
    "spec, expected",
    [
        pytest.param({}, (10, False, 30.0, 600, None), id="nothing written takes every default"),
        pytest.param(
            {
                "revisionHistoryLimit": 2,
                "paused": True,
                "drain": {"timeoutSeconds": 5},
                "progressDeadlineSeconds": 60,
                "schedulerName": "volcano",
                "plugins": [],
            },
            (2, True, 5.0, 60, "volcano"),
            id="every setting written is read",
        ),
        pytest.param({"schedulerName": ""}, (10, False, 30.0, 600, None), id="an empty scheduler name is none"),
    ],
)
def test_the_settings_step_reads_the_remaining_settings_with_their_defaults(spec, expected):
    assert tuple(_settings(spec)) == expected


@pytest.mark.parametrize(
    "spec, field",
    [
        pytest.param({"revisionHistoryLimit": -1}, "spec.revisionHistoryLimit", id="a negative history limit"),
        pytest.param({"paused": "yes"}, "spec.paused", id="paused that is no boolean"),
        pytest.param({"drain": {"timeoutSeconds": True}}, "spec.drain.timeoutSeconds", id="a boolean drain timeout"),
        pytest.param({"drain": {"timeoutSeconds": -1}}, "spec.drain.timeoutSeconds", id="a negative drain timeout"),
        pytest.param({"progressDeadlineSeconds": 0}, "spec.progressDeadlineSeconds", id="a zero progress deadline"),
        pytest.param({"schedulerName": 3}, "spec.schedulerName", id="a scheduler name that is no string"),
        pytest.param({"plugins": {}}, "spec.plugins", id="plugins that are no list"),
    ],
)
def test_the_settings_step_refuses_naming_the_field(spec, field):
    assert refused(_settings, spec)[0] == field
