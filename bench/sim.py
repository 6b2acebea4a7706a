"""Simulator benchmarks: speed of the simulation and efficiency of the rollouts it replays.

1. Speed: virtual seconds simulated per wall second for the 160-instance coordinated seed example
   (roles a=100, b=50, c=10; the shared scenario file when it is there, else the same scenario built
   here), with its CPU time. Target: under 12 s of CPU (it was a timed test until issue 15).
2. Rollout efficiency: a fixed-timing ServingGroupRollingUpdate (8 groups, maxUnavailable 2, one
   entry + one worker pod per group, no traffic) against its analytic lower bound. Each batch must
   wait for the old pods to terminate (their names and GPUs are taken until then), then schedule,
   pull, start and load the new ones:

       bound = batches x (terminate + schedule + pull + start + load)
             = ceil(8 / 2) x (3 + 1 + 5 + 2 + 30) = 4 x 41 = 164 s

   efficiency = (convergedAt - update time) / bound; 1.00 is perfect, the target is within 5%.
3. Preview of a large change: the dashboard's "what will this change do?" (``preview_from``: a
   copy of the ModelServing as it runs, the change applied at once and rolled out to completion)
   of a 1,000-group ModelServing (one role of 1 entry + 2 workers: 3,000 pods, 1 GPU each, on 377
   nodes of 8 GPUs, default fixed timings) whose image changes, ServingGroupRollingUpdate
   maxUnavailable 10%: 10 batches of 100 groups (10 x 41 s = 410 s of virtual time), converged.
   The ModelServing it copies is first brought up from its manifest on an in-memory cluster
   (``bring_up``; timed apart as "bring-up s": a preview of a manifest alone, ``preview_change``,
   takes both). Target: under 5 s of wall time, converged; reported with its CPU time and the
   process's peak RSS (ru_maxrss; the preview runs first). The dashboard's preview used to bring
   the spec up on an empty copy first, and this bench then timed both.

4. The strategy advisor on the same 1,000-group ModelServing (``bench/advisor.py``): its search over
   up to 12 candidate strategies, with the strategy's own floor and with a floor of half the groups
   (JSON: ``preview.advisor``). Target (issue 28): under 10 s of wall time.

    python -m bench sim [--json] [--preview-groups 1000]   (0 skips the preview and the advisor)
    python -m bench sim --preview-only --preview-groups 10000   (the 10,000-group figure alone)

Targets (issue 27): speed > 1,000x real time; a 1,000-group preview < 1 s of wall time; a
10,000-group (30,000-pod) preview < 15 s and a peak RSS < 1 GB.

Figures measured so far, with their dates and the host's speed: bench/README.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import resource
import time
from pathlib import Path

from controller.core import safeyaml
from controller.simcluster.config import ClusterConfig, Span
from controller.simcluster.preview import PreviewCluster, bring_up, preview_from
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario, parse_scenario

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / "examples" / "scenarios"

TIMING = {"schedule": 1, "pull": 5, "start": 2, "load": 30, "terminate": 3}
PREVIEW_WALL_SECONDS = 1  # issue 27 (issue 15: 5 s): a 1,000-group preview, wall seconds
# issue 27: a 10,000-group (30,000-pod) preview, wall seconds and the process's peak RSS
LARGE_PREVIEW_GROUPS = 10_000
LARGE_PREVIEW_WALL_SECONDS = 15
LARGE_PREVIEW_RSS_MB = 1024
SPEED_TARGET = 1000  # issue 27: the coordinated seed example, virtual seconds per wall second


def preview_targets(groups: int) -> tuple[float, float | None]:
    """(wall seconds, peak RSS MB or None) a preview of ``groups`` groups must stay under."""
    if groups >= LARGE_PREVIEW_GROUPS:
        return LARGE_PREVIEW_WALL_SECONDS, LARGE_PREVIEW_RSS_MB
    return PREVIEW_WALL_SECONDS, None


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


PATHS_SPEED_TARGET = 200  # issue 26: paths and tokens on, the seed example still > 200x real time


def coordinated_paths_scenario():
    """The seed example with requests through its roles and token figures: 20 requests a second
    down the path a -> b -> c (its dependencies' call order), revision-affine, each with input and
    output tokens, on images whose new version changes the KV cache format."""
    doc = safeyaml.load((SHARED / "coordinated-seed-example.yaml").read_text())
    doc["name"] = "coordinated-seed-example+paths"
    doc["modelServing"]["spec"]["traffic"] = {"path": ["a", "b", "c"], "routing": "revisionAffine"}
    doc["traffic"] = {"rps": 20, "tokens": {"input": [200, 2000], "output": [50, 400]}}
    doc["images"] = {
        "engine:v1": {"kvFormat": "a", "ttftMs": [120, 300], "tpotMs": [25, 45]},
        "engine:v2": {"kvFormat": "b", "ttftMs": [80, 200], "tpotMs": [20, 40]},
    }
    return parse_scenario(doc)


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


def measure_speed(scenario=None) -> dict:
    scenario = coordinated_scenario() if scenario is None else scenario
    runner = Runner(scenario)
    start, start_cpu = time.perf_counter(), time.process_time()
    trace = runner.run()
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    instances = len(trace["frames"][-1]["instances"]) if trace["frames"] else 0
    return {
        "scenario": scenario.name,
        "instances": instances,
        "virtualSeconds": trace["endTime"],
        "wallSeconds": round(wall, 3),
        "cpuSeconds": round(cpu, 3),
        "virtualPerWall": round(trace["endTime"] / wall, 1),
        "reconcilePasses": runner.kind.passes,
        "replayedPasses": runner.kind.skipped_passes,  # of those, replayed (their inputs unchanged)
        "frames": len(trace["frames"]),
        "loopSteps": runner.loop.steps,
        "converged": trace["converged"],
        "requests": trace["requests"]["total"],
        "paths": trace["requests"].get("paths"),
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


def preview_inputs(groups: int) -> tuple[dict, dict, PreviewCluster]:
    """The large preview: ``groups`` groups of one role (1 entry + 2 workers), an image change."""
    role = {
        "name": "serve",
        "replicas": 1,
        "workerReplicas": 2,
        "entryTemplate": {"spec": {"containers": [_container("engine:v1")]}},
        "workerTemplate": {"spec": {"containers": [_container("engine:v1")]}},
    }
    manifest = {
        "apiVersion": "serving.rolloutui.io/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {
            "replicas": groups,
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": "10%"},
            },
            "template": {"roles": [role]},
        },
    }
    new_role = copy.deepcopy(role)
    for key in ("entryTemplate", "workerTemplate"):
        new_role[key]["spec"]["containers"][0]["image"] = "engine:v2"
    patch = {"spec": {"template": {"roles": [new_role]}}}
    # 3 GPUs per group on 8-GPU nodes, two nodes to spare: 1,000 groups -> 377 nodes.
    nodes = [8] * (groups * 3 // 8 + 2)
    cluster = PreviewCluster(
        node_gpus=nodes, config=ClusterConfig(timing={k: Span.fixed(v) for k, v in TIMING.items()})
    )
    return manifest, patch, cluster


def measure_preview(groups: int = 1000) -> dict:
    """The dashboard's preview (``preview_from``: a copy of the ModelServing as it runs, the change
    rolled out to completion), timed; the ModelServing it copies was brought up first on an
    in-memory cluster (``bring_up``, timed apart: what ``preview_change`` adds for a manifest
    alone)."""
    manifest, patch, cluster = preview_inputs(groups)
    start = time.perf_counter()
    live = bring_up(manifest, cluster)
    bring_up_wall = time.perf_counter() - start
    start, start_cpu = time.perf_counter(), time.process_time()
    timeline = preview_from(live, patch, cluster)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    return {
        "groups": groups,
        "pods": groups * 3,
        "nodes": timeline.nodes,
        "wallSeconds": round(wall, 2),
        "cpuSeconds": round(cpu, 2),
        "bringUpWallSeconds": round(bring_up_wall, 2),
        "peakRssMB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "baselineConverged": timeline.baseline_converged,
        "converged": timeline.converged,
        "convergedAfter": timeline.converged_after,
        "passes": len(timeline.samples),
    }


def report_preview(preview: dict) -> None:
    wall_target, rss_target = preview_targets(preview["groups"])
    rss_words = "" if rss_target is None else f", peak RSS < {rss_target} MB"
    print(
        "preview of a large change (preview_from: copy the running ModelServing, apply the change, roll out "
        f"to completion; target < {wall_target} s wall{rss_words})"
    )
    print(
        f"  {'groups':>7}{'pods':>7}{'nodes':>7}{'wall s':>9}{'CPU s':>8}{'peak RSS MB':>13}"
        f"{'converged':>11}{'after s':>9}{'bring-up s':>12}"
    )
    after = "-" if preview["convergedAfter"] is None else f"{preview['convergedAfter']:.1f}"
    print(
        f"  {preview['groups']:>7}{preview['pods']:>7}{preview['nodes']:>7}{preview['wallSeconds']:>9.2f}"
        f"{preview['cpuSeconds']:>8.2f}{preview['peakRssMB']:>13.1f}{str(preview['converged']):>11}{after:>9}"
        f"{preview['bringUpWallSeconds']:>12.2f}"
    )
    print(
        "  (bring-up s: bringing the manifest up on an empty copy first, untimed above; preview_change of a "
        "manifest alone takes both; peak RSS is the process's, bring-up included)"
    )
    met = preview["converged"] and preview["wallSeconds"] < wall_target
    print(f"  preview wall target (< {wall_target} s, converged): {'met' if met else 'MISSED'}")
    if rss_target is not None:
        met = preview["peakRssMB"] < rss_target
        print(f"  preview memory target (peak RSS < {rss_target} MB): {'met' if met else 'MISSED'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench sim")
    p.add_argument("--json", action="store_true", help="print a JSON object as the last line")
    p.add_argument("--preview-groups", type=int, default=1000, help="groups of the large preview (0: skip it)")
    p.add_argument("--no-advisor", action="store_true", help="skip the strategy advisor")
    p.add_argument("--preview-only", action="store_true", help="the preview alone (e.g. --preview-groups 10000)")
    args = p.parse_args(argv)
    preview = measure_preview(args.preview_groups) if args.preview_groups > 0 else None
    # 4. The strategy advisor on the same ModelServing (bench/advisor.py), reported with the preview.
    from bench import advisor

    advice = None
    if preview is not None and not (args.no_advisor or args.preview_only):
        advice = advisor.measure_both(args.preview_groups, args.preview_groups // 2)
    if args.preview_only:
        report_preview(preview)
        if args.json:
            print(json.dumps({"bench": "sim", "preview": preview}, separators=(",", ":")))
        return 0
    if preview is not None:
        preview["advisor"] = advice
    speed = measure_speed()
    paths_speed = measure_speed(coordinated_paths_scenario())
    eff = [measure_efficiency(8, 2), measure_efficiency(8, 1), measure_efficiency(6, 3)]
    print("simulation speed")
    print(
        "  "
        f"{'scenario':<28}{'instances':>10}{'virtual s':>11}{'wall s':>9}{'CPU s':>8}"
        f"{'virtual/wall':>14}{'passes':>8}{'frames':>8}"
    )
    print(
        f"  {speed['scenario']:<28}{speed['instances']:>10}{speed['virtualSeconds']:>11.1f}"
        f"{speed['wallSeconds']:>9.2f}{speed['cpuSeconds']:>8.2f}"
        f"{speed['virtualPerWall']:>14.1f}{speed['reconcilePasses']:>8}{speed['frames']:>8}"
    )
    met = speed["virtualPerWall"] > SPEED_TARGET
    print(f"    target > {SPEED_TARGET}x real time: {'met' if met else 'MISSED'}")
    ps = paths_speed
    print(
        f"  {'  + paths and tokens':<28}{ps['instances']:>10}{ps['virtualSeconds']:>11.1f}"
        f"{ps['wallSeconds']:>9.2f}{ps['cpuSeconds']:>8.2f}"
        f"{ps['virtualPerWall']:>14.1f}{ps['reconcilePasses']:>8}{ps['frames']:>8}"
    )
    counts = ps["paths"] or {}
    met = ps["virtualPerWall"] > PATHS_SPEED_TARGET
    per_cpu = ps["virtualSeconds"] / ps["cpuSeconds"] if ps["cpuSeconds"] else 0.0
    print(
        f"    {ps['requests']} requests through a -> b -> c (mixed {counts.get('mixed')}, noRoute "
        f"{counts.get('noRoute')}, kvMismatch {counts.get('kvMismatch')}); {per_cpu:.1f} virtual s per CPU s; "
        f"target > {PATHS_SPEED_TARGET}x real time: {'met' if met else 'MISSED'}"
    )
    print(
        f"    of its {ps['reconcilePasses']} passes, {ps['replayedPasses']} replayed (nothing they read changed, "
        "within the time their plan holds)"
    )
    print("rollout efficiency (ServingGroupRollingUpdate, fixed timing; 1.00 = analytic lower bound)")
    print(f"  {'groups':>7}{'maxUnavail':>11}{'batches':>9}{'bound s':>9}{'rollout s':>11}{'ratio':>8}")
    for e in eff:
        took = "-" if e["rolloutSeconds"] is None else f"{e['rolloutSeconds']:.3f}"
        ratio = "-" if e["efficiency"] is None else f"{e['efficiency']:.4f}"
        print(
            f"  {e['replicas']:>7}{e['maxUnavailable']:>11}{e['batches']:>9}{e['boundSeconds']:>9}{took:>11}{ratio:>8}"
        )
    if preview is not None:
        report_preview(preview)
    if advice is not None:
        advisor.report(advice)
    if args.json:
        print(
            json.dumps(
                {"bench": "sim", "speed": speed, "pathsSpeed": paths_speed, "efficiency": eff, "preview": preview},
                separators=(",", ":"),
            )
        )
    return 0
