"""Every real Kthena ModelServing manifest is accepted and rolled out.

Each example in examples/kthena (Kthena's own apiVersion, and ours) is applied to
a simulated cluster with room for it, then the image of its first role is bumped; the rollout must
converge with every instance on the new revision. This runs the same controller code as production.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from controller.core import naming
from controller.core.spec import parse_modelserving
from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import parse_scenario
from tests.paths import KTHENA_EXAMPLES

EXAMPLES = KTHENA_EXAMPLES


def _modelservings() -> list[tuple[str, dict]]:
    found = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "ModelServing":
                found.append((path.stem, doc))
    return found


EXAMPLE_MANIFESTS = _modelservings()


def test_the_reference_examples_are_present():
    assert len(EXAMPLE_MANIFESTS) >= 20


@pytest.mark.parametrize("name,manifest", EXAMPLE_MANIFESTS, ids=[n for n, _ in EXAMPLE_MANIFESTS])
@pytest.mark.parametrize(
    "api_version", [naming.KTHENA_API_VERSION, naming.API_VERSION], ids=["kthena-apiversion", "our-apiversion"]
)
def test_every_kthena_example_is_accepted(name, manifest, api_version):
    manifest = copy.deepcopy(manifest)
    manifest["apiVersion"] = api_version
    parsed = parse_modelserving(manifest)
    assert parsed.roles


def _gpus(template: dict) -> int:
    total = 0
    for c in (template.get("spec") or {}).get("containers") or []:
        limits = (c.get("resources") or {}).get("limits") or {}
        total += int(str(limits.get(naming.GPU_RESOURCE, 0)))
    return total


@pytest.mark.parametrize("name,manifest", EXAMPLE_MANIFESTS, ids=[n for n, _ in EXAMPLE_MANIFESTS])
def test_every_kthena_example_rolls_out_an_image_change_to_convergence(name, manifest):
    manifest = copy.deepcopy(manifest)
    manifest.setdefault("metadata", {}).setdefault("namespace", "default")
    parsed = parse_modelserving(manifest)
    # Room for the whole ModelServing twice over (surge, or a replacement beside the old pods).
    per_group = sum(
        r.replicas * (_gpus(r.entry_template) + r.worker_replicas * _gpus(r.worker_template or {}))
        for r in parsed.roles
    )
    largest_pod = max(
        [_gpus(r.entry_template) for r in parsed.roles] + [_gpus(r.worker_template or {}) for r in parsed.roles] + [1]
    )
    gpus_per_node = max(8, largest_pod)
    nodes = max(2, (2 * per_group * max(parsed.replicas, 1)) // gpus_per_node + 2)
    first = parsed.roles[0]
    image = first.entry_template["spec"]["containers"][0]["image"]
    scenario = parse_scenario(
        {
            "name": f"kthena-{name}",
            "seed": 1,
            "until": 3000,
            "cluster": {
                "nodes": nodes,
                "gpusPerNode": gpus_per_node,
                "timing": {"schedule": 1, "pull": 2, "start": 1, "load": 5, "terminate": 1},
            },
            "modelServing": manifest,
            "events": [
                {"at": 0, "do": "apply"},
                {"at": 100, "do": "setImage", "role": first.name, "image": image + "-next"},
            ],
        }
    )
    trace = run_scenario(scenario)
    assert trace["converged"], f"{name} did not converge; last blocked: {trace['frames'][-1]['blocked'][:3]}"
    last = trace["frames"][-1]
    assert {i["revision"] for i in last["instances"]} == {last["updateRevision"]}
    assert len(trace["revisions"]) >= 2
