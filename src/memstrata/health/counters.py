"""Bounded in-process counters for the health report's hot keys and queries.

They sit on hot paths (every L2 read), so an ``add`` is a dict update under a lock.
A counter holds at most ``max_names`` names; once full, new names are counted under
:data:`OTHER` instead, so memory stays bounded whatever the traffic.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

from memstrata.errors import ValidationError

OTHER = "(other)"
"""Where a full counter counts the names it has no room for."""


class BoundedCounter:
    """Counts per name, at most ``max_names`` names; :meth:`drain` empties it."""

    def __init__(self, max_names: int = 1_000) -> None:
        if isinstance(max_names, bool) or not isinstance(max_names, int) or max_names < 1:
            raise ValidationError("max_names", "must be a positive integer")
        self._max = max_names
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            counts = self._counts
            if name not in counts and len(counts) >= self._max:
                name = OTHER
            counts[name] = counts.get(name, 0) + n

    def drain(self) -> dict[str, int]:
        """The counts so far, and start again from zero."""
        with self._lock:
            counts, self._counts = self._counts, {}
        return counts


def top(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """The ``n`` largest counts, largest first (ties by name)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return dict(ranked[:n])


def merge(*many: Mapping[str, int]) -> dict[str, int]:
    """The counts of several drains added up."""
    total: Counter[str] = Counter()
    for counts in many:
        total.update(counts)
    return dict(total)


def key_family(key: str) -> str:
    """An L2 key with its owner and hashes replaced by ``*``.

    ``wm:{s_1}:result:step5`` -> ``wm:*:result:step5``; ``wm:{s_1}:api:<sha256>`` ->
    ``wm:*:api:*``; ``pref:{t:u}:ui_color`` -> ``pref:*:ui_color``. So the counts say
    which kind of data is read, across every session and user (see
    :mod:`memstrata.working.keys` for the layout).
    """
    prefix, sep, rest = key.partition(":{")
    if not sep:
        return OTHER
    _, sep, tail = rest.partition("}:")
    if not sep:
        return OTHER
    kind, _, name = tail.partition(":")
    if kind == "api":
        name = "*"
    return f"{prefix}:*:{kind}:{name}" if name else f"{prefix}:*:{kind}"
