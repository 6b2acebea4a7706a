"""Heartbeat files: how a process without an HTTP port tells the kubelet that its loops still turn.

A long-running loop (the watch process's supervisor in ``runner.run_controller``, Celery beat's
scheduler in ``beat.HeartbeatScheduler``) calls ``Heartbeat.beat()`` each time it has checked that it
is making progress; the container's liveness probe runs ``python -m controller.k8s.liveness FILE
--max-age SECONDS``, which exits 0 while the file was touched within ``max_age`` seconds and 1
otherwise (also when it does not exist yet), so a hung process is restarted.

Worked example: the watch beats every 10 s and its probe allows 60 s, checked every 20 s with
failureThreshold 3; a watch whose stream thread died is restarted 60 s (stale) + up to 3 x 20 s
(probe failures) = at most about 2 minutes later, while one slow API call (35 s at most) never
trips it.

Standard library only: the probe runs every few seconds and must start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


class Heartbeat:
    """Touches ``path`` on ``beat()``; the file's modification time is the last sign of life."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def beat(self) -> None:
        # Write a fresh file and rename it over the old one: a probe never reads a half-written
        # file, and the modification time moves even on filesystems that ignore utime on open files.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{time.time():.3f}\n")
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def age(path: str | os.PathLike[str], now: float | None = None) -> float | None:
    """Seconds since ``path`` was last touched, ``None`` when it does not exist."""
    try:
        mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        return None
    return max(0.0, (time.time() if now is None else now) - mtime)


def is_alive(path: str | os.PathLike[str], max_age: float, now: float | None = None) -> bool:
    seconds = age(path, now)
    return seconds is not None and seconds <= max_age


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m controller.k8s.liveness",
        description="Exit 0 if FILE was touched within --max-age seconds, else 1 (a liveness probe).",
    )
    parser.add_argument("file")
    parser.add_argument("--max-age", type=float, required=True, help="seconds")
    args = parser.parse_args(argv)
    seconds = age(args.file)
    if seconds is None:
        print(f"{args.file}: no heartbeat yet", file=sys.stderr)
        return 1
    if seconds > args.max_age:
        print(f"{args.file}: last heartbeat {seconds:.0f}s ago (> {args.max_age:g}s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
