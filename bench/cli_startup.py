"""Start-up of the remote CLI: how long `rolloutui --help` takes from process start to exit.

    python -m bench cli_startup [--json] [--runs 15]

Runs the installed `rolloutui` command (next to this Python) with an empty home, so no config and
no cached registry: it builds every read verb, imports nothing of the server, and opens no
connection. Prints the median and worst wall time over ``--runs`` runs, the bare interpreter's
start-up for scale, and the slowest imports (``python -X importtime``). Target: median < 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 300.0
COMMAND = Path(sys.executable).parent / "rolloutui"


def _wall_ms(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def _slowest_imports(env: dict[str, str], count: int = 5) -> list[tuple[str, int]]:
    """The top-level imports with the largest cumulative time (microseconds)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import rolloutui_cli.main"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    rows = []
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            if not name.startswith("  ") or name.startswith("  rolloutui_cli"):
                rows.append((name.strip(), int(parts[1])))
    return sorted(rows, key=lambda r: -r[1])[:count]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cli_startup")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    if not COMMAND.exists():
        print(f"{COMMAND} is missing: install the package (make venv) first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        _wall_ms([str(COMMAND), "--help"], env)  # warm the file cache
        cli = [_wall_ms([str(COMMAND), "--help"], env) for _ in range(args.runs)]
        bare = [_wall_ms([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
        imports = _slowest_imports(env)
    result = {
        "cliMedianMs": round(statistics.median(cli), 1),
        "cliMaxMs": round(max(cli), 1),
        "pythonMedianMs": round(statistics.median(bare), 1),
        "targetMs": TARGET_MS,
        "slowestImportsUs": dict(imports),
    }
    verdict = "meets" if result["cliMedianMs"] < TARGET_MS else "MISSES"
    print(f"rolloutui --help: median {result['cliMedianMs']} ms, worst {result['cliMaxMs']} ms over {args.runs} runs")
    print(f"bare python -c pass: median {result['pythonMedianMs']} ms (the interpreter's own share)")
    print(f"target: median < {TARGET_MS:g} ms -> {verdict} the target")
    print("slowest imports (cumulative us): " + ", ".join(f"{n} {us}" for n, us in imports))
    if args.json:
        print(json.dumps(result))
    return 0
