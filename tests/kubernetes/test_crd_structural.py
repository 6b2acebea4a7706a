"""deploy/crd passes the API server's CRD rules (crd_structural.py), and each rule catches a
deliberately broken copy of the CRD, with the API server's kind of message naming the path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from crd_jsonschema import crd_schema
from crd_structural import PER_RULE_COST_LIMIT, cel_rules, rule_cost, schema_violations

SPEC = ("properties", "spec")
TEMPLATE = (*SPEC, "properties", "template")
ROLES = (*TEMPLATE, "properties", "roles")
ROLE = (*ROLES, "items")
MAX_SURGE = (*ROLE, "properties", "maxSurge")


def node(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for part in path:
        schema = schema[part]
    return schema


def broken(path: tuple[str, ...], change) -> dict[str, Any]:
    schema = copy.deepcopy(crd_schema())
    change(node(schema, path))
    return schema


def test_the_crd_schema_passes_every_rule_the_api_server_applies():
    assert schema_violations(crd_schema()) == []


def test_pattern_and_minimum_beside_int_or_string_are_accepted_and_apply_per_type():
    # The API server allows value validations beside x-kubernetes-int-or-string: `pattern` checks
    # string values only, `minimum` integer values only (an integer 30 passes the percent pattern).
    surge = node(crd_schema(), MAX_SURGE)
    assert surge["x-kubernetes-int-or-string"] is True and "type" not in surge
    assert surge["pattern"] and surge["minimum"] == 0
    assert schema_violations(crd_schema()) == []


def test_unbounded_role_names_alone_stay_within_the_budget_because_roles_are_bounded():
    # 4 x 4 comparisons of up to 3 MiB strings: ~4 x 4 x 314,573 = 5e6 < 1e7, as the API server
    # would estimate; it is the unbounded list (1e6 x 1e6 iterations) that is refused.
    schema = broken((*ROLE, "properties", "name"), lambda n: n.pop("maxLength"))
    assert schema_violations(schema) == []
    (cost,) = [rule_cost(r["rule"], s) for p, r, s, _ in cel_rules(schema) if "roles" in p]
    assert 1_000_000 < cost < PER_RULE_COST_LIMIT


def test_the_cel_rules_are_cheap_because_roles_are_bounded():
    costs = {path: rule_cost(rule["rule"], schema) for path, rule, schema, _ in cel_rules(crd_schema())}
    assert costs and max(costs.values()) < PER_RULE_COST_LIMIT / 10, costs
    # The quadratic uniqueness rule: 4 roles x 4 roles x names of at most 12 characters.
    (roles_rule,) = [cost for path, cost in costs.items() if "properties[roles]" in path]
    assert roles_rule < 1_000


BROKEN = {
    "a field without a type": (
        (*SPEC, "properties", "replicas"),
        lambda n: n.pop("type"),
        "properties[spec].properties[replicas].type: Required value: must not be empty for specified object fields",
    ),
    "a type beside x-kubernetes-int-or-string": (
        MAX_SURGE,
        lambda n: n.update(type="string"),
        "properties[maxSurge].type: Forbidden: must be empty if x-kubernetes-int-or-string is true",
    ),
    "an int-or-string anyOf other than integer and string": (
        MAX_SURGE,
        lambda n: n.update(anyOf=[{"type": "integer"}, {"type": "number"}]),
        "properties[maxSurge].anyOf: Forbidden: with x-kubernetes-int-or-string only [integer, string]",
    ),
    "preserve-unknown-fields beside int-or-string": (
        MAX_SURGE,
        lambda n: n.update({"x-kubernetes-preserve-unknown-fields": True}),
        "must be false if x-kubernetes-int-or-string is true",
    ),
    "properties beside additionalProperties": (
        (*TEMPLATE, "properties", "gangPolicy", "properties", "minRoleReplicas"),
        lambda n: n.update(properties={"prefill": {"type": "integer"}}),
        "properties[minRoleReplicas].additionalProperties: Forbidden: additionalProperties and properties are mutual",
    ),
    "additionalProperties false": (
        (*TEMPLATE, "properties", "gangPolicy", "properties", "minRoleReplicas"),
        lambda n: n.update(additionalProperties=False),
        "additionalProperties: Forbidden: additionalProperties cannot be set to false",
    ),
    "preserve-unknown-fields set to false": (
        ("properties", "status"),
        lambda n: n.update({"x-kubernetes-preserve-unknown-fields": False}),
        "properties[status].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
    ),
    "a type inside a junctor": (
        SPEC,
        lambda n: n.update(anyOf=[{"type": "object", "required": ["replicas"]}, {"required": ["template"]}]),
        "properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
    ),
    "a field named only inside a junctor": (
        SPEC,
        lambda n: n.update(oneOf=[{"properties": {"replica": {"minimum": 1}}}]),
        "properties[spec].oneOf[0].properties[replica]: Required value: must be specified outside of the junctor",
    ),
    "metadata restricted beyond name and generateName": (
        ("properties", "metadata"),
        lambda n: n.update(properties={"labels": {"type": "object"}}),
        "properties[metadata]: Forbidden: must not specify anything other than name and generateName",
    ),
    "an array without items": (
        ROLES,
        lambda n: n.pop("items"),
        "properties[roles].items: Required value: must be specified",
    ),
    "a default that its own schema rejects": (
        (*SPEC, "properties", "recoveryPolicy"),
        lambda n: n.update(default="Restart"),
        "properties[recoveryPolicy].default: Invalid value: 'Restart'",
    ),
    "a pattern Go's RE2 cannot run": (
        (*ROLE, "properties", "name"),
        lambda n: n.update(pattern="^(?!kube-)[a-z]+$"),
        "properties[name].pattern: Invalid value: '^(?!kube-)[a-z]+$': look-around",
    ),
    "a CEL rule over an unbounded list": (
        ROLES,
        lambda n: n.pop("maxItems"),
        "properties[roles].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget",
    ),
    "a CEL rule that does not compile": (
        ROLES,
        lambda n: n["x-kubernetes-validations"][0].update(rule="self.all(r, "),
        "properties[roles].x-kubernetes-validations[0].rule: Invalid value: 'self.all(r, ': compilation failed",
    ),
    "a CEL rule without a message": (
        SPEC,
        lambda n: n["x-kubernetes-validations"][0].pop("message"),
        "properties[spec].x-kubernetes-validations[0].message: Required value",
    ),
    "a root that is not an object": (
        (),
        lambda n: n.update(type="array", items={"type": "string"}),
        "openAPIV3Schema.type: Invalid value: 'array': must be object at the root",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=str)
def test_a_deliberately_broken_copy_of_the_crd_is_refused_naming_the_path(case):
    path, change, expected = BROKEN[case]
    violations = schema_violations(broken(path, change))
    assert any(expected in v for v in violations), violations


def test_a_rule_inside_a_list_counts_once_per_element_toward_the_crd_budget():
    schema = copy.deepcopy(crd_schema())
    role = node(schema, ROLE)
    role["x-kubernetes-validations"] = [{"rule": "self.name.size() > 0", "message": "m"}]
    (inner,) = [m for path, _, _, m in cel_rules(schema) if "roles].items.x-kubernetes" in path]
    assert inner == 4  # maxItems of roles
    assert PER_RULE_COST_LIMIT == 10_000_000
