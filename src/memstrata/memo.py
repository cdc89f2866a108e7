"""Bounded memo dicts for hot paths: emptied when full instead of LRU bookkeeping.

Used where the same keys come back call after call (engine ids, scoring features):
a plain dict hit costs ~0.05 us, an ``lru_cache`` or ``OrderedDict`` move several
times that. Emptying the dict now and then only costs recomputing; concurrent
callers at worst compute a value twice.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(cache: dict[K, V], key: K, value: V, limit: int) -> V:
    """Store ``value`` under ``key`` (emptying ``cache`` first when it holds ``limit``
    entries) and return it."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value
