"""Invalid scenarios give one line naming the field, and exit 2 (plain entry point and manage.py)."""

from __future__ import annotations

import copy
import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.simcluster import cli
from controller.simcluster.scenario import ScenarioError, parse_scenario
from tests.factories import modelserving, role

REPO = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "seed": 1,
    "until": 500,
    "cluster": {
        "nodes": 2,
        "gpusPerNode": 4,
        "timing": {"schedule": 1, "pull": [1, 3], "start": 1, "load": 10, "terminate": 1},
    },
    "modelServing": modelserving(name="demo", replicas=2, roles=[role("serve")]),
    "events": [{"at": 0, "do": "apply"}],
}


def scenario(**changes):
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        node = doc
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return doc


def error_of(doc) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc)
    text = str(info.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"events": [{"at": 0, "do": "apply"}, {"at": 5, "do": "restart"}]}, "events[1].do: unknown action 'restart'"),
        ({"cluster__timing__load": "slow"}, "cluster.timing.load: expected a number or [min, max]"),
        ({"cluster__timing__pull": [5, 1]}, "cluster.timing.pull: [min, max] needs 0 <= min <= max"),
        ({"cluster__nodes": -1}, "cluster.nodes: must be >= 0"),
        ({"cluster__gpu": 3}, "cluster.gpu: unknown field"),
        ({"unitl": 3}, "unitl: unknown field"),
        ({"until": 0}, "until: must be > 0"),
        ({"seed": "x"}, "seed: expected an integer"),
        ({"images": {"engine:v2": {"errorRate": 2}}}, "images.engine:v2.errorRate: must be between 0 and 1"),
        ({"images": {"engine:v2": {"crash": "yes"}}}, "images.engine:v2.crash: expected true or false"),
        ({"traffic": {"rps": "many"}}, "traffic.rps: expected a number"),
        ({"traffic": {"durationSeconds": [1, 2]}}, "traffic.rps: required"),
        ({"events": [{"do": "apply"}]}, "events[0].at: required"),
        ({"events": [{"at": 0, "do": "apply"}, {"at": 10, "do": "failNode"}]}, "events[1].node: required for failNode"),
        (
            {"events": [{"at": 0, "do": "apply"}, {"at": 10, "do": "addNodes", "count": 0}]},
            "events[1].count: must be >= 1",
        ),
        ({"events": [{"at": 0, "do": "apply"}, {"at": 10, "do": "pause", "why": "x"}]}, "events[1].why: unknown field"),
        ({"events": [{"at": 0, "do": "apply"}, {"at": 900, "do": "pause"}]}, "events[1].at: 900 is after until (500)"),
        (
            {"events": [{"at": 5, "do": "apply"}, {"at": 1, "do": "pause"}]},
            "events[1].at: pause at 1 comes before apply at 5",
        ),
        (
            {"events": [{"at": 0, "do": "apply"}, {"at": 10, "do": "rollback"}]},
            "events[1].toRevision: required for rollback",
        ),
        ({"modelServing__metadata": {}}, "modelServing.metadata.name: required"),
    ],
)
def test_an_invalid_scenario_field_gives_one_line_naming_that_field(changes, expected):
    assert error_of(scenario(**changes)).startswith(expected)


def test_manifest_errors_are_the_controllers_own_validation_prefixed_with_model_serving():
    doc = scenario()
    doc["modelServing"]["spec"]["replicas"] = -2
    text = error_of(doc)
    assert text.startswith("modelServing.spec.replicas:")


def test_the_recovery_policy_that_disagrees_with_role_rolling_update_is_refused_with_the_field():
    doc = scenario()
    doc["modelServing"]["spec"]["recoveryPolicy"] = "ServingGroupRecreate"
    doc["modelServing"]["spec"]["rolloutStrategy"] = {"type": "RoleRollingUpdate"}
    text = error_of(doc)
    assert text.startswith("modelServing.spec.")


def test_a_patch_event_that_makes_the_manifest_invalid_names_the_event_and_the_field():
    doc = scenario(events=[{"at": 0, "do": "apply"}, {"at": 10, "do": "patch", "patch": {"spec": {"replicas": -1}}}])
    assert error_of(doc).startswith("events[1].patch.spec.replicas:")


def test_the_plain_entry_point_exits_2_with_one_line_on_stderr(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(scenario(events=[{"at": 0, "do": "apply"}, {"at": 2, "do": "restart"}])))
    err = io.StringIO()
    assert cli.run(str(bad), stdout=io.StringIO(), stderr=err) == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "events[1].do: unknown action 'restart'" in lines[0]


def test_unreadable_yaml_exits_2_naming_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncluster: {nodes: [\n")
    err = io.StringIO()
    assert cli.run(str(bad), stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue().count("\n") == 1 and "invalid YAML" in err.getvalue()


@pytest.mark.skipif(not (REPO / "manage.py").exists(), reason="manage.py not there yet")
def test_manage_py_simulate_exits_2_with_one_line_naming_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(scenario(cluster__timing__load="slow")))
    proc = subprocess.run(
        [sys.executable, "manage.py", "simulate", str(bad)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cluster.timing.load: expected a number or [min, max]" in lines[0]


def test_every_scenario_of_the_repository_and_of_shared_parses():
    from controller.simcluster.scenario import load_scenario
    from tests.paths import EXAMPLE_SCENARIOS, TEST_SCENARIOS, shared_scenarios_beyond_the_repository

    paths = [
        *EXAMPLE_SCENARIOS.glob("*.yaml"),
        *TEST_SCENARIOS.glob("*.yaml"),
        *shared_scenarios_beyond_the_repository(),
    ]
    assert len(paths) >= 12
    for path in sorted(paths):
        s = load_scenario(path)
        assert s.events[0].do == "apply"
