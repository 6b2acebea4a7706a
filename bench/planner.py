"""Planner benchmark: one reconcile pass's pure work (observe + plan) mid-rollout, and plan alone.

Shape: N ServingGroups x 4 roles x 8 pods (each role has one instance of 1 entry + 7 workers, so
8 pods per role and 32 per group). 1,000 groups = 32,000 pods; a tenth of that = 3,200 pods.

Mid-rollout: the top 40% of ordinals are on the new revision, one group is being replaced (its pods
terminating), the rest are old and Ready. A reconcile pass observes the pods (pods -> instances ->
groups) then plans. Observation is measured warm: the pods are unchanged since the last pass, as
nearly all pods are between two passes (their parse is cached by uid and resourceVersion); the
cold parse of every pod is reported too.

Output: a table (medians of wall time, and of CPU time: on a shared machine CPU time is the steadier
figure); with ``--json`` the last line is
``[{"pods": 3200, "ms": ..., "observe_plan_ms": ...}, {"pods": 32000, ...}]`` (``ms`` = median of plan()).

Targets at 32,000 pods on a 2-core machine: one pass (observe + plan) under 40 ms, plan alone under
20 ms, cost growing no faster than linearly.

Figures measured so far, with their dates and the host's speed: bench/README.md.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from typing import Any

from controller.core import naming
from controller.core.observe import observe, parse_pod
from controller.core.planner import plan
from controller.core.podtemplate import build_instance_pods
from controller.core.ports import SharedObjects
from controller.core.revisions import History, RevisionAction, project, revision_hash, revision_object
from controller.core.spec import parse_modelserving

ROLES = ("prefill", "decode", "router", "kvcache")
WORKERS = 7  # 1 entry + 7 workers = 8 pods per role instance
# Issue 15's targets at 32,000 pods, medians of wall time.
PASS_TARGET_MS = 40
PLAN_TARGET_MS = 20


def _manifest(groups: int, image: str) -> dict[str, Any]:
    def role(name: str) -> dict[str, Any]:
        container = {"name": "engine", "image": image, "resources": {"limits": {naming.GPU_RESOURCE: "1"}}}
        return {
            "name": name,
            "replicas": 1,
            "workerReplicas": WORKERS,
            "entryTemplate": {"spec": {"containers": [dict(container)]}},
            "workerTemplate": {"spec": {"containers": [dict(container)]}},
        }

    return {
        "apiVersion": naming.API_VERSION,
        "kind": "ModelServing",
        "metadata": {"name": "big", "namespace": "default", "uid": "uid-big", "generation": 2},
        "spec": {
            "replicas": groups,
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": "1%"},
            },
            "template": {"roles": [role(n) for n in ROLES]},
        },
    }


def _ready(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    pod["metadata"]["uid"] = uid
    pod["metadata"]["resourceVersion"] = "1"
    pod["spec"]["nodeName"] = "node"
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": "engine", "ready": True, "restartCount": 0, "image": pod["spec"]["containers"][0]["image"]}
        ],
    }
    return pod


def build_state(groups: int) -> tuple[Any, History, Any, dict[str, Any], list[dict[str, Any]]]:
    old = _manifest(groups, "engine:v1")
    new = _manifest(groups, "engine:v2")
    old_data, new_data = project(old["spec"]), project(new["spec"])
    old_hash, new_hash = revision_hash(old_data), revision_hash(new_data)
    revisions = [
        revision_object(new, RevisionAction("create", f"big-{old_hash}", old_hash, 1, old_data)),
        revision_object(new, RevisionAction("create", f"big-{new_hash}", new_hash, 2, new_data)),
    ]
    history = History.from_objects(revisions)
    updated_from = groups - max(groups * 4 // 10, 1)
    pods: list[dict[str, Any]] = []
    uid = 0
    for g in range(groups):
        rev, data = (new_hash, new_data) if g >= updated_from else (old_hash, old_data)
        for role in data["roles"]:
            for pod in build_instance_pods(
                ms=new, revision_hash=rev, role_data=role, group=g, ordinal=0, in_place_gate=False
            ):
                uid += 1
                pod = _ready(pod, f"u{uid}")
                if g == updated_from - 1:
                    pod["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
                pods.append(pod)
    status = {"currentRevision": old_hash, "updateRevision": new_hash}
    return parse_modelserving(new), history, observe(pods), status, pods


def _median_ms(fn, repeats: int, *, collect: bool = True) -> tuple[float, float]:
    """(median wall ms, median CPU ms) of ``fn()`` over ``repeats`` runs."""
    wall, cpu = [], []
    for _ in range(repeats):
        if collect:
            # Collect first so a collection of the 32,000 pod dicts built above is not billed to fn.
            gc.collect()
        started, started_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return round(statistics.median(wall), 2), round(statistics.median(cpu), 2)


def measure(groups: int, repeats: int) -> dict[str, Any]:
    ms, history, observed, status, plain = build_state(groups)
    # As the embedded cluster's store and the in-memory simulator list them: an unchanged pod is
    # the same object from one list to the next (``ports.SharedObjects``). ``plain`` is a list as
    # the Kubernetes adapter returns it, every pod read by its uid and resourceVersion.
    pods = SharedObjects(plain)
    observe(pods)
    result = plan(ms, history, observed, 1000.0, status=status)
    plan_ms, plan_cpu = _median_ms(lambda: plan(ms, history, observed, 1000.0, status=status), repeats)
    # Warm: the pods are unchanged since the last pass, as most pods are between two passes.
    observe_ms, observe_cpu = _median_ms(lambda: observe(pods), repeats)
    # One pass's pure work: observe the pods, then plan on that observation.
    both_ms, both_cpu = _median_ms(lambda: plan(ms, history, observe(pods), 1000.0, status=status), repeats)
    plain_ms, plain_cpu = _median_ms(lambda: plan(ms, history, observe(plain), 1000.0, status=status), repeats)
    started = time.perf_counter()
    for raw in plain:
        parse_pod(raw)
    cold_ms = (time.perf_counter() - started) * 1000
    return {
        "groups": groups,
        "pods": len(pods),
        "ms": plan_ms,
        "plan_cpu_ms": plan_cpu,
        "observe_ms": observe_ms,
        "observe_cpu_ms": observe_cpu,
        "observe_plan_ms": both_ms,
        "observe_plan_cpu_ms": both_cpu,
        "observe_plan_plain_ms": plain_ms,
        "observe_plan_plain_cpu_ms": plain_cpu,
        "parse_cold_ms": round(cold_ms, 2),
        "actions": len(result.actions),
        "blocked": len(result.blocked),
    }


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    repeats = 15
    rows = [measure(100, repeats), measure(1000, repeats)]
    print(
        f"{'groups':>7} {'pods':>7} {'observe+plan ms':>16} {'plan ms':>8} {'observe ms':>11} "
        f"{'(CPU: o+p':>10} {'plan':>6} {'observe)':>9} {'o+p plain':>10} {'parse ms cold':>14} "
        f"{'actions':>8} {'blocked':>8}"
    )
    for row in rows:
        print(
            f"{row['groups']:>7} {row['pods']:>7} {row['observe_plan_ms']:>16.2f} {row['ms']:>8.2f} "
            f"{row['observe_ms']:>11.2f} {row['observe_plan_cpu_ms']:>10.2f} {row['plan_cpu_ms']:>6.2f} "
            f"{row['observe_cpu_ms']:>9.2f} {row['observe_plan_plain_ms']:>10.2f} {row['parse_cold_ms']:>14.2f} "
            f"{row['actions']:>8} {row['blocked']:>8}"
        )
    print(
        "(o+p plain: observe + plan of a plain list, as the Kubernetes adapter lists pods, each read by its "
        "uid and resourceVersion; the other columns list them as the embedded cluster and the simulator do)"
    )
    ratio = rows[1]["observe_plan_ms"] / rows[0]["observe_plan_ms"] if rows[0]["observe_plan_ms"] else float("nan")
    print(
        f"growth 3,200 -> 32,000 pods: x{ratio:.1f} for x10 pods (linear = x10); "
        f"targets at 32,000 pods: observe+plan < {PASS_TARGET_MS} ms, plan < {PLAN_TARGET_MS} ms (medians, wall)"
    )
    big = rows[1]
    for what, value, target in (
        ("observe+plan", big["observe_plan_ms"], PASS_TARGET_MS),
        ("observe+plan of a plain list (Kubernetes)", big["observe_plan_plain_ms"], PASS_TARGET_MS),
        ("plan", big["ms"], PLAN_TARGET_MS),
    ):
        verdict = "met" if value < target else "MISSED"
        print(f"  {what} at {big['pods']:,} pods: {value:.2f} ms, target < {target} ms: {verdict}")
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "pods": r["pods"],
                        "ms": r["ms"],
                        "observe_plan_ms": r["observe_plan_ms"],
                        "observe_plan_plain_ms": r["observe_plan_plain_ms"],
                        "observe_ms": r["observe_ms"],
                        "cpu": {
                            "plan": r["plan_cpu_ms"],
                            "observe": r["observe_cpu_ms"],
                            "observe_plan": r["observe_plan_cpu_ms"],
                        },
                    }
                    for r in rows
                ]
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
