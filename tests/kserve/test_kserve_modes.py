"""KServe's deployment modes by their current names (KServe 0.16: Standard, Knative, ModelMesh) and
their legacy ones (RawDeployment, Serverless), in the annotation and in the ConfigMap; the
ConfigMap's required ``defaultDeploymentMode``; ModelMesh listed but not managed. Each row names
the KServe rule it mirrors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from controller.core import phases
from controller.core.controls import ControlError
from controller.core.kserve import controls
from controller.core.kserve.config import from_config_map, parse_deploy_config
from controller.core.kserve.errors import KServeError
from controller.core.kserve.spec import parse_inferenceservice
from controller.core.kserve.view import inferenceservice_view
from controller.simcluster.config import ClusterConfig
from controller.simcluster.kserve import controller as kserve_controller
from controller.simcluster.memory.cluster import SimCluster
from controller.simcluster.objects import DEPLOYMENT, INFERENCESERVICE
from tests.paths import REPO

from .test_kserve_strategy import MODEL, isvc

ANNOTATION = "serving.kserve.io/deploymentMode"


def deploy(mode: str | None, **extra) -> str:
    body = dict(extra)
    if mode is not None:
        body["defaultDeploymentMode"] = mode
    return json.dumps(body)


ANNOTATION_NAMES = [
    ("KServe ParseDeploymentMode: Standard is Standard", "Standard", "Standard"),
    ("KServe ParseDeploymentMode: the legacy RawDeployment is read as Standard", "RawDeployment", "Standard"),
    ("KServe ParseDeploymentMode: Knative is Knative", "Knative", "Knative"),
    ("KServe ParseDeploymentMode: the legacy Serverless is read as Knative", "Serverless", "Knative"),
    ("KServe GetDeploymentMode: ModelMesh is a mode of its own", "ModelMesh", "ModelMesh"),
]


@pytest.mark.parametrize("annotation,mode", [r[1:] for r in ANNOTATION_NAMES], ids=[r[0] for r in ANNOTATION_NAMES])
def test_every_current_and_legacy_mode_name_in_the_annotation_is_accepted_under_its_current_name(annotation, mode):
    parsed = parse_inferenceservice(isvc(MODEL, mode=annotation), parse_deploy_config(deploy("Knative")))
    assert parsed.deployment_mode == mode
    assert parsed.warnings == ()


def test_an_annotation_naming_no_mode_is_ignored_for_the_configmap_default_with_a_warning():
    # KServe GetDeploymentMode: an annotation value that is not a mode falls back to the ConfigMap.
    parsed = parse_inferenceservice(isvc(MODEL, mode="Raw"), parse_deploy_config(deploy("Standard")))
    assert parsed.deployment_mode == "Standard"
    (warning,) = parsed.warnings
    assert warning.field == f"metadata.annotations[{ANNOTATION}]"
    assert "KServe ignores it" in warning.message and "Standard" in warning.message


CONFIG_NAMES = [
    ("KServe NewDeployConfig: Standard", "Standard", "Standard"),
    ("KServe NewDeployConfig: the legacy RawDeployment becomes Standard", "RawDeployment", "Standard"),
    ("KServe NewDeployConfig: Knative", "Knative", "Knative"),
    ("KServe NewDeployConfig: the legacy Serverless becomes Knative", "Serverless", "Knative"),
    ("KServe NewDeployConfig: ModelMesh", "ModelMesh", "ModelMesh"),
]


@pytest.mark.parametrize("written,mode", [r[1:] for r in CONFIG_NAMES], ids=[r[0] for r in CONFIG_NAMES])
def test_every_current_and_legacy_mode_name_in_the_configmap_is_read_under_its_current_name(written, mode):
    assert parse_deploy_config(deploy(written)).default_deployment_mode == mode
    assert parse_inferenceservice(isvc(MODEL, mode=None), parse_deploy_config(deploy(written))).deployment_mode == mode


CONFIG_REFUSED = [
    (
        "KServe NewDeployConfig: a deploy config without defaultDeploymentMode is refused",
        deploy(None, deploymentRolloutStrategy={"defaultRollout": {"maxSurge": "1"}}),
        "defaultDeploymentMode is required",
    ),
    (
        "KServe NewDeployConfig: an empty defaultDeploymentMode is refused",
        deploy(""),
        "defaultDeploymentMode is required",
    ),
    (
        "KServe NewDeployConfig: a mode KServe does not know is refused",
        deploy("Raw"),
        "must be one of Standard, Knative",
    ),
]


@pytest.mark.parametrize("raw,words", [r[1:] for r in CONFIG_REFUSED], ids=[r[0] for r in CONFIG_REFUSED])
def test_kserve_refuses_a_deploy_config_without_a_known_default_mode(raw, words):
    with pytest.raises(KServeError) as err:
        parse_deploy_config(raw)
    assert err.value.field == "inferenceservice-config.deploy.defaultDeploymentMode"
    assert words in err.value.rule


def test_a_configmap_kserve_cannot_read_refuses_every_inferenceservice_with_the_configmap_field():
    # KServe's defaulting webhook fails on NewDeployConfig: it admits no InferenceService.
    config = from_config_map(kserve_controller.config_map(deploy(None)))
    assert config.error is not None
    with pytest.raises(KServeError) as err:
        parse_inferenceservice(isvc(MODEL), config)
    assert err.value.field == "inferenceservice-config.deploy.defaultDeploymentMode"


def sim(deploy_value: str, manifest: dict) -> SimCluster:
    c = SimCluster(ClusterConfig(nodes=1, gpus_per_node=4), seed=1)
    c.store.create_object(kserve_controller.config_map(deploy_value))
    c.store.create_object(manifest)
    return c


def view_of(c: SimCluster, deploy_value: str) -> dict:
    store = c.store
    obj = store.get_object(INFERENCESERVICE, "default", "llm")
    deployments = store.list_objects(DEPLOYMENT, "default", owner="llm")
    return inferenceservice_view(
        obj, deployments, [], [], from_config_map(kserve_controller.config_map(deploy_value)), 0.0
    )


def test_the_dashboard_shows_the_configmap_error_and_kserve_reconciles_nothing():
    bad = deploy(None)
    c = sim(bad, isvc(MODEL))
    c.loop.run_until(30)
    assert c.store.list_objects(DEPLOYMENT, "default", owner="llm") == []
    v = view_of(c, bad)
    assert v["error"]["source"] == "configMap"
    assert v["error"]["field"] == "inferenceservice-config.deploy.defaultDeploymentMode"
    assert v["blocked"][0]["reason"].startswith("KServe cannot read its ConfigMap: ")
    assert v["phase"] == phases.DEGRADED


@pytest.mark.parametrize("annotation", ["RawDeployment", "Serverless"], ids=["RawDeployment", "Serverless"])
def test_the_status_and_the_page_carry_the_current_mode_name(annotation):
    c = sim(deploy("Knative"), isvc(MODEL, mode=annotation))
    c.loop.run_until(5)
    status_mode = c.store.get_object(INFERENCESERVICE, "default", "llm")["status"]["deploymentMode"]
    expected = {"RawDeployment": "Standard", "Serverless": "Knative"}[annotation]
    assert status_mode == expected  # KServe's updateStatus writes the parsed mode
    assert view_of(c, deploy("Knative"))["deploymentMode"] == expected


# A ModelMesh predictor in the old per-framework form: KServe's defaulting leaves a ModelMesh
# predictor as written (setPredictorModelDefaults runs only outside ModelMesh).
MODELMESH = {"sklearn": {"storageUri": "s3://models/sklearn/mnist-svm.joblib"}}


def test_a_modelmesh_inferenceservice_is_listed_as_not_managed_with_the_reason_and_never_refused():
    manifest = isvc(MODELMESH, mode="ModelMesh")
    parsed = parse_inferenceservice(manifest, parse_deploy_config(deploy("Standard")))
    assert parsed.deployment_mode == "ModelMesh" and not parsed.managed
    c = sim(deploy("Standard"), manifest)
    c.loop.run_until(30)
    # KServe's reconcile skips it (no transformer): no Deployment, the status records the mode.
    assert c.store.list_objects(DEPLOYMENT, "default", owner="llm") == []
    status = c.store.get_object(INFERENCESERVICE, "default", "llm")["status"]
    assert status["deploymentMode"] == "ModelMesh" and status["observedGeneration"] == 1
    v = view_of(c, deploy("Standard"))
    assert v["error"] is None and v["managed"] is False and "ModelMesh Serving" in v["unmanagedReason"]
    assert v["phase"] == phases.UNMANAGED and v["deploymentMode"] == "ModelMesh"


@pytest.mark.parametrize(
    "control",
    [
        lambda m, cfg: controls.set_image(m, cfg, image="x:2"),
        lambda m, cfg: controls.start_canary(m, cfg, percent=10, image="x:2"),
        lambda m, cfg: controls.check_pausable(m, cfg),
    ],
    ids=["set image", "canary", "pause"],
)
def test_a_modelmesh_inferenceservice_refuses_every_control_with_the_reason(control):
    manifest = isvc({"model": {"modelFormat": {"name": "sklearn"}, "storageUri": "s3://m"}}, mode="ModelMesh")
    with pytest.raises(ControlError) as err:
        control(manifest, parse_deploy_config(deploy("Standard")))
    assert "not managed by RolloutUI" in str(err.value) and "ModelMesh" in str(err.value)


SIMULATE_MODES = [
    ("Standard runs", deploy("Standard"), None, 0),
    ("RawDeployment (legacy Standard) runs", deploy("RawDeployment"), "RawDeployment", 0),
    ("Knative runs", deploy("Knative"), "Knative", 0),
    ("Serverless (legacy Knative) runs", deploy("Serverless"), "Serverless", 0),
    ("ModelMesh runs (KServe accepts it; nothing to roll out)", deploy("Standard"), "ModelMesh", 0),
    ("a ConfigMap without defaultDeploymentMode exits 2", deploy(None), None, 2),
    ("a ConfigMap mode KServe does not know exits 2", deploy("Raw"), None, 2),
]


@pytest.mark.parametrize(
    "deploy_value,annotation,code", [r[1:] for r in SIMULATE_MODES], ids=[r[0] for r in SIMULATE_MODES]
)
def test_simulate_runs_or_exits_2_in_each_mode_name_as_kserve_accepts_or_refuses_it(
    tmp_path, deploy_value, annotation, code
):
    predictor = MODELMESH if annotation == "ModelMesh" else {**MODEL, "minReplicas": 1}
    doc = {
        "name": "modes",
        "seed": 1,
        "until": 200,
        "cluster": {"nodes": 1, "gpusPerNode": 4, "timing": {"schedule": 1, "pull": 1, "start": 1, "load": 2}},
        "kserveConfig": {"deploy": deploy_value},
        "inferenceService": isvc(predictor, mode=annotation),
        "events": [{"at": 0, "do": "apply"}],
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "controller.simcluster.cli", str(path)], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == code, proc.stderr
    if code == 2:
        assert "kserveConfig.deploy.defaultDeploymentMode" in proc.stderr
    else:
        trace = json.loads(proc.stdout)
        assert trace["converged"], trace["frames"][-1]["blocked"]


def test_the_mode_recorded_in_the_status_wins_over_a_later_configmap_default():
    # KServe GetDeploymentMode: "First priority is the deploymentMode recorded in the status".
    manifest = {**isvc(MODEL, mode=None), "status": {"deploymentMode": "Serverless"}}
    parsed = parse_inferenceservice(manifest, parse_deploy_config(deploy("Standard")))
    assert parsed.deployment_mode == "Knative"


@pytest.mark.parametrize(
    "annotation,refused",
    [("Standard", True), ("Knative", False), ("Serverless", False)],
    ids=[
        "KServe validateDeploymentMode: an update may not change the recorded mode",
        "an update naming the recorded mode is accepted",
        "an update naming the recorded mode by its legacy name is accepted (the defaulter rewrites it first)",
    ],
)
def test_an_update_may_not_change_the_deployment_mode_kserve_recorded(annotation, refused):
    manifest = {**isvc(MODEL, mode="Knative"), "status": {"deploymentMode": "Knative"}}
    patch = {"metadata": {"annotations": {ANNOTATION: annotation}}, "spec": {"predictor": {"minReplicas": 2}}}
    config = parse_deploy_config(deploy("Knative"))
    if refused:
        with pytest.raises(ControlError) as err:
            controls._validated(manifest, config, patch)
        assert err.value.field == f"metadata.annotations[{ANNOTATION}]"
        assert "cannot be changed from 'Knative' to 'Standard'" in str(err.value)
    else:
        assert controls._validated(manifest, config, patch) == patch
