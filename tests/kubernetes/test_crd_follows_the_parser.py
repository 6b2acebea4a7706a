"""The ModelServing CRD's schema and the controller's parser (controller/core/spec.py, canary.py) stay
in step.

On a real API server a structural schema prunes every field it does not name before it stores the
object (Kubernetes: "Specifying a structural schema", field pruning), so a field the controller
reads but the CRD lacks is lost without a word on Kubernetes while the embedded simulator keeps it.
These tests find such fields from the parser itself:

- the parser reads a manifest whose dicts note every key looked up (``.get``, ``[]``, ``in``); a
  lookup records the key whether or not the manifest writes it, so a field added to the parser is
  caught as soon as a sample reaches its branch, without anyone adding it to a sample;
- the canary parser refuses unknown fields, so its lists of allowed fields are compared with the
  CRD's properties object by object, and its value lists with the CRD's enums;
- a Hypothesis property: every canary the parser accepts is stored whole by the schema (nothing
  refused, nothing pruned), and a table of values the parser refuses that the schema refuses too,
  naming the same field.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from crd_jsonschema import cel_causes, crd_schema, validator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.core import canary as canary_parser
from controller.core import gang, naming, revisions
from controller.core.spec import ValidationError, canary_of, headline, parse_modelserving, runtime_fields

CANARY = "spec.rolloutStrategy.canary"


# ------------------------------------------------------------------------ recording what is read


class _RecordingDict(dict):
    """A manifest object that notes the path of every key the parser looks up."""

    def __init__(self, raw: dict[str, Any], path: str, seen: set[str]) -> None:
        super().__init__({k: _recording(v, _join(path, k), seen) for k, v in raw.items()})
        self._path = path
        self._seen = seen

    def _note(self, key: Any) -> None:
        if isinstance(key, str):
            self._seen.add(_join(self._path, key))

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key: Any) -> bool:
        self._note(key)
        return super().__contains__(key)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _recording(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, dict):
        return _RecordingDict(value, path, seen)
    if isinstance(value, list):
        return [_recording(item, f"{path}[]", seen) for item in value]
    return value


def spec_fields_read(manifest: dict[str, Any]) -> set[str]:
    """The ``spec.…`` paths the controller's readers of a manifest look up in ``manifest`` (list
    items as ``[]``): the parser, the lenient readers beside it, the revision projection and the
    gang scheduling's PodGroups."""
    seen: set[str] = set()
    parse_modelserving(_recording(copy.deepcopy(manifest), "", seen))
    readers = (
        headline,
        canary_of,
        runtime_fields,
        lambda m: gang.podgroups(parse_modelserving(m)),
        lambda m: revisions.project(m["spec"]),
    )
    for reader in readers:
        reader(_recording(copy.deepcopy(manifest), "", seen))
    return {path for path in seen if path.startswith("spec.")}


def schema_keeps(path: str, schema: dict[str, Any]) -> bool:
    """Whether the CRD's ``schema`` keeps a value at ``path`` (it names the field, or a map or an
    x-kubernetes-preserve-unknown-fields node above it holds it)."""
    node = schema
    for part in path.replace("[]", ".[]").split("."):
        if node.get("x-kubernetes-preserve-unknown-fields") is True:
            return True
        if part == "[]":
            node = node.get("items") or {}
        elif part in (node.get("properties") or {}):
            node = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return False
    return True


def schema_node(path: str) -> dict[str, Any]:
    node = crd_schema()
    for part in path.replace("[]", ".[]").split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


# ------------------------------------------------------------------------------------ manifests


def pod(image: str = "engine:v1") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "chat"}}, "spec": {"containers": [{"name": "engine", "image": image}]}}


def group_rolling_with_every_field() -> dict[str, Any]:
    """A ServingGroupRollingUpdate reaching every branch of the parser: canary steps of both kinds,
    an analysis with every field and the prometheus provider, a check of every kind, verification
    with a body and a port, gang policy, drain, plugins."""
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "ModelServing",
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {
            "replicas": 4,
            "schedulerName": "volcano",
            "plugins": [{"name": "gang", "type": "BuiltIn", "config": {"x": 1}, "scope": {"target": "All"}}],
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": "200%"},
                "canary": {
                    "steps": [
                        {"setPartition": "75%"},
                        {"setWeight": 10},
                        {"pause": {"durationSeconds": 30}},
                        {"pause": {}},
                    ],
                    "trafficRouting": {
                        "gatewayAPI": {
                            "httpRoute": "chat-route",
                            "backendKind": "InferencePool",
                            "endpointPickerRef": {"name": "chat-epp", "port": 9002},
                        }
                    },
                    "analysis": {
                        "intervalSeconds": 30,
                        "settleSeconds": 12.5,
                        "minRequests": 5,
                        "failureLimit": 2,
                        "inconclusiveLimit": 4,
                        "minPassWindows": 2,
                        "onFailure": "Rollback",
                        "provider": "prometheus",
                        "metrics": [
                            {"metric": "errorRate", "max": 0.05},
                            {"metric": "latencyP99Ms", "maxRatioToStable": 1.5},
                            {"metric": "latencyP50Ms", "maxDeltaToStable": 20},
                            {"metric": "feedbackMean", "min": 0.5},
                        ],
                        "queries": {
                            "requests": "requests",
                            "started": "started",
                            "durationP99Ms": "duration",
                            "errorRate": "errors",
                            "latencyP99Ms": "p99",
                            "latencyP50Ms": "p50",
                            "feedbackMean": "feedback",
                        },
                    },
                },
            },
            "template": {
                "restartGracePeriodSeconds": 30,
                "gangPolicy": {"minRoleReplicas": {"prefill": 1}},
                "roles": [
                    {
                        "name": "prefill",
                        "replicas": 2,
                        "workerReplicas": 1,
                        "entryTemplate": pod(),
                        "workerTemplate": pod(),
                        "maxUnavailable": "50%",
                        "maxSurge": 1,
                    },
                    {"name": "decode", "replicas": 1, "entryTemplate": pod(), "workerTemplate": {"spec": {}}},
                ],
            },
            "recoveryPolicy": "ServingGroupRecreate",
            "revisionHistoryLimit": 5,
            "paused": True,
            "verification": {
                "path": "/v1/completions",
                "method": "POST",
                "body": {"prompt": "hi"},
                "expectStatus": 200,
                "timeoutSeconds": 2.5,
                "port": 8000,
            },
            "progressDeadlineSeconds": 900,
            "drain": {"timeoutSeconds": 2.5},
        },
    }


def role_rolling_with_coordination() -> dict[str, Any]:
    manifest = group_rolling_with_every_field()
    spec = manifest["spec"]
    spec["recoveryPolicy"] = "RoleRecreate"
    spec["rolloutStrategy"] = {
        "type": "RoleRollingUpdate",
        "roleRollingUpdateConfiguration": {
            "coordination": {
                "roles": ["prefill", "decode"],
                "maxSkew": "50%",
                "dependencies": [{"role": "decode", "dependsOn": ["prefill"]}],
            }
        },
    }
    spec["template"]["roles"][1].update({"maxUnavailable": 1, "maxSurge": "200%", "partition": "100%"})
    return manifest


def in_place_under_kthenas_api_version() -> dict[str, Any]:
    manifest = role_rolling_with_coordination()
    manifest["apiVersion"] = naming.KTHENA_API_VERSION
    manifest["spec"]["rolloutStrategy"] = {"type": "InPlaceRollingUpdate"}
    for role in manifest["spec"]["template"]["roles"]:
        role.setdefault("workerReplicas", 0)
        role["maxSurge"] = 0
    return manifest


SAMPLES = {
    "group rolling update with every field": group_rolling_with_every_field,
    "role rolling update with coordination": role_rolling_with_coordination,
    "in-place rolling update under Kthena's apiVersion": in_place_under_kthenas_api_version,
}


def stored_whole_errors(manifest: dict[str, Any]) -> list[str]:
    """What the API server would refuse (schema, then CEL) or prune, each as ``field: message``
    with the parser's field syntax (``steps[0].setPartition``)."""
    errors = [
        f"{_field(e.absolute_path)}: {e.message}"
        for e in sorted(validator(True).iter_errors(manifest), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if errors:
        return errors  # as on the API server: CEL rules run only on schema-valid objects
    return [f"{c['field']}: {c['message']}" for c in cel_causes(manifest)]


def _field(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# ---------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("sample", sorted(SAMPLES), ids=str)
def test_every_spec_field_the_parser_reads_is_one_the_crd_schema_keeps(sample):
    manifest = SAMPLES[sample]()
    parse_modelserving(manifest)  # the sample must pass, or the parser stops before later branches
    schema = crd_schema()
    missing = sorted(path for path in spec_fields_read(manifest) if not schema_keeps(path, schema))
    assert missing == [], f"the API server would prune these fields the controller reads: {missing}"


@pytest.mark.parametrize("sample", sorted(SAMPLES), ids=str)
def test_every_sample_the_parser_accepts_is_stored_whole_by_the_crd_schema(sample):
    manifest = SAMPLES[sample]()
    manifest["apiVersion"] = naming.API_VERSION
    assert stored_whole_errors(manifest) == []


def with_spec(path: str, value: Any, base: Any = group_rolling_with_every_field) -> dict[str, Any]:
    """``base()`` with ``spec.<path>`` set to ``value`` (``...`` removes it)."""
    manifest = base()
    *parents, last = path.split(".")
    node = manifest["spec"]
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return manifest


# Values at the edge of a parser rule: the parser accepts each, so the API server must store it whole.
ACCEPTED_AT_THE_EDGE = {
    "a group surge above 100%": with_spec("rolloutStrategy.rollingUpdateConfiguration.maxSurge", "300%"),
    "a role surge above 100%": with_spec("template.roles.1.maxSurge", "300%", role_rolling_with_coordination),
    "a fractional drain timeout": with_spec("drain.timeoutSeconds", 0.5),
    # OpenAPI 3.0 (the CRD's dialect) writes an exclusive minimum as a flag beside minimum.
    "a verification timeout just above its exclusive minimum of 0": with_spec("verification.timeoutSeconds", 0.5),
    "a verification timeout at its maximum": with_spec("verification.timeoutSeconds", 300),
    "a bare pause (null)": with_spec("rolloutStrategy.canary.steps", [{"pause": None}]),
    "a zero pause": with_spec("rolloutStrategy.canary.steps", [{"pause": {"durationSeconds": 0}}]),
    "a partition of 100%": with_spec("rolloutStrategy.canary.steps", [{"setPartition": "100%"}]),
    "a settle time of null (the default)": with_spec("rolloutStrategy.canary.analysis.settleSeconds", None),
    "no request minimum": with_spec("rolloutStrategy.canary.analysis.minRequests", 0),
    "a ratio limit of exactly 1": with_spec(
        "rolloutStrategy.canary.analysis.metrics", [{"metric": "latencyP99Ms", "maxRatioToStable": 1}]
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED_AT_THE_EDGE), ids=str)
def test_a_value_the_parser_accepts_at_the_edge_of_a_rule_is_stored_whole(case):
    manifest = ACCEPTED_AT_THE_EDGE[case]
    manifest["apiVersion"] = naming.API_VERSION
    parse_modelserving(manifest)
    assert stored_whole_errors(manifest) == []


KNOWN_FIELDS = {
    CANARY: canary_parser.CANARY_FIELDS,
    f"{CANARY}.steps[]": canary_parser.STEP_KINDS,
    f"{CANARY}.steps[].pause": canary_parser.PAUSE_FIELDS,
    f"{CANARY}.analysis": canary_parser.ANALYSIS_FIELDS,
    f"{CANARY}.analysis.metrics[]": canary_parser.CHECK_FIELDS,
    f"{CANARY}.analysis.queries": (*canary_parser.QUERY_FIGURES, *canary_parser.METRICS),
    f"{CANARY}.trafficRouting": canary_parser.TRAFFIC_ROUTING_FIELDS,
    f"{CANARY}.trafficRouting.gatewayAPI": canary_parser.GATEWAY_API_FIELDS,
    f"{CANARY}.trafficRouting.gatewayAPI.endpointPickerRef": canary_parser.ENDPOINT_PICKER_FIELDS,
}


@pytest.mark.parametrize("where", sorted(KNOWN_FIELDS), ids=str)
def test_each_canary_object_in_the_crd_names_exactly_the_fields_the_canary_parser_allows(where):
    assert sorted(schema_node(where)["properties"]) == sorted(KNOWN_FIELDS[where])


ENUMS = {
    f"{CANARY}.analysis.metrics[].metric": canary_parser.METRICS,
    f"{CANARY}.analysis.onFailure": canary_parser.ON_FAILURE,
    f"{CANARY}.analysis.provider": canary_parser.PROVIDERS,
    f"{CANARY}.trafficRouting.gatewayAPI.backendKind": canary_parser.BACKEND_KINDS,
}


@pytest.mark.parametrize("where", sorted(ENUMS), ids=str)
def test_each_canary_enum_in_the_crd_lists_exactly_the_values_the_canary_parser_allows(where):
    assert sorted(schema_node(where)["enum"]) == sorted(ENUMS[where])


def with_canary(canary: Any, **strategy: Any) -> dict[str, Any]:
    """The full sample with ``canary``; ``strategy`` sets other fields of the rollout strategy (None
    removes one)."""
    manifest = group_rolling_with_every_field()
    rollout = manifest["spec"]["rolloutStrategy"]
    rollout["canary"] = canary
    for key, value in strategy.items():
        if value is None:
            rollout.pop(key, None)
        else:
            rollout[key] = value
    return manifest


def analysis_with(**changes: Any) -> dict[str, Any]:
    analysis = copy.deepcopy(group_rolling_with_every_field()["spec"]["rolloutStrategy"]["canary"]["analysis"])
    analysis.update(changes)
    return {"steps": [{"setPartition": 1}], "analysis": analysis}


def steps(*items: Any) -> dict[str, Any]:
    return {"steps": list(items)}


def check(**fields: Any) -> dict[str, Any]:
    return analysis_with(metrics=[fields])


A = f"{CANARY}.analysis"
COORDINATION = "spec.rolloutStrategy.roleRollingUpdateConfiguration.coordination"


def with_coordination(field: str, value: Any) -> dict[str, Any]:
    return with_spec(
        f"rolloutStrategy.roleRollingUpdateConfiguration.coordination.{field}", value, role_rolling_with_coordination
    )


# case -> (the manifest, the field the parser names, the field the API server names). Each row
# breaks a rule the schema can check on its own; the parser refuses it too.
REFUSED_BY_BOTH = {
    "no steps": (with_canary(steps()), f"{CANARY}.steps", f"{CANARY}.steps"),
    "a step with both kinds": (
        with_canary(steps({"setPartition": 1, "pause": {}})),
        f"{CANARY}.steps[0]",
        f"{CANARY}.steps[0]",
    ),
    "a partition above 100%": (
        with_canary(steps({"setPartition": "150%"})),
        f"{CANARY}.steps[0].setPartition",
        f"{CANARY}.steps[0].setPartition",
    ),
    "a negative partition": (
        with_canary(steps({"setPartition": -1})),
        f"{CANARY}.steps[0].setPartition",
        f"{CANARY}.steps[0].setPartition",
    ),
    "a negative pause": (
        with_canary(steps({"pause": {"durationSeconds": -1}})),
        f"{CANARY}.steps[0].pause.durationSeconds",
        f"{CANARY}.steps[0].pause.durationSeconds",
    ),
    "an interval below one second": (with_canary(analysis_with(intervalSeconds=0.5)), f"{A}.intervalSeconds", None),
    "a negative settle time": (with_canary(analysis_with(settleSeconds=-1)), f"{A}.settleSeconds", None),
    "a negative request minimum": (with_canary(analysis_with(minRequests=-1)), f"{A}.minRequests", None),
    "no failure allowed": (with_canary(analysis_with(failureLimit=0)), f"{A}.failureLimit", None),
    "no inconclusive window allowed": (with_canary(analysis_with(inconclusiveLimit=0)), f"{A}.inconclusiveLimit", None),
    "no passing window asked for": (with_canary(analysis_with(minPassWindows=0)), f"{A}.minPassWindows", None),
    "a fractional failure limit": (with_canary(analysis_with(failureLimit=1.5)), f"{A}.failureLimit", None),
    "an unknown failure action": (with_canary(analysis_with(onFailure="Abort")), f"{A}.onFailure", None),
    "an unknown provider": (with_canary(analysis_with(provider="datadog")), f"{A}.provider", None),
    "no metrics": (with_canary(analysis_with(metrics=[])), f"{A}.metrics", None),
    "an unknown metric": (with_canary(check(metric="throughput", max=1)), f"{A}.metrics[0].metric", None),
    "a check without a limit": (with_canary(check(metric="errorRate")), f"{A}.metrics[0]", None),
    "a check with two limits": (with_canary(check(metric="errorRate", max=0.1, min=0)), f"{A}.metrics[0]", None),
    "a negative limit": (with_canary(check(metric="errorRate", max=-0.1)), f"{A}.metrics[0].max", None),
    "a ratio below 1": (
        with_canary(check(metric="latencyP99Ms", maxRatioToStable=0.9)),
        f"{A}.metrics[0].maxRatioToStable",
        None,
    ),
    "a maximum for feedback": (
        with_canary(check(metric="feedbackMean", max=1)),
        f"{A}.metrics[0].max",
        f"{A}.metrics[0]",
    ),
    "a minimum for errors": (with_canary(check(metric="errorRate", min=0)), f"{A}.metrics[0].min", f"{A}.metrics[0]"),
    "an empty query": (with_canary(analysis_with(queries={"requests": " "})), f"{A}.queries.requests", None),
    "a weight above 100": (
        with_canary(steps({"setWeight": 101})),
        f"{CANARY}.steps[0].setWeight",
        f"{CANARY}.steps[0].setWeight",
    ),
    "a weight as a percent string": (
        with_canary(steps({"setWeight": "10%"})),
        f"{CANARY}.steps[0].setWeight",
        f"{CANARY}.steps[0].setWeight",
    ),
    "traffic routing without gatewayAPI": (
        with_canary({**steps({"setWeight": 10}), "trafficRouting": {}}),
        f"{CANARY}.trafficRouting.gatewayAPI",
        f"{CANARY}.trafficRouting",
    ),
    "an unknown backend kind": (
        with_canary(
            {**steps({"setWeight": 10}), "trafficRouting": {"gatewayAPI": {"httpRoute": "r", "backendKind": "Ingress"}}}
        ),
        f"{CANARY}.trafficRouting.gatewayAPI.backendKind",
        f"{CANARY}.trafficRouting.gatewayAPI.backendKind",
    ),
    "inference pools without their endpoint picker": (
        with_canary(
            {
                **steps({"setWeight": 10}),
                "trafficRouting": {"gatewayAPI": {"httpRoute": "r", "backendKind": "InferencePool"}},
            }
        ),
        f"{CANARY}.trafficRouting.gatewayAPI.endpointPickerRef",
        f"{CANARY}.trafficRouting.gatewayAPI",  # a CEL rule on the object
    ),
    "a misspelt analysis field": (with_canary(analysis_with(failurLimit=3)), f"{A}.failurLimit", A),
    "a misspelt pause field": (
        with_canary(steps({"pause": {"seconds": 3}})),
        f"{CANARY}.steps[0].pause.seconds",
        f"{CANARY}.steps[0].pause",
    ),
    "a query for an unknown figure": (
        with_canary(analysis_with(queries={"rps": "x"})),
        f"{A}.queries.rps",
        f"{A}.queries",
    ),
    "a verification timeout of 0 (its minimum is exclusive)": (
        with_spec("verification.timeoutSeconds", 0),
        "spec.verification.timeoutSeconds",
        None,
    ),
    "a negative drain timeout": (with_spec("drain.timeoutSeconds", -0.5), "spec.drain.timeoutSeconds", None),
    # Kthena's coordination: maxSkew is required, a percentage string in (0%, 100%].
    "an integer skew": (with_coordination("maxSkew", 10), f"{COORDINATION}.maxSkew", None),
    "a skew of 0%": (with_coordination("maxSkew", "0%"), f"{COORDINATION}.maxSkew", None),
    "a skew above 100%": (with_coordination("maxSkew", "101%"), f"{COORDINATION}.maxSkew", None),
    "coordination without a skew": (with_coordination("maxSkew", ...), f"{COORDINATION}.maxSkew", COORDINATION),
    "a coordinated role listed twice": (
        with_coordination("roles", ["prefill", "prefill"]),
        f"{COORDINATION}.roles",
        None,
    ),
    "a dependency on no role": (
        with_coordination("dependencies", [{"role": "decode", "dependsOn": []}]),
        f"{COORDINATION}.dependencies[0].dependsOn",
        None,
    ),
    "a dependency naming a role twice": (
        with_coordination("dependencies", [{"role": "decode", "dependsOn": ["prefill", "prefill"]}]),
        f"{COORDINATION}.dependencies[0].dependsOn",
        None,
    ),
    "canary steps with role rolling updates": (
        with_canary(steps({"setPartition": 1}), type="RoleRollingUpdate", rollingUpdateConfiguration=None),
        CANARY,
        "spec.rolloutStrategy",
    ),
    "canary steps beside a partition": (
        with_canary(steps({"setPartition": 1}), rollingUpdateConfiguration={"partition": 1}),
        "spec.rolloutStrategy.rollingUpdateConfiguration.partition",
        "spec.rolloutStrategy",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED_BY_BOTH), ids=str)
def test_a_rule_the_api_server_can_check_refuses_the_value_there_too_naming_the_field(case):
    manifest, parser_field, server_field = REFUSED_BY_BOTH[case]
    with pytest.raises(ValidationError) as refused:
        parse_modelserving(manifest)
    assert refused.value.field == parser_field
    errors = stored_whole_errors(manifest)
    assert errors, f"{case}: the API server would store it"
    assert any(e.startswith(f"{server_field or parser_field}: ") for e in errors), errors


# --------------------------------------------------------------------------- Hypothesis property

_numbers = st.one_of(
    st.integers(min_value=-2, max_value=400),
    st.floats(min_value=-2, max_value=400, allow_nan=False),
)
_partitions = st.one_of(
    st.integers(min_value=-1, max_value=20),
    st.integers(min_value=0, max_value=120).map(lambda n: f"{n}%"),
)
_steps = st.lists(
    st.one_of(
        st.builds(lambda p: {"setPartition": p}, _partitions),
        st.sampled_from([{"pause": {}}, {"pause": None}]),
        st.builds(lambda s: {"pause": {"durationSeconds": s}}, _numbers),
    ),
    min_size=0,
    max_size=4,
)
_checks = st.builds(
    lambda metric, kind, limit: {"metric": metric, kind: limit},
    st.sampled_from(canary_parser.METRICS),
    st.sampled_from(canary_parser.CHECK_KINDS),
    st.floats(min_value=-1, max_value=5, allow_nan=False),
)
_figures = (*canary_parser.QUERY_FIGURES, *canary_parser.METRICS)
_analysis = st.fixed_dictionaries(
    {"metrics": st.lists(_checks, min_size=0, max_size=3)},
    optional={
        "intervalSeconds": _numbers,
        "settleSeconds": st.one_of(st.none(), _numbers),
        "minRequests": st.integers(min_value=-1, max_value=100),
        "failureLimit": st.integers(min_value=-1, max_value=5),
        "inconclusiveLimit": st.integers(min_value=-1, max_value=5),
        "minPassWindows": st.integers(min_value=-1, max_value=5),
        "onFailure": st.sampled_from((*canary_parser.ON_FAILURE, "Abort")),
        "provider": st.sampled_from((*canary_parser.PROVIDERS, "datadog")),
        "queries": st.dictionaries(st.sampled_from(_figures), st.sampled_from(["requests", "up{job='x'}", ""])),
    },
)
_canaries = st.fixed_dictionaries({"steps": _steps}, optional={"analysis": _analysis})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_canaries)
def test_every_canary_the_parser_accepts_is_stored_whole_by_the_crd_schema(canary):
    manifest = with_canary(canary)
    try:
        parse_modelserving(manifest)
    except ValidationError:
        return  # the property is about what the controller would run
    assert stored_whole_errors(manifest) == []
