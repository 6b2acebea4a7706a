"""A benchmark's server processes in a temporary directory of their own, for ``bench fanout`` and
``bench list``: started in a fresh directory, stopped at the end, and the directory (its logs and
database) kept when the run fails or ``--keep`` asks for it, removed otherwise."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def in_run_directory(args, log, prefix: str, start):
    """``start(var_dir, log)`` in a fresh directory named ``prefix...``; yields what it returned
    (anything with ``stop()``), stops it at the end. A failure sets ``args.keep`` and says where
    the files are."""
    var_dir = Path(tempfile.mkdtemp(prefix=prefix))
    running = start(var_dir, log)
    try:
        yield running
    except BaseException:
        args.keep = True
        log(f"failed; the run's files (logs, database) are kept in {var_dir}")
        raise
    finally:
        running.stop()
        if not args.keep:
            shutil.rmtree(var_dir, ignore_errors=True)
