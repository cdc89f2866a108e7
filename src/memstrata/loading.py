"""The time this process spends loading its own models, which no read deadline counts
(docs/architecture.md, "Deadlines").

A read's deadline protects its caller from a slow backend. Loading MiniLM (the ONNX
graph, built once and cached), the multilingual model or jieba's dictionary is this
process's own start-up work: on a busy machine it can take longer than a whole read
may, and abandoning the read for it left a fresh process's first read empty (issue
31, "Why" 7). So each load runs inside :func:`loading`, and a deadline
(:class:`memstrata.retrieval.guard.DeadlineRunner`) does not count the seconds during
which any load of the process was under way.

Process-wide on purpose: the models themselves are shared by every engine of the
process, and a read waiting on the lock of a load another thread started is waiting
on that same load.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_running = 0  # loads under way now
_since = 0.0  # monotonic time the current stretch of loading began
_total = 0.0  # seconds of loading in the stretches that ended


@contextmanager
def loading() -> Iterator[None]:
    """Marks a model load (and its first, warming call) under way."""
    global _running, _since, _total
    with _lock:
        if _running == 0:
            _since = time.monotonic()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                _total += time.monotonic() - _since


def loading_seconds() -> float:
    """Seconds during which at least one load was under way since the process began
    (the current stretch included): a deadline subtracts its growth."""
    with _lock:
        ongoing = time.monotonic() - _since if _running else 0.0
        return _total + ongoing


def loading_now() -> bool:
    """Whether a load is under way now."""
    with _lock:
        return _running > 0


def freeze_loaded() -> None:
    """Move everything the process holds now out of the garbage collector's reach
    (``gc.freeze``): call it once start-up is done (models loaded, engine opened,
    warmed). Those ~100k objects (modules, functions, models, the engine) are never
    garbage, yet each full collection walked them all: a 50-70 ms pause landing on
    some read (issue 33, docs/benchmarks.md). Afterwards a full collection walks only
    what was made since."""
    gc.collect()
    gc.freeze()
