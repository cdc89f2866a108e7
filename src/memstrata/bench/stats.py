"""Latency statistics shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of ``samples`` (linear interpolation)."""
    if not samples:
        raise ValueError("samples: must not be empty")
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


def timed(fn: Callable[..., object], *args: Any, **kwargs: Any) -> float:
    """Seconds one call of ``fn(*args, **kwargs)`` took (perf_counter)."""
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def summary_us(samples_s: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / mean in microseconds."""
    return {
        "p50_us": round(percentile(samples_s, 50) * 1e6, 2),
        "p99_us": round(percentile(samples_s, 99) * 1e6, 2),
        "mean_us": round(float(np.mean(samples_s)) * 1e6, 2),
    }


def summary_ms(samples_s: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / mean in milliseconds."""
    return {
        "p50_ms": round(percentile(samples_s, 50) * 1e3, 4),
        "p99_ms": round(percentile(samples_s, 99) * 1e3, 4),
        "mean_ms": round(float(np.mean(samples_s)) * 1e3, 4),
    }


def progress_bar(console: Console) -> Progress:
    """A transient bar redrawn only by ``update(..., refresh=True)``.

    A live bar's refresh thread takes the GIL ten times a second, in the middle of
    timed calls: 100k L3 search p99 1.6 -> 2.9 ms in one run of ``bench layers``.
    """
    return Progress(console=console, transient=True, auto_refresh=False)
