"""Simulator benchmarks: speed of the simulation and efficiency of the rollouts it replays.

1. Speed: virtual seconds simulated per wall second for the 160-instance coordinated seed example
   (roles a=100, b=50, c=10; the shared scenario file when it is there, else the same scenario built
   here).
2. Rollout efficiency: a fixed-timing ServingGroupRollingUpdate (8 groups, maxUnavailable 2, one
   entry + one worker pod per group, no traffic) against its analytic lower bound. Each batch must
   wait for the old pods to terminate (their names and GPUs are taken until then), then schedule,
   pull, start and load the new ones:

       bound = batches x (terminate + schedule + pull + start + load)
             = ceil(8 / 2) x (3 + 1 + 5 + 2 + 30) = 4 x 41 = 164 s

   efficiency = (convergedAt - update time) / bound; 1.00 is perfect, the target is within 5%.

    python -m bench sim [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
from pathlib import Path

from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / "examples" / "scenarios"

TIMING = {"schedule": 1, "pull": 5, "start": 2, "load": 30, "terminate": 3}


def _container(image: str) -> dict:
    return {"name": "engine", "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def coordinated_scenario():
    path = SHARED / "coordinated-seed-example.yaml"
    if path.exists():
        return load_scenario(path)
    roles = [
        {
            "name": n,
            "replicas": k,
            "maxUnavailable": "20%",
            "workerReplicas": 0,
            "entryTemplate": {"spec": {"containers": [_container("engine:v1")]}},
        }
        for n, k in (("a", 100), ("b", 50), ("c", 10))
    ]
    new_roles = copy.deepcopy(roles)
    for r in new_roles:
        r["entryTemplate"]["spec"]["containers"][0]["image"] = "engine:v2"
    return parse_scenario(
        {
            "name": "coordinated-seed-example",
            "seed": 3,
            "until": 6000,
            "cluster": {
                "nodes": 40,
                "gpusPerNode": 8,
                "timing": {"schedule": 1, "pull": [3, 8], "start": 1, "load": [20, 40], "terminate": 2},
            },
            "modelServing": {
                "apiVersion": "serving.rolloutui.io/v1alpha1",
                "kind": "ModelServing",
                "metadata": {"name": "chain", "namespace": "default"},
                "spec": {
                    "replicas": 1,
                    "rolloutStrategy": {
                        "type": "RoleRollingUpdate",
                        "roleRollingUpdateConfiguration": {
                            "coordination": {
                                "maxSkew": "10%",
                                "dependencies": [{"role": "a", "dependsOn": ["b"]}, {"role": "b", "dependsOn": ["c"]}],
                            }
                        },
                    },
                    "template": {"roles": roles},
                },
            },
            "events": [
                {"at": 0, "do": "apply"},
                {"at": 200, "do": "patch", "patch": {"spec": {"template": {"roles": new_roles}}}},
            ],
        }
    )


def group_rolling_scenario(replicas: int = 8, max_unavailable: int = 2):
    return parse_scenario(
        {
            "name": "bench-group-rolling",
            "seed": 1,
            "until": 5000,
            "cluster": {"nodes": replicas, "gpusPerNode": 2, "timing": TIMING},
            "modelServing": {
                "apiVersion": "serving.rolloutui.io/v1alpha1",
                "kind": "ModelServing",
                "metadata": {"name": "bench", "namespace": "default"},
                "spec": {
                    "replicas": replicas,
                    "rolloutStrategy": {
                        "type": "ServingGroupRollingUpdate",
                        "rollingUpdateConfiguration": {"maxUnavailable": max_unavailable},
                    },
                    "template": {
                        "roles": [
                            {
                                "name": "serve",
                                "replicas": 1,
                                "workerReplicas": 1,
                                "entryTemplate": {"spec": {"containers": [_container("engine:v1")]}},
                                "workerTemplate": {"spec": {"containers": [_container("engine:v1")]}},
                            }
                        ]
                    },
                },
            },
            "events": [{"at": 0, "do": "apply"}, {"at": 100, "do": "setImage", "role": "serve", "image": "engine:v2"}],
        }
    )


def measure_speed() -> dict:
    scenario = coordinated_scenario()
    runner = Runner(scenario)
    start = time.perf_counter()
    trace = runner.run()
    wall = time.perf_counter() - start
    instances = len(trace["frames"][-1]["instances"]) if trace["frames"] else 0
    return {
        "scenario": scenario.name,
        "instances": instances,
        "virtualSeconds": trace["endTime"],
        "wallSeconds": round(wall, 3),
        "virtualPerWall": round(trace["endTime"] / wall, 1),
        "reconcilePasses": runner.passes,
        "frames": len(trace["frames"]),
        "loopSteps": runner.loop.steps,
        "converged": trace["converged"],
    }


def measure_efficiency(replicas: int = 8, max_unavailable: int = 2) -> dict:
    trace = Runner(group_rolling_scenario(replicas, max_unavailable)).run()
    batches = math.ceil(replicas / max_unavailable)
    per_batch = TIMING["terminate"] + TIMING["schedule"] + TIMING["pull"] + TIMING["start"] + TIMING["load"]
    bound = batches * per_batch
    took = (trace["convergedAt"] - 100) if trace["converged"] else None
    return {
        "replicas": replicas,
        "maxUnavailable": max_unavailable,
        "batches": batches,
        "boundSeconds": bound,
        "rolloutSeconds": took,
        "efficiency": round(took / bound, 4) if took is not None else None,
        "converged": trace["converged"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench sim")
    p.add_argument("--json", action="store_true", help="print a JSON object as the last line")
    args = p.parse_args(argv)
    speed = measure_speed()
    eff = [measure_efficiency(8, 2), measure_efficiency(8, 1), measure_efficiency(6, 3)]
    print("simulation speed")
    print(
        "  "
        f"{'scenario':<28}{'instances':>10}{'virtual s':>11}{'wall s':>9}{'virtual/wall':>14}{'passes':>8}{'frames':>8}"
    )
    print(
        f"  {speed['scenario']:<28}{speed['instances']:>10}{speed['virtualSeconds']:>11.1f}{speed['wallSeconds']:>9.2f}"
        f"{speed['virtualPerWall']:>14.1f}{speed['reconcilePasses']:>8}{speed['frames']:>8}"
    )
    print("rollout efficiency (ServingGroupRollingUpdate, fixed timing; 1.00 = analytic lower bound)")
    print(f"  {'groups':>7}{'maxUnavail':>11}{'batches':>9}{'bound s':>9}{'rollout s':>11}{'ratio':>8}")
    for e in eff:
        took = "-" if e["rolloutSeconds"] is None else f"{e['rolloutSeconds']:.3f}"
        ratio = "-" if e["efficiency"] is None else f"{e['efficiency']:.4f}"
        print(
            f"  {e['replicas']:>7}{e['maxUnavailable']:>11}{e['batches']:>9}{e['boundSeconds']:>9}{took:>11}{ratio:>8}"
        )
    if args.json:
        print(json.dumps({"bench": "sim", "speed": speed, "efficiency": eff}, separators=(",", ":")))
    return 0
