"""Kthena's ModelServing admission rules, one row each, for the fields RolloutUI reads.

Every row names the rule it mirrors: a function of Kthena's ModelServing webhook
(``pkg/model-serving-controller/webhook/validator.go``) or a constraint of its CRD's schema
(``workload.serving.volcano.sh_modelservings.yaml``). Manifests use Kthena's own apiVersion. Where
RolloutUI deliberately accepts more than Kthena, the row is an ``ACCEPTED_BEYOND_KTHENA`` one and
says why (``docs/upstream-differences.md`` lists the same)."""

from __future__ import annotations

import copy

import pytest

from controller.core import naming
from controller.core.spec import ValidationError, parse_modelserving
from tests.factories import modelserving, role

ROLES = "spec.template.roles"
GROUP_CFG = "spec.rolloutStrategy.rollingUpdateConfiguration"


def kthena(name: str = "sample", **kw) -> dict:
    """A Kthena ModelServing (Kthena's apiVersion): 2 groups of prefill (1 worker) and decode (2)."""
    kw.setdefault("roles", [role("prefill", workers=1), role("decode", replicas=2)])
    kw.setdefault("replicas", 2)
    return modelserving(name=name, api_version=naming.KTHENA_API_VERSION, **kw)


def no_roles() -> dict:
    manifest = kthena()
    manifest["spec"]["template"]["roles"] = []
    return manifest


def group(**cfg) -> dict:
    return {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": cfg}


ROLE_ROLLING = {"type": "RoleRollingUpdate"}


def with_role(index: int, **fields) -> list[dict]:
    roles = [role("prefill", workers=1), role("decode", replicas=2)]
    roles[index].update(fields)
    return roles


def without(key: str, index: int = 0) -> list[dict]:
    roles = [role("prefill", workers=1), role("decode", replicas=2)]
    del roles[index][key]
    return roles


# (id naming the upstream rule, manifest, refused field, words in the rule)
REFUSED = [
    (
        "validGeneratedNameLength: a name whose generated names start with a digit",
        kthena(name="1sample"),
        "metadata.name",
        "DNS-1035",
    ),
    (
        "validGeneratedNameLength: generated names over 63 characters",
        kthena(name="a" * 50),
        "metadata.name",
        "at most 63",
    ),
    (
        "validGeneratedNameLength: a dotted name (a DNS subdomain, not a label)",
        kthena(name="llm.v1"),
        "metadata.name",
        "DNS-1035",
    ),
    (
        "validateRoleNames: a role name with capitals is not a DNS-1035 label",
        kthena(roles=with_role(1, name="Decode")),
        f"{ROLES}[1].name",
        "DNS-1035",
    ),
    (
        "validateRoleNames: a role name starting with a digit",
        kthena(roles=with_role(1, name="2decode")),
        f"{ROLES}[1].name",
        "DNS-1035",
    ),
    (
        "CRD roles[].name maxLength 12",
        kthena(roles=with_role(1, name="decode-stage2")),
        f"{ROLES}[1].name",
        "at most 12",
    ),
    (
        "CRD roles: names must be unique",
        kthena(roles=with_role(1, name="prefill")),
        f"{ROLES}[1].name",
        "duplicate role name",
    ),
    ("CRD roles minItems 1", no_roles(), ROLES, "at least one"),
    (
        "CRD roles maxItems 4",
        kthena(roles=[role(n) for n in ("a", "b", "c", "d", "e")], replicas=1),
        ROLES,
        "at most 4",
    ),
    (
        "CRD roles[] requires workerReplicas",
        kthena(roles=without("workerReplicas", 1)),
        f"{ROLES}[1].workerReplicas",
        "required",
    ),
    (
        "validateWorkerImages: an entry image with a space",
        kthena(roles=with_role(1, entryTemplate={"spec": {"containers": [{"name": "c", "image": "vllm vllm"}]}})),
        f"{ROLES}[1].entryTemplate.spec.containers[0].image",
        "spaces",
    ),
    (
        "validateWorkerImages: a worker image with a space",
        kthena(roles=with_role(0, workerTemplate={"spec": {"containers": [{"name": "c", "image": "img :1"}]}})),
        f"{ROLES}[0].workerTemplate.spec.containers[0].image",
        "spaces",
    ),
    ("validatorReplicas: negative spec.replicas", kthena(replicas=-1), "spec.replicas", "at least 0"),
    (
        "validatorReplicas: negative role replicas",
        kthena(roles=with_role(1, replicas=-2)),
        f"{ROLES}[1].replicas",
        "at least 0",
    ),
    (
        "validateWorkerReplicas: negative workerReplicas",
        kthena(roles=with_role(1, workerReplicas=-1)),
        f"{ROLES}[1].workerReplicas",
        "at least 0",
    ),
    (
        "validateWorkerReplicas: workerTemplate required when workerReplicas > 0",
        kthena(roles=with_role(1, workerReplicas=2)),
        f"{ROLES}[1].workerTemplate",
        "required",
    ),
    (
        "validateRollingUpdateConfiguration: rollingUpdateConfiguration with RoleRollingUpdate",
        kthena(strategy={**ROLE_ROLLING, "rollingUpdateConfiguration": {"maxUnavailable": 1}}),
        GROUP_CFG,
        "applies only to ServingGroupRollingUpdate",
    ),
    (
        "validateIntOrPercent: a group maxUnavailable that is not a percentage",
        kthena(strategy=group(maxUnavailable="half")),
        f"{GROUP_CFG}.maxUnavailable",
        "half",
    ),
    (
        "validateIntOrPercent: a group maxUnavailable above 100%",
        kthena(strategy=group(maxUnavailable="150%")),
        f"{GROUP_CFG}.maxUnavailable",
        "100%",
    ),
    (
        "validateIntOrPercent: a negative group maxUnavailable",
        kthena(strategy=group(maxUnavailable=-1)),
        f"{GROUP_CFG}.maxUnavailable",
        "-1",
    ),
    (
        "validateIntOrPercent: a number written as a string is not a percentage",
        kthena(strategy=group(maxUnavailable="1")),
        f"{GROUP_CFG}.maxUnavailable",
        "1",
    ),
    (
        "validateIntOrPercent: a negative group partition",
        kthena(strategy=group(partition=-1)),
        f"{GROUP_CFG}.partition",
        "-1",
    ),
    (
        "validateIntOrPercent: a group partition above 100%",
        kthena(strategy=group(partition="101%")),
        f"{GROUP_CFG}.partition",
        "100%",
    ),
    (
        "validateRollingUpdateConfiguration: maxUnavailable cannot be 0",
        kthena(strategy=group(maxUnavailable=0)),
        f"{GROUP_CFG}.maxUnavailable",
        "cannot both be 0",
    ),
    (
        "validateRollingUpdateConfiguration: maxUnavailable 10% of 2 groups scales to 0",
        kthena(strategy=group(maxUnavailable="10%")),
        f"{GROUP_CFG}.maxUnavailable",
        "cannot both be 0",
    ),
    (
        "validateRollingUpdateConfiguration: 50% of 0 groups scales to 0 (0 replicas included)",
        kthena(replicas=0, strategy=group(maxUnavailable="50%")),
        f"{GROUP_CFG}.maxUnavailable",
        "cannot both be 0",
    ),
    (
        "validateMaxUnavailableForRoles: a role partition outside RoleRollingUpdate",
        kthena(roles=with_role(1, partition=1)),
        f"{ROLES}[1].partition",
        "RoleRollingUpdate",
    ),
    (
        "validateMaxUnavailableForRoles: a role partition that is not a percentage",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, partition="one")),
        f"{ROLES}[1].partition",
        "one",
    ),
    (
        "validateMaxUnavailableForRoles: a role maxUnavailable above 100%",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable="120%")),
        f"{ROLES}[1].maxUnavailable",
        "100%",
    ),
    (
        "validateMaxUnavailableForRoles: a role maxUnavailable cannot be 0",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable=0)),
        f"{ROLES}[1].maxUnavailable",
        "cannot both be 0",
    ),
    (
        "validateMaxUnavailableForRoles: a role maxUnavailable of 40% of 2 replicas scales to 0",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable="40%")),
        f"{ROLES}[1].maxUnavailable",
        "cannot both be 0",
    ),
    (
        "validateMaxUnavailableForRoles: a role maxUnavailable above that role's replicas",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable=3)),
        f"{ROLES}[1].maxUnavailable",
        "cannot be greater than the role's replicas (2)",
    ),
    (
        "validateMaxUnavailableForRoles: the CRD's default maxUnavailable 1 is above a role of 0 replicas",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, replicas=0)),
        f"{ROLES}[1].maxUnavailable",
        "cannot be greater than the role's replicas (0)",
    ),
    (
        "validateGangPolicy: minRoleReplicas of a role that does not exist",
        kthena(gang_policy={"router": 1}),
        "spec.template.gangPolicy.minRoleReplicas[router]",
        "does not exist",
    ),
    (
        "validateGangPolicy: minRoleReplicas above the role's replicas",
        kthena(gang_policy={"decode": 3}),
        "spec.template.gangPolicy.minRoleReplicas[decode]",
        "cannot exceed the role's replicas (2)",
    ),
    (
        "validateGangPolicy: negative minRoleReplicas",
        kthena(gang_policy={"decode": -1}),
        "spec.template.gangPolicy.minRoleReplicas[decode]",
        "non-negative",
    ),
    (
        "validateRecoveryPolicyAndRolloutStrategy: ServingGroupRecreate with RoleRollingUpdate",
        kthena(strategy=ROLE_ROLLING, recovery="ServingGroupRecreate"),
        "spec.rolloutStrategy.type",
        "valid pairs",
    ),
    (
        "CRD enum: recoveryPolicy",
        kthena(recovery="Restart"),
        "spec.recoveryPolicy",
        "must be one of",
    ),
    (
        "CRD enum: rolloutStrategy.type",
        kthena(strategy={"type": "Recreate"}),
        "spec.rolloutStrategy.type",
        "must be one of",
    ),
]


@pytest.mark.parametrize("manifest,field,words", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_what_kthenas_admission_refuses_is_refused_naming_the_field(manifest, field, words):
    with pytest.raises(ValidationError) as err:
        parse_modelserving(copy.deepcopy(manifest))
    assert err.value.field == field
    assert words in err.value.rule, err.value.rule


ACCEPTED = [
    (
        "validGeneratedNameLength: 63 characters exactly is a label",
        kthena(name="a" * 50, replicas=1, roles=[role("decode", replicas=2)]),  # a...a-1-decode-2-0
    ),
    (
        "validateMaxUnavailableForRoles: 100% of a role's replicas",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable="100%")),
    ),
    (
        "validateMaxUnavailableForRoles: maxUnavailable equal to the role's replicas",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable=2)),
    ),
    (
        "validateMaxUnavailableForRoles: a role partition with RoleRollingUpdate",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, partition="50%")),
    ),
    (
        "validateMaxUnavailableForRoles: a role's maxUnavailable is not checked outside RoleRollingUpdate",
        kthena(roles=with_role(1, maxUnavailable="most of them")),
    ),
    ("validateGangPolicy: minRoleReplicas up to the role's replicas", kthena(gang_policy={"prefill": 1, "decode": 2})),
    (
        "validateRecoveryPolicyAndRolloutStrategy: ServingGroupRecreate with ServingGroupRollingUpdate",
        kthena(recovery="ServingGroupRecreate"),
    ),
    (
        "validateRecoveryPolicyAndRolloutStrategy: RoleRecreate with RoleRollingUpdate",
        kthena(strategy=ROLE_ROLLING, recovery="RoleRecreate"),
    ),
    ("validatorReplicas: 0 groups", kthena(replicas=0)),
    ("CRD roles[].workerReplicas: 0 for a role without workers", kthena(roles=with_role(1, workerReplicas=0))),
]


@pytest.mark.parametrize("manifest", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_what_kthenas_admission_accepts_is_accepted(manifest):
    assert parse_modelserving(copy.deepcopy(manifest)).roles


# RolloutUI accepts these although Kthena (this snapshot) refuses them or drops the field; each
# says why. docs/upstream-differences.md lists the same.
ACCEPTED_BEYOND_KTHENA = [
    (
        "maxUnavailable 0 with maxSurge 1: RolloutUI has maxSurge (Kthena PR 1626), so the rollout still moves",
        kthena(strategy=group(maxUnavailable=0, maxSurge=1)),
    ),
    (
        "a role maxUnavailable 0 with a role maxSurge: the same, per role",
        kthena(strategy=ROLE_ROLLING, roles=with_role(1, maxUnavailable=0, maxSurge=1)),
    ),
    (
        "InPlaceRollingUpdate: RolloutUI's own strategy type (pods updated in place)",
        kthena(strategy={"type": "InPlaceRollingUpdate"}),
    ),
    (
        "RolloutUI's own apiVersion defaults workerReplicas to 0 (its CRD does)",
        modelserving(name="sample", roles=without("workerReplicas", 1), replicas=2),
    ),
]


@pytest.mark.parametrize("manifest", [r[1] for r in ACCEPTED_BEYOND_KTHENA], ids=[r[0] for r in ACCEPTED_BEYOND_KTHENA])
def test_what_rolloutui_deliberately_accepts_beyond_kthena_is_accepted(manifest):
    assert parse_modelserving(copy.deepcopy(manifest)).roles
