"""Every KServe sample in examples/kserve is admitted as KServe admits it and rolls out.

Each InferenceService of KServe's samples and website examples (examples/kserve, with their
licence) is read with the ServingRuntimes of a fresh KServe installation, applied to the embedded
cluster with room for it, then its predictor gets a new image; the rollout must converge with the
predictor's pods on the new image. Both deployment modes a sample can run in are tried: the
ConfigMap's default is Standard, then Knative (a sample that names its mode keeps it)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from controller.core import naming
from controller.core.kserve.config import parse_deploy_config
from controller.core.kserve.spec import parse_inferenceservice
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import parse_scenario
from tests.paths import KSERVE_EXAMPLES


def _inferenceservices() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(KSERVE_EXAMPLES.glob("*.yaml")):
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict) and doc.get("kind") == "InferenceService":
                found.append((f"{path.stem}#{i}", doc))
    return found


EXAMPLES = _inferenceservices()
MODES = ["Standard", "Knative"]
# The new image: the same one from another registry.
MIRROR = "mirror.example.com/"


def test_the_curated_samples_are_present_with_their_licence_notice():
    assert len(EXAMPLES) >= 18
    notice = (KSERVE_EXAMPLES / "NOTICE").read_text()
    assert "The KServe Authors" in notice and "Apache License" in notice
    assert "Apache License" in (KSERVE_EXAMPLES / "LICENSE").read_text()


@pytest.mark.parametrize("name,manifest", EXAMPLES, ids=[n for n, _ in EXAMPLES])
@pytest.mark.parametrize("mode", MODES)
def test_every_kserve_sample_is_admitted_with_a_runtime_for_its_model(name, manifest, mode):
    parsed = parse_inferenceservice(
        copy.deepcopy(manifest), parse_deploy_config(json.dumps({"defaultDeploymentMode": mode}))
    )
    assert all(c.runtime_problem is None for c in parsed.components.values()), name
    assert parsed.predictor.image


def _gpus(container: dict) -> int:
    limits = (container.get("resources") or {}).get("limits") or {}
    return int(str(limits.get(naming.GPU_RESOURCE, 0)))


@pytest.mark.parametrize("name,manifest", EXAMPLES, ids=[n for n, _ in EXAMPLES])
@pytest.mark.parametrize("mode", MODES)
def test_every_kserve_sample_rolls_out_an_image_change_to_convergence(name, manifest, mode):
    manifest = copy.deepcopy(manifest)
    manifest.setdefault("metadata", {})["namespace"] = "default"
    deploy = json.dumps({"defaultDeploymentMode": mode})
    parsed = parse_inferenceservice(manifest, parse_deploy_config(deploy))
    pods = sum(max(c.replicas, 1) + (c.worker.replicas if c.worker else 0) for c in parsed.components.values())
    largest = max([_gpus(c) for comp in parsed.components.values() for c in comp.containers] + [1])
    image = parsed.predictor.image
    trace = run_scenario(
        parse_scenario(
            {
                "name": f"kserve-{name}",
                "seed": 1,
                "until": 3000,
                # Room for every pod twice over (a surge beside the old pods).
                "cluster": {
                    "nodes": 2 * pods + 2,
                    "gpusPerNode": max(8, largest),
                    "timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1},
                },
                "kserveConfig": {"deploy": deploy},
                "inferenceService": manifest,
                "events": [
                    {"at": 0, "do": "apply"},
                    {"at": 100, "do": "setImage", "component": "predictor", "image": MIRROR + image},
                ],
            }
        )
    )
    last = trace["frames"][-1]
    assert trace["converged"], f"{name} did not converge; last blocked: {last['blocked'][:3]}"
    # The new image as KServe runs it (a runtimeVersion still sets the tag, a GPU build its suffix).
    assert last["spec"]["components"]["predictor"]["image"].startswith(MIRROR)
    predictor_revisions = {r["number"] for r in trace["revisions"] if r["component"] == "predictor"}
    assert len(predictor_revisions) >= 2, trace["revisions"]
