"""Dispatcher: ``python -m bench <name> [args...]`` imports ``bench.<name>`` and calls ``main(argv)``.

Every benchmark prints a human table; with ``--json`` its last line is one JSON object. The first
line is the host speed probe (``bench/_host.py``): this machine's speed moves by up to 2x in an hour.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: python -m bench <name> [--json] [args...]\nbenchmarks: {', '.join(available())}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in available():
        print(f"bench: unknown benchmark {name!r} (available: {', '.join(available())})", file=sys.stderr)
        return 2
    from bench._host import probe_ms

    # First, so that a --json run's last line stays the bench's JSON.
    print(f"host speed probe: {probe_ms()} ms (a fixed standard-library workload: bench/_host.py; lower is faster)")
    module = importlib.import_module(f"bench.{name}")
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
