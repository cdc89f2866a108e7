"""Helpers for tests that run real worker processes (crash tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def spawn_queue_worker(
    args: Sequence[str], log: Path, *, pythonpath: Sequence[Path]
) -> subprocess.Popen[bytes]:
    """``python -m memstrata.worker ARGS`` with its output appended to ``log``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in pythonpath)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "memstrata.worker", *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for(predicate: Callable[[], bool], timeout_s: float, what: str, log: Path) -> None:
    """Poll ``predicate`` until true; on timeout fail with the worker's log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.002)
    raise AssertionError(f"timed out waiting for {what}; worker log:\n{log.read_text()}")
