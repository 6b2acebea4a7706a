"""The named steps of the InferenceService's autoscaling check (``kserve.spec._check_autoscaling``),
one table each: the scale fields' enums, one metric by its type (Resource, External, PodMetric),
Standard mode's HPA and KEDA rules, Knative's autoscaler rules. The whole-manifest rules, each
naming the webhook rule it mirrors, are in ``test_kserve_webhook_rules.py``."""

from __future__ import annotations

import pytest

from controller.core.kserve.errors import KServeError
from controller.core.kserve.spec import (
    _check_knative_autoscaler,
    _check_metric,
    _check_standard_autoscaler,
    _scale_metric_and_target,
)

P = "spec.predictor"
M = f"{P}.autoScaling.metrics[0]"


def refused(step, *args, **kwargs) -> tuple[str, str]:
    with pytest.raises(KServeError) as info:
        step(*args, **kwargs)
    return info.value.field, info.value.rule


@pytest.mark.parametrize(
    "raw, expected",
    [
        pytest.param({}, (None, None), id="nothing written is no metric and no target"),
        pytest.param({"scaleMetric": "rps", "scaleTarget": 5}, ("rps", 5), id="a metric and a target are read"),
        pytest.param(
            {"scaleMetricType": "Utilization"}, (None, None), id="a metric type alone is read and checked only"
        ),
    ],
)
def test_the_scale_fields_step_reads_the_metric_and_the_target(raw, expected):
    assert _scale_metric_and_target(raw, P) == expected


@pytest.mark.parametrize(
    "raw, field",
    [
        pytest.param({"scaleMetric": "gpu"}, f"{P}.scaleMetric", id="a metric outside the enum is refused"),
        pytest.param({"scaleMetricType": "Max"}, f"{P}.scaleMetricType", id="a metric type outside the enum"),
        pytest.param({"scaleTarget": "x"}, f"{P}.scaleTarget", id="a target that is no integer is refused"),
        pytest.param({"scaleTarget": -(2**31) - 1}, f"{P}.scaleTarget", id="a target below int32 is refused"),
    ],
)
def test_the_scale_fields_step_refuses_naming_the_field(raw, field):
    assert refused(_scale_metric_and_target, raw, P)[0] == field


RESOURCE = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
EXTERNAL = {
    "type": "External",
    "external": {"metric": {"backend": "prometheus", "query": "q"}, "target": {"type": "Value", "value": "1"}},
}
POD = {
    "type": "PodMetric",
    "podmetric": {"metric": {"backend": "opentelemetry", "query": "q"}, "target": {"type": "Value", "value": "1"}},
}


def but(metric: dict, part: str, **fields) -> dict:
    """``metric`` with ``fields`` changed in its ``part`` (``resource``, ``external``, ``podmetric``,
    or ``part.metric``)."""
    out = {**metric}
    if "." in part:
        outer, inner = part.split(".")
        out[outer] = {**out[outer], inner: {**out[outer][inner], **fields}}
    else:
        out[part] = {**out[part], **fields}
    return out


@pytest.mark.parametrize(
    "metric, keda",
    [
        pytest.param(RESOURCE, False, id="a cpu resource metric passes"),
        pytest.param(EXTERNAL, True, id="a prometheus external metric with its query and value passes keda"),
        pytest.param(but(EXTERNAL, "external.metric", query=""), False, id="without keda no query is needed"),
        pytest.param(POD, True, id="an opentelemetry pod metric with its query and value passes keda"),
        pytest.param(
            but(EXTERNAL, "external", authenticationRef={"authenticationRef": {"name": "auth"}}),
            False,
            id="an external metric names its trigger authentication",
        ),
    ],
)
def test_the_metric_step_accepts_each_type_written_as_kserve_takes_it(metric, keda):
    _check_metric(metric, M, keda=keda)


@pytest.mark.parametrize(
    "metric, keda, field, words",
    [
        pytest.param({"type": "Object"}, False, f"{M}.type", "got 'Object'", id="an unknown metric type"),
        pytest.param("cpu", False, M, "must be an object", id="a metric that is no object"),
        pytest.param(
            but(RESOURCE, "resource", name="gpu"), False, f"{M}.resource.name", "cpu or memory", id="a gpu resource"
        ),
        pytest.param({"type": "Resource"}, False, f"{M}.resource", "required", id="a resource metric without resource"),
        pytest.param(
            but(EXTERNAL, "external.metric", backend="influx"),
            False,
            f"{M}.external.metric.backend",
            "prometheus or graphite",
            id="an external backend kserve does not know",
        ),
        pytest.param(
            but(EXTERNAL, "external.metric", query=""),
            True,
            f"{M}.external.metric.query",
            "should not be empty",
            id="keda wants the external query",
        ),
        pytest.param(
            but(EXTERNAL, "external", authenticationRef={"authenticationRef": {}}),
            False,
            f"{M}.external.authenticationRef.authenticationRef.name",
            "required",
            id="a trigger authentication without a name",
        ),
        pytest.param(
            but(EXTERNAL, "external", target={"type": "Value"}),
            True,
            f"{M}.external.target.value",
            "threshold value should not be empty",
            id="keda wants the external target value",
        ),
        pytest.param(
            but(POD, "podmetric.metric", backend="prometheus"),
            False,
            f"{M}.podmetric.metric.backend",
            "opentelemetry",
            id="a pod metric backend other than opentelemetry",
        ),
        pytest.param(
            but(POD, "podmetric", target={"type": "Value"}),
            True,
            f"{M}.podmetric.target.value",
            "threshold value should not be empty",
            id="keda wants the pod metric target value",
        ),
    ],
)
def test_the_metric_step_refuses_naming_the_field(metric, keda, field, words):
    got_field, rule = refused(_check_metric, metric, M, keda=keda)
    assert got_field == field and words in rule


@pytest.mark.parametrize(
    "autoscaler, metric, target, metrics",
    [
        pytest.param("hpa", None, 80, [], id="the hpa scales on cpu by default"),
        pytest.param("hpa", "memory", 50, [], id="the hpa takes a memory target"),
        pytest.param("keda", None, None, [EXTERNAL], id="keda without a scale metric"),
        pytest.param("external", "rps", 3, [EXTERNAL], id="another autoscaler class is not checked"),
    ],
)
def test_the_standard_autoscaler_step_accepts_what_its_class_takes(autoscaler, metric, target, metrics):
    _check_standard_autoscaler(P, autoscaler, metric, target, metrics)


@pytest.mark.parametrize(
    "autoscaler, metric, target, metrics, field, words",
    [
        pytest.param("hpa", "rps", None, [], f"{P}.scaleMetric", "with the HPA", id="the hpa cannot scale on rps"),
        pytest.param("hpa", None, 0, [], f"{P}.scaleTarget", "[1-100]", id="a zero cpu utilisation"),
        pytest.param("hpa", "cpu", 101, [], f"{P}.scaleTarget", "[1-100]", id="a cpu utilisation over 100"),
        pytest.param("hpa", "memory", 0, [], f"{P}.scaleTarget", "1 MiB", id="a memory target under one mebibyte"),
        pytest.param(
            "hpa",
            None,
            None,
            [RESOURCE, EXTERNAL],
            f"{P}.autoScaling.metrics[1].type",
            "Resource metrics only",
            id="the hpa takes resource metrics only",
        ),
        pytest.param("keda", "cpu", None, [], f"{P}.scaleMetric", "not supported for KEDA", id="keda with a metric"),
    ],
)
def test_the_standard_autoscaler_step_refuses_naming_the_field(autoscaler, metric, target, metrics, field, words):
    got_field, rule = refused(_check_standard_autoscaler, P, autoscaler, metric, target, metrics)
    assert got_field == field and words in rule


@pytest.mark.parametrize(
    "metric, target",
    [
        pytest.param(None, None, id="knative scales on concurrency by default"),
        pytest.param("rps", 1, id="an rps of one is enough"),
        pytest.param("concurrency", 0, id="a concurrency target is not bounded here"),
    ],
)
def test_the_knative_autoscaler_step_accepts_concurrency_and_rps(metric, target):
    _check_knative_autoscaler(P, metric, target)


@pytest.mark.parametrize(
    "metric, target, field, words",
    [
        pytest.param("cpu", None, f"{P}.scaleMetric", "Knative's autoscaler", id="knative cannot scale on cpu"),
        pytest.param("rps", 0, f"{P}.scaleTarget", "greater than 1", id="an rps under one is refused"),
    ],
)
def test_the_knative_autoscaler_step_refuses_naming_the_field(metric, target, field, words):
    got_field, rule = refused(_check_knative_autoscaler, P, metric, target)
    assert got_field == field and words in rule
