"""Operator controls of an InferenceService: the merge patch each one makes, and what it refuses."""

from __future__ import annotations

import pytest

from controller.core.controls import ControlError
from controller.core.kserve import controls
from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.materialize import deployments
from controller.core.kserve.spec import parse_inferenceservice
from controller.core.mergepatch import diff, merge_patch

from .test_kserve_strategy import MODEL, isvc

STANDARD = parse_deploy_config('{"defaultDeploymentMode": "Standard"}')
SERVERLESS = parse_deploy_config(None)
V2 = {**MODEL, "model": {**MODEL["model"], "image": "vllm/vllm-openai:v0.9.2"}}


def after(manifest, patch):
    return merge_patch(manifest, patch)


def test_set_image_changes_the_model_image_of_the_component():
    manifest = isvc({**MODEL, "minReplicas": 2})
    patch = controls.set_image(manifest, STANDARD, image="vllm/vllm-openai:v0.9.2")
    assert patch == {"spec": {"predictor": {"model": {"image": "vllm/vllm-openai:v0.9.2"}}}}


def test_set_image_changes_the_named_container_of_a_containers_component():
    manifest = isvc({"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]})
    patch = controls.set_image(manifest, STANDARD, image="y:2", container="b")
    assert after(manifest, patch)["spec"]["predictor"]["containers"][1]["image"] == "y:2"


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda m: controls.set_image(m, STANDARD, image="x", component="transformer"), "no component 'transformer'"),
        (lambda m: controls.set_image(m, STANDARD, image="vllm/vllm-openai:v0.9.1"), "already runs"),
        (lambda m: controls.promote(m, STANDARD), "there is no canary"),
        (lambda m: controls.rollback(m, STANDARD), "there is no canary"),
    ],
    ids=[
        "a component that does not exist",
        "the image it already runs",
        "promote without a canary",
        "rollback without a canary",
    ],
)
def test_a_control_that_does_not_apply_says_why(call, message):
    with pytest.raises(ControlError, match=message):
        call(isvc({**MODEL}))


def test_pause_is_refused_in_serverless_mode():
    with pytest.raises(ControlError, match="Standard mode only"):
        controls.check_pausable(isvc({**MODEL}, mode="Serverless"), SERVERLESS)
    assert controls.check_pausable(isvc({**MODEL}), STANDARD).standard


def test_a_serverless_canary_is_started_promoted_and_rolled_back_through_canary_traffic_percent():
    manifest = isvc({**MODEL}, mode="Serverless")
    start = controls.start_canary(manifest, SERVERLESS, percent=10, image="vllm/vllm-openai:v0.9.2")
    assert start == {"spec": {"predictor": {"canaryTrafficPercent": 10, "model": {"image": "vllm/vllm-openai:v0.9.2"}}}}
    running = after(manifest, start)
    assert controls.promote(running, SERVERLESS) == {"spec": {"predictor": {"canaryTrafficPercent": None}}}
    assert controls.rollback(running, SERVERLESS) == {"spec": {"predictor": {"canaryTrafficPercent": 0}}}


def test_a_standard_canary_is_an_entry_running_the_new_image():
    manifest = isvc({**MODEL, "minReplicas": 4})
    patch = controls.start_canary(manifest, STANDARD, percent=25, image="vllm/vllm-openai:v0.9.2", name="v2")
    (entry,) = after(manifest, patch)["spec"]["canary"]
    assert entry["trafficPercent"] == 25
    assert entry["predictor"]["name"] == "v2" and entry["predictor"]["model"]["image"] == "vllm/vllm-openai:v0.9.2"
    assert "minReplicas" not in entry["predictor"]


def test_promoting_a_standard_canary_makes_it_the_predictor_and_keeps_its_pod_template():
    manifest = isvc(
        {**MODEL, "minReplicas": 4, "maxReplicas": 8},
        canary=[{"predictor": {"name": "v2", **V2}, "trafficPercent": 25}],
    )
    promoted = after(manifest, controls.promote(manifest, STANDARD))
    predictor = promoted["spec"]["predictor"]
    assert predictor["name"] == "v2" and predictor["minReplicas"] == 4 and predictor["maxReplicas"] == 8
    assert predictor["model"] == V2["model"]
    assert "canary" not in promoted["spec"]
    before = {d.name: d for d in deployments(parse_inferenceservice(manifest, STANDARD), STANDARD)}
    now = {d.name: d for d in deployments(parse_inferenceservice(promoted, STANDARD), STANDARD)}
    assert set(now) == {"llm-v2-predictor"}
    assert now["llm-v2-predictor"].template == before["llm-v2-predictor"].template  # nothing restarts
    assert now["llm-v2-predictor"].replicas == 4


def test_rolling_back_a_standard_canary_removes_its_entry_only():
    manifest = isvc(
        {**MODEL, "minReplicas": 4},
        canary=[
            {"predictor": {"name": "a", **V2}, "trafficPercent": 10},
            {"predictor": {"name": "b", **V2}, "trafficPercent": 10},
        ],
    )
    with pytest.raises(ControlError, match="name the canary"):
        controls.rollback(manifest, STANDARD)
    left = after(manifest, controls.rollback(manifest, STANDARD, canary="a"))["spec"]["canary"]
    assert [c["predictor"]["name"] for c in left] == ["b"]


def test_rolling_back_to_a_template_restores_the_image_and_storage_uri():
    manifest = isvc({**V2})
    template = {
        "spec": {
            "containers": [{"image": "vllm/vllm-openai:v0.9.1", "env": [{"name": "STORAGE_URI", "value": "s3://m/v0"}]}]
        }
    }
    patch = controls.rollback_to_template(manifest, STANDARD, component="predictor", template=template)
    assert patch == {"spec": {"predictor": {"model": {"image": "vllm/vllm-openai:v0.9.1", "storageUri": "s3://m/v0"}}}}


def test_a_change_kserve_would_refuse_is_refused_with_its_field():
    manifest = isvc({**MODEL}, mode="Serverless")
    with pytest.raises(ControlError) as err:
        controls.start_canary(manifest, SERVERLESS, percent=101)
    assert err.value.field == "percent"


@pytest.mark.parametrize(
    "old,new",
    [
        ({"a": 1}, {"a": 2}),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "d": 3}}),
        ({"a": [1, 2], "x": 1}, {"a": [1]}),
        ({}, {"a": {"b": {"c": 1}}}),
    ],
    ids=["a changed value", "a nested key removed and one added", "a list replaced and a key removed", "a new subtree"],
)
def test_diff_is_the_merge_patch_from_one_document_to_the_other(old, new):
    assert merge_patch(old, diff(old, new)) == new
