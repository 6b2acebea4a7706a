"""Where the tests find their inputs: inside the repository, so a bare clone runs every test.

- ``KTHENA_EXAMPLES``: Kthena's ModelServing examples (``examples/kthena``);
- ``KSERVE_EXAMPLES``: KServe's InferenceService samples (``examples/kserve``);
- ``EXAMPLE_SCENARIOS``: the documented scenarios (``examples/scenarios``), whose promises
  ``tests/sim`` checks by name; ``TEST_SCENARIOS``: scenarios only the tests use;
- ``SHARED_SCENARIOS``: ``../shared/scenarios`` (or ``$ROLLOUTUI_SHARED/scenarios``), run in
  addition when present: CI lays a copy of the contract's scenarios beside the clone, and its files
  may be newer or more than the repository's copies. Absent, the tests that need it are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KTHENA_EXAMPLES = REPO / "examples" / "kthena"
KSERVE_EXAMPLES = REPO / "examples" / "kserve"
EXAMPLE_SCENARIOS = REPO / "examples" / "scenarios"
TEST_SCENARIOS = REPO / "tests" / "scenarios"
SHARED_SCENARIOS = Path(os.environ.get("ROLLOUTUI_SHARED", REPO.parent / "shared")) / "scenarios"


def shared_scenarios_beyond_the_repository() -> list[Path]:
    """The shared scenarios whose text differs from the repository's copy of the same name (or has
    none): running an identical file twice proves nothing twice."""
    if not SHARED_SCENARIOS.is_dir():
        return []
    out = []
    for path in sorted(SHARED_SCENARIOS.glob("*.yaml")):
        ours = EXAMPLE_SCENARIOS / path.name
        if not ours.exists() or ours.read_bytes() != path.read_bytes():
            out.append(path)
    return out


def kthena_example_files() -> list[Path]:
    return sorted(KTHENA_EXAMPLES.glob("*.yaml"))
