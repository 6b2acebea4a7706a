"""spec.traffic: the roles a request passes through, parsed strictly into a frozen value."""

from __future__ import annotations

import copy

import pytest

from controller.core.spec import (
    DEFAULT_TRAFFIC,
    Traffic,
    ValidationError,
    parse_modelserving,
    parse_traffic,
)


def _manifest(traffic=None, dependencies=None):
    container = {"name": "engine", "image": "engine:v1"}
    spec = {
        "replicas": 2,
        "rolloutStrategy": {"type": "RoleRollingUpdate"},
        "template": {
            "roles": [
                {"name": "prefill", "replicas": 2, "entryTemplate": {"spec": {"containers": [container]}}},
                {"name": "decode", "replicas": 2, "entryTemplate": {"spec": {"containers": [container]}}},
            ]
        },
    }
    if dependencies is not None:
        spec["rolloutStrategy"]["roleRollingUpdateConfiguration"] = {
            "coordination": {"maxSkew": "50%", "dependencies": dependencies}
        }
    if traffic is not None:
        spec["traffic"] = traffic
    return {
        "apiVersion": "serving.rolloutui.io/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "pd", "namespace": "default"},
        "spec": copy.deepcopy(spec),
    }


def test_a_manifest_without_traffic_has_the_default_one_hop_to_any_role():
    ms = parse_modelserving(_manifest())
    assert ms.traffic == DEFAULT_TRAFFIC
    assert not ms.traffic.has_path
    assert ms.traffic.affine


def test_a_path_with_scope_and_routing_is_read_into_a_frozen_value():
    ms = parse_modelserving(_manifest({"path": ["prefill", "decode"], "scope": "any", "routing": "blind"}))
    assert ms.traffic == Traffic(("prefill", "decode"), "any", "blind")
    with pytest.raises(AttributeError):
        ms.traffic.routing = "revisionAffine"  # type: ignore[misc]


def test_scope_and_routing_default_to_group_and_revision_affine():
    ms = parse_modelserving(_manifest({"path": ["prefill", "decode"]}))
    assert ms.traffic == Traffic(("prefill", "decode"), "group", "revisionAffine")


@pytest.mark.parametrize(
    ("traffic", "field", "words"),
    [
        ({"pth": ["prefill"]}, "spec.traffic.pth", "unknown field"),
        ({"path": ["prefill", "decoder"]}, "spec.traffic.path[1]", "does not exist"),
        ({"path": ["prefill", "prefill"]}, "spec.traffic.path[1]", "already a hop"),
        ({"path": "prefill"}, "spec.traffic.path", "must be a list"),
        ({"scope": "cluster"}, "spec.traffic.scope", "must be one of group, any"),
        ({"routing": "sticky"}, "spec.traffic.routing", "must be one of revisionAffine, blind"),
        (["prefill"], "spec.traffic", "must be an object"),
    ],
)
def test_a_wrong_traffic_field_is_refused_naming_its_path(traffic, field, words):
    with pytest.raises(ValidationError) as err:
        parse_modelserving(_manifest(traffic))
    assert err.value.field == field
    assert words in err.value.rule


def test_a_path_against_the_declared_call_order_is_refused():
    with pytest.raises(ValidationError) as err:
        parse_modelserving(_manifest({"path": ["prefill", "decode"]}, [{"role": "decode", "dependsOn": ["prefill"]}]))
    assert err.value.field == "spec.traffic.path"
    assert "'decode' depends on 'prefill'" in err.value.rule


def test_a_path_in_the_declared_call_order_is_accepted():
    ms = parse_modelserving(_manifest({"path": ["prefill", "decode"]}, [{"role": "prefill", "dependsOn": ["decode"]}]))
    assert ms.traffic.path == ("prefill", "decode")


def test_a_scenario_override_keeps_the_fields_it_does_not_name():
    base = Traffic(("prefill", "decode"), "group", "revisionAffine")
    out = parse_traffic({"routing": "blind"}, "traffic", ("prefill", "decode"), None, base)
    assert out == Traffic(("prefill", "decode"), "group", "blind")
