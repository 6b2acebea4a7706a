"""The strategy advisor on a 1,000-group ModelServing: wall time of the whole search.

    python -m bench advisor [--json] [--groups 1000] [--floor 500]

The ModelServing of ``bench sim``'s large preview (one role of 1 entry + 2 workers: 3,000 pods,
1 GPU each, on 8-GPU nodes with 16 GPUs free, ServingGroupRollingUpdate maxUnavailable 10%, an
image change) is brought up once on an in-memory cluster (``bring_up``, not timed); then the
advisor's search (``controller.core.advisor.search``) runs the previews of up to 12 candidate
strategies on copies of it (``preview_from``), as the dashboard's advisor does, twice:

1. with the floor the strategy implies (900 groups: maxUnavailable 100 of 1,000);
2. with a floor asked for (``--floor``, 500 groups), where wider batches are allowed.

Target (issue 28): under 10 s of wall time for up to 12 candidates. ``bench sim`` prints the same.
"""

from __future__ import annotations

import argparse
import json
import time

from controller.core import advisor as core
from controller.core.mergepatch import merge_patch
from controller.simcluster.preview import STEP, bring_up, preview_from

ADVISOR_WALL_SECONDS = 10  # issue 28


def measure_advisor(groups: int = 1000, floor: int | None = None, *, live=None) -> dict:
    """One search over the large preview's ModelServing; ``live``: a ``bring_up`` to reuse."""
    from bench.sim import preview_inputs

    manifest, patch, cluster = preview_inputs(groups)
    if live is None:
        live = bring_up(manifest, cluster)
    after = merge_patch(manifest, patch)
    free = sum(cluster.node_gpus) - 3 * groups
    runs: list[float] = []

    def run(candidate: core.Candidate, rollout_limit: float | None) -> core.Outcome:
        full = patch if candidate.current else merge_patch(patch, core.strategy_patch(after, candidate.strategy))
        started = time.perf_counter()
        timeline = preview_from(live, full, cluster, **({"rollout_limit": rollout_limit} if rollout_limit else {}))
        runs.append(time.perf_counter() - started)
        return core.outcome_of(timeline, groups)

    start, start_cpu = time.perf_counter(), time.process_time()
    advice = core.search(
        after,
        run,
        settings=None,
        free_gpus=free,
        load_groups=None,
        load_why="no load signal in the bench",
        floor=floor,
        limit=core.DEFAULT_LIMIT,
        seconds=600.0,
        clock=time.monotonic,
        step=STEP,
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    rec = advice["recommended"]
    return {
        "groups": groups,
        "floor": advice["floor"]["groups"],
        "candidates": len(advice["candidates"]),
        "simulated": len(runs),
        "wallSeconds": round(wall, 2),
        "cpuSeconds": round(cpu, 2),
        "previewSeconds": [round(r, 2) for r in runs],
        "recommended": advice["candidates"][rec]["strategy"] if rec is not None else None,
        "recommendedSeconds": advice["candidates"][rec]["durationSeconds"] if rec is not None else None,
        "currentSeconds": advice["candidates"][0]["durationSeconds"],
        "summary": advice["summary"],
    }


def measure_both(groups: int, low_floor: int) -> list[dict]:
    from bench.sim import preview_inputs

    manifest, _, cluster = preview_inputs(groups)
    live = bring_up(manifest, cluster)
    return [measure_advisor(groups, None, live=live), measure_advisor(groups, low_floor, live=live)]


def report(results: list[dict]) -> None:
    print(
        f"strategy advisor (search over up to {core.DEFAULT_LIMIT} candidates, previews of a running ModelServing; "
        f"target < {ADVISOR_WALL_SECONDS} s wall)"
    )
    print(
        f"  {'groups':>7}{'floor':>7}{'listed':>8}{'simulated':>10}{'wall s':>9}{'CPU s':>8}"
        f"{'current s':>11}{'best s':>8}"
    )
    for r in results:
        best = "-" if r["recommendedSeconds"] is None else f"{r['recommendedSeconds']:.0f}"
        current = "-" if r["currentSeconds"] is None else f"{r['currentSeconds']:.0f}"
        print(
            f"  {r['groups']:>7}{r['floor']:>7}{r['candidates']:>8}{r['simulated']:>10}{r['wallSeconds']:>9.2f}"
            f"{r['cpuSeconds']:>8.2f}{current:>11}{best:>8}"
        )
        print(f"    advice: {r['summary']}")
    met = all(r["wallSeconds"] < ADVISOR_WALL_SECONDS for r in results)
    print(f"  advisor target (< {ADVISOR_WALL_SECONDS} s wall): {'met' if met else 'MISSED'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench advisor")
    p.add_argument("--json", action="store_true", help="print a JSON object as the last line")
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--floor", type=int, default=500, help="the lower floor of the second search")
    args = p.parse_args(argv)
    results = measure_both(args.groups, args.floor)
    report(results)
    if args.json:
        print(json.dumps({"bench": "advisor", "advisor": results}, separators=(",", ":")))
    return 0
