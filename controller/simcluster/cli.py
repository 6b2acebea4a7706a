"""``simulate SCENARIO.yaml [--out TRACE.json] [--seed N]``: the plain entry point behind the
Django command (``manage.py simulate`` wraps ``main``). Exit 0 when the run completed (converged
or not), 2 with a one-line error naming the field for an invalid scenario or manifest."""

from __future__ import annotations

import argparse
import sys

from .scenario import ScenarioError, load_scenario


def build_parser(prog: str = "simulate") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Replay a rollout scenario on the simulated cluster.")
    p.add_argument("scenario", help="scenario YAML file (format: docs/scenarios.md)")
    p.add_argument("--out", help="write the trace JSON here (default: stdout)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    return p


def run(scenario_path: str, *, out: str | None = None, seed: int | None = None, stdout=None, stderr=None) -> int:
    from .runner import run_to_json

    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        scenario = load_scenario(scenario_path, seed=seed)
    except ScenarioError as exc:
        stderr.write(f"simulate: invalid scenario: {exc}\n")
        return 2
    text = run_to_json(scenario)
    if out:
        with open(out, "w") as fh:
            fh.write(text)
    else:
        stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args.scenario, out=args.out, seed=args.seed)


if __name__ == "__main__":
    sys.exit(main())
