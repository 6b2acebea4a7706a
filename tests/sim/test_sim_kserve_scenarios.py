"""InferenceService scenarios: every promise of tests/scenarios/isvc-*.yaml, checked on
its trace. Pods are counted as the Deployment controller counts them: a terminating pod is no
longer one of its pods (its ReplicaSet already replaced it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.simcluster.runner import run_scenario
from controller.simcluster.scenario import ScenarioError, load_scenario, parse_scenario
from controller.simcluster.trace import dumps

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "tests" / "scenarios"
_CACHE: dict[str, dict] = {}


def trace_of(name: str) -> dict:
    if name not in _CACHE:
        _CACHE[name] = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    return _CACHE[name]


def pods(frame: dict, component: str | None = None) -> list[dict]:
    return [
        i for i in frame["instances"] if i["state"] != "Deleting" and (component is None or i["component"] == component)
    ]


def available(frame: dict, component: str | None = None) -> int:
    return sum(1 for i in pods(frame, component) if i["state"] == "Ready")


def frames_between(trace: dict, start: float, end: float | None = None) -> list[dict]:
    return [f for f in trace["frames"] if f["t"] >= start and (end is None or f["t"] <= end)]


def at(trace: dict, t: float) -> dict:
    """The state at ``t``: the last frame written at or before it."""
    return [f for f in trace["frames"] if f["t"] <= t][-1]


def window(trace: dict, revision_percent: tuple[str, int]) -> dict:
    """The requests window in which ``revision`` had ``percent`` of the traffic."""
    revision, percent = revision_percent
    return next(
        w
        for w in trace["requests"]["bySplit"]
        if {"revision": revision, "percent": percent} in w["split"] and w["requests"]
    )


# -- the default rollout --------------------------------------------------------------------------


def test_a_default_rollout_of_8_replicas_never_has_more_than_10_pods_nor_fewer_than_6_available():
    trace = trace_of("isvc-default-rollout")
    during = frames_between(trace, 150)
    assert max(len(pods(f)) for f in during) == 10
    assert min(available(f) for f in during) == 6
    assert trace["converged"] and trace["convergedAt"] > 150
    last = trace["frames"][-1]
    new = {i["revision"] for i in last["instances"]}
    assert len(new) == 1 and len(last["instances"]) == 8 and available(last) == 8
    assert new != {i["revision"] for i in at(trace, 149.99)["instances"]}


def test_the_default_strategy_is_25_percent_each_with_its_source_in_every_frame():
    trace = trace_of("isvc-default-rollout")
    for f in frames_between(trace, 1):
        assert f["strategy"]["predictor"] == {
            "maxSurge": {"value": "25%", "source": "default", "count": 2},
            "maxUnavailable": {"value": "25%", "source": "default", "count": 2},
            "mode": "Custom",
            "surgeGpus": 2,  # 2 surge pods of one GPU
        }


def test_instances_carry_component_replica_set_revision_state_and_gate():
    trace = trace_of("isvc-default-rollout")
    revisions = {r["hash"]: r for r in trace["revisions"]}
    assert sorted(r["number"] for r in revisions.values()) == [1, 2]
    for f in trace["frames"]:
        for i in f["instances"]:
            assert set(i) == {"pod", "component", "replicaSet", "revision", "state", "gate", "gateFailed"}
            assert i["replicaSet"] == f"llm-predictor-{i['revision']}" and i["revision"] in revisions
            assert i["gate"] in ("Created", "Scheduled", "Started", "Loaded", "Serving"), i
            # The only backend takes 100% and KServe verifies nothing: Ready pods serve at once.
            assert (i["gate"] == "Serving") == (i["state"] == "Ready"), i
            assert i["gateFailed"] is None


def test_a_pass_that_scales_the_new_replica_set_up_does_only_that():
    trace = trace_of("isvc-default-rollout")
    scales = [a for a in trace["actions"] if a["verb"] in ("scale", "createReplicaSet")]
    by_time: dict[float, list[dict]] = {}
    for a in scales:
        by_time.setdefault(a["t"], []).append(a)
    new_rs = next(a["replicaSet"] for a in scales if a["verb"] == "createReplicaSet" and a["revision"] == 2)
    for t, acts in by_time.items():
        ups = [a for a in acts if a["verb"] == "scale" and a["replicaSet"] == new_rs and a["to"] > a["from"]]
        if ups:
            assert acts == ups, f"t={t}: a scale-up of the new ReplicaSet came with other steps: {acts}"
    # The creating pass sizes the new ReplicaSet within the surge and scales the old one down.
    created = next(a for a in scales if a["replicaSet"] == new_rs)
    assert created["replicas"] == 2
    same_pass = by_time[created["t"]]
    assert [a["to"] for a in same_pass if a["verb"] == "scale"] == [6]


def test_traffic_keeps_flowing_through_a_default_rollout():
    requests = trace_of("isvc-default-rollout")["requests"]
    assert requests["rejected"] == 0
    assert requests["total"] > 2000 and len(requests["byRevision"]) == 2


# -- ResourceAware --------------------------------------------------------------------------------


def test_a_resource_aware_rollout_never_exceeds_the_replica_count():
    trace = trace_of("isvc-resource-aware")
    during = frames_between(trace, 100)
    assert max(len(pods(f)) for f in during) == 6
    assert min(available(f) for f in during) == 4
    assert trace["converged"]
    assert trace["frames"][-1]["strategy"]["predictor"] == {
        "maxSurge": {"value": "0%", "source": "configMap", "count": 0},
        "maxUnavailable": {"value": "34%", "source": "configMap", "count": 2},
        "mode": "ResourceAware",
        "surgeGpus": 0,
    }


# -- Serverless canary ----------------------------------------------------------------------------


def test_a_serverless_canary_at_10_percent_gets_about_10_percent_of_the_requests():
    trace = trace_of("isvc-serverless-canary")
    canary = window(trace, ("chat-predictor-00002", 10))
    assert {"revision": "chat-predictor-00001", "percent": 90} in canary["split"]
    share = canary["byRevision"]["chat-predictor-00002"] / canary["requests"]
    assert canary["requests"] > 5000
    assert 0.085 <= share <= 0.115, share
    assert canary["rejected"] == 0


def test_the_canary_gets_traffic_only_once_its_revision_is_ready():
    trace = trace_of("isvc-serverless-canary")
    for f in frames_between(trace, 120, 699):
        new_pods = [i for i in f["instances"] if i["revision"] == "chat-predictor-00002"]
        routed = any(t["revision"] == "chat-predictor-00002" and t["percent"] > 0 for t in f["traffic"])
        if routed:
            assert any(i["state"] == "Ready" for i in new_pods)
            assert {i["gate"] for i in new_pods if i["state"] == "Ready"} == {"Serving"}
        else:
            assert all(i["gate"] != "Serving" for i in new_pods), new_pods  # Ready, but no traffic yet
            assert f["traffic"] == [{"revision": "chat-predictor-00001", "percent": 100, "component": "predictor"}]
            assert any(
                "chat-predictor-00002 is not ready yet" in b["reason"]
                or "has not reconciled generation 2" in b["reason"]
                for b in f["blocked"]
            ), f["blocked"]


def test_promote_moves_all_traffic_to_the_new_revision_and_retires_the_old_one():
    trace = trace_of("isvc-serverless-canary")
    after = window(trace, ("chat-predictor-00002", 100))
    assert after["start"] >= 700 and after["byRevision"] == {"chat-predictor-00002": after["requests"]}
    for f in frames_between(trace, 700.1):
        assert f["traffic"] == [{"revision": "chat-predictor-00002", "percent": 100, "component": "predictor"}]
        assert "canary" not in f
    last = trace["frames"][-1]
    assert {i["revision"] for i in last["instances"]} == {"chat-predictor-00002"}  # scaled to zero
    assert trace["converged"]


def test_serverless_status_reports_the_rolled_out_revisions_as_kserve_does():
    scenario = load_scenario(SCENARIOS / "isvc-serverless-canary.yaml")
    from controller.simcluster.runner import Runner

    runner = Runner(scenario)
    runner.loop.call_at(650, lambda: seen.append(dict(runner.kind.view()["revisions"]["predictor"])))
    seen: list[dict] = []
    runner.run()
    during = seen[0]
    assert during == {
        "latestCreatedRevision": "chat-predictor-00002",
        "latestReadyRevision": "chat-predictor-00002",
        "latestRolledoutRevision": "chat-predictor-00001",
        "previousRolledoutRevision": None,
    }
    final = runner.kind.view()["revisions"]["predictor"]
    assert final["latestRolledoutRevision"] == "chat-predictor-00002"
    assert final["previousRolledoutRevision"] == "chat-predictor-00001"


def test_rolling_back_a_promoted_serverless_revision_sends_traffic_back_to_the_previous_one(tmp_path):
    doc = yaml.safe_load((SCENARIOS / "isvc-serverless-canary.yaml").read_text())
    doc["events"].append({"at": 900, "do": "rollback", "reason": "regression after promotion"})
    doc["traffic"] = None
    trace = run_scenario(parse_scenario(doc))
    last = trace["frames"][-1]
    assert last["traffic"] == [{"revision": "chat-predictor-00001", "percent": 100, "component": "predictor"}]
    revisions = {i["revision"] for i in pods(last)}
    assert revisions == {"chat-predictor-00001", "chat-predictor-00002"}  # the new one stays deployed
    assert trace["converged"]


# -- Standard-mode spec.canary[] ----------------------------------------------------------------


def test_a_standard_canary_gets_its_weight_only_once_ready_and_takes_replicas_from_the_stable_one():
    trace = trace_of("isvc-standard-canary")
    for f in frames_between(trace, 120, 599):
        deployments = {d["name"]: d for d in f["deployments"]}
        weights = {t.get("tag", "stable"): t["percent"] for t in f["traffic"]}
        canary = deployments.get("llm-v2-predictor")
        if canary is None:
            continue
        assert canary["replicas"] == 1  # ceil(4 x 25%)
        if weights.get("v2"):
            assert weights == {"stable": 75, "v2": 25}
            assert canary["availableReplicas"] == 1
            assert deployments["llm-predictor"]["replicas"] == 3
        else:
            assert deployments["llm-predictor"]["replicas"] == 4
    share_window = next(
        w for w in trace["requests"]["bySplit"] if [s["percent"] for s in w["split"]] == [75, 25] and w["start"] < 600
    )
    canary_hash = share_window["split"][1]["revision"]
    share = share_window["byRevision"][canary_hash] / share_window["requests"]
    assert 0.22 <= share <= 0.28, share


def test_promoting_a_standard_canary_keeps_its_pods_and_deletes_the_old_predictor():
    trace = trace_of("isvc-standard-canary")
    before = at(trace, 599.99)
    canary_pods = {i["pod"] for i in pods(before, "canary:v2")}
    assert len(canary_pods) == 1
    after = at(trace, 899)
    assert [d["name"] for d in after["deployments"]] == ["llm-v2-predictor"]
    assert canary_pods <= {i["pod"] for i in pods(after, "predictor")}  # not restarted: same pod
    assert after["spec"]["components"]["predictor"] == {
        "replicas": 4,
        "image": "vllm/vllm-openai:v0.9.2",
        "name": "v2",
        "runtime": "kserve-vllmserver",
    }
    assert "canary" not in after["spec"] and available(after) == 4


def test_rolling_back_a_standard_canary_removes_its_entry_and_deployment():
    trace = trace_of("isvc-standard-canary")
    during = at(trace, 1299)
    assert {d["name"] for d in during["deployments"]} == {"llm-v2-predictor", "llm-v3-predictor"}
    last = trace["frames"][-1]
    assert [d["name"] for d in last["deployments"]] == ["llm-v2-predictor"]
    assert "canary" not in last["spec"] and last["traffic"][0]["percent"] == 100
    assert {i["component"] for i in last["instances"]} == {"predictor"} and available(last) == 4
    assert trace["converged"]


# -- unschedulable surge --------------------------------------------------------------------------


def test_an_unschedulable_surge_reports_the_progress_deadline():
    trace = trace_of("isvc-unschedulable-surge")
    assert not trace["converged"]
    reasons = {b["reason"].split(":")[0] for f in trace["frames"] for b in f["blocked"]}
    assert {"maxSurge reached", "maxUnavailable reached", "1 new pod(s) unschedulable"} <= reasons
    exceeded = [
        f
        for f in trace["frames"]
        if f["deployments"] and f["deployments"][0]["progressing"] == "ProgressDeadlineExceeded"
    ]
    assert exceeded, "the Deployment never reported ProgressDeadlineExceeded"
    first = exceeded[0]
    # The last progress was the surge ReplicaSet's creation just after 100 s; 600 s later, give
    # or take the requeue's second.
    assert 700 <= first["t"] <= 702
    assert any(b["reason"].startswith("progress deadline exceeded: no progress for 600 s") for b in first["blocked"])
    assert min(available(f) for f in frames_between(trace, 100)) == 4  # old pods keep serving
    assert trace["frames"][-1]["strategy"]["predictor"]["mode"] == "Availability"


# -- the format -----------------------------------------------------------------------------------


def test_isvc_traces_are_deterministic_and_read_back_as_json():
    scenario = load_scenario(SCENARIOS / "isvc-standard-canary.yaml")
    first = dumps(run_scenario(scenario))
    assert first == dumps(run_scenario(load_scenario(SCENARIOS / "isvc-standard-canary.yaml")))
    doc = json.loads(first)
    assert doc["format"] == 1 and doc["kind"] == "InferenceService"


def test_copy_on_read_gives_the_same_trace():
    scenario = load_scenario(SCENARIOS / "isvc-serverless-canary.yaml")
    assert dumps(run_scenario(scenario, copy_reads=True)) == dumps(trace_of("isvc-serverless-canary"))


@pytest.mark.parametrize(
    "change,field",
    [
        (
            lambda d: d["inferenceService"]["spec"]["predictor"].update(
                deploymentStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
            ),
            "inferenceService.spec.predictor.deploymentStrategy",
        ),
        (lambda d: d.update(kserveConfig={"deploy": "{not json"}), "kserveConfig.deploy"),
        (lambda d: d["events"].append({"at": 800, "do": "pause"}), "events[3].do"),
        (
            lambda d: d["events"].append({"at": 800, "do": "setImage", "component": "transformer", "image": "x"}),
            "events[3].component",
        ),
        (lambda d: d.update(modelServing={}), "inferenceService"),
    ],
    ids=[
        "a deploymentStrategy in Serverless mode is refused",
        "a ConfigMap that is not JSON is refused",
        "pause is refused in Serverless mode",
        "setImage of a missing component is refused",
        "modelServing and inferenceService together are refused",
    ],
)
def test_an_inferenceservice_kserve_would_refuse_is_reported_with_its_field(change, field):
    doc = yaml.safe_load((SCENARIOS / "isvc-serverless-canary.yaml").read_text())
    change(doc)
    with pytest.raises(ScenarioError) as err:
        parse_scenario(doc)
    assert err.value.field == field


def test_simulate_exits_2_with_the_field_path(tmp_path):
    doc = yaml.safe_load((SCENARIOS / "isvc-default-rollout.yaml").read_text())
    doc["inferenceService"]["spec"]["predictor"]["deploymentStrategy"] = {"type": "BlueGreen"}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        [sys.executable, "-m", "controller.simcluster.cli", str(path)], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 2
    assert "inferenceService.spec.predictor.deploymentStrategy.type: must be Recreate or RollingUpdate" in proc.stderr
