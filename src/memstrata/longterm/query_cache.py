"""Results of identical searches, kept until the next write to their collection.

Agents ask some questions at every step with the same words: an intent's fixed
knowledge query ("report template") embeds to the same vector and filters the same
tenant each time. Between two writes to a collection the engine would answer such a
search identically, so the embedded adapter keeps the answer (LRU, per collection).
A write through the index bumps the collection's generation; a search that started
before the write ended does not store its (possibly old) answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence

from memstrata.longterm.models import ScoredPoint
from memstrata.validation import check_positive_int

DEFAULT_QUERY_CACHE_ENTRIES = 1024


class QueryCache:
    """``(collection, request key) -> hits``; every write to a collection voids its part."""

    def __init__(self, max_entries: int = DEFAULT_QUERY_CACHE_ENTRIES) -> None:
        self._max = check_positive_int("max_entries", max_entries, maximum=1_000_000)
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, Hashable], tuple[ScoredPoint, ...]] = OrderedDict()
        self._generations: dict[str, int] = {}
        self.hits = 0

    def generation(self, collection: str) -> int:
        """Read before the engine query; pass it to :meth:`store` with the answer."""
        return self._generations.get(collection, 0)

    def lookup(self, collection: str, key: Hashable) -> list[ScoredPoint] | None:
        """A fresh list of the cached hits, or None."""
        with self._lock:
            found = self._entries.get((collection, key))
            if found is None:
                return None
            self._entries.move_to_end((collection, key))
            self.hits += 1
        return list(found)

    def store(
        self, collection: str, key: Hashable, hits: Sequence[ScoredPoint], generation: int
    ) -> None:
        """Keep ``hits`` answered at ``generation``, unless the collection was written since."""
        with self._lock:
            if generation != self._generations.get(collection, 0):
                return
            self._entries[(collection, key)] = tuple(hits)
            self._entries.move_to_end((collection, key))
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def invalidate(self, collection: str) -> None:
        """Forget every answer about ``collection`` (called once a write to it ended)."""
        with self._lock:
            self._generations[collection] = self._generations.get(collection, 0) + 1
            for entry in [k for k in self._entries if k[0] == collection]:
                del self._entries[entry]

    def clear(self) -> None:
        """Forget everything (index closed)."""
        with self._lock:
            for collection in list(self._generations):
                self._generations[collection] += 1
            self._entries.clear()
