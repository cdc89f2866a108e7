"""Results of identical searches, kept until the next write to their collection.

Agents ask some questions at every step with the same words: an intent's fixed
knowledge query ("report template") embeds to the same vector and filters the same
tenant each time. Between two writes to a collection the engine would answer such a
search identically, so the embedded adapter keeps the answer (LRU, per collection).
A write through the index bumps the collection's generation; a search that started
before the write ended does not store its (possibly old) answer.

Answers are kept in columns (ids, scores, payloads), not as hit objects: most
searches are never repeated, and ~400 hit tuples per stored answer, each holding a
payload, were objects the cyclic GC had to walk - its collections of the older
generations grew to ~10 ms (young) and ~60 ms (old) in a long retrieval run. Tuples
of strings and floats are not tracked by the GC at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from memstrata.longterm.points import EMPTY_PAYLOAD, ScoredPoint
from memstrata.validation import check_positive_int

DEFAULT_QUERY_CACHE_ENTRIES = 1024

# ids, scores, and payloads (None when every hit has the empty payload: route lists)
_Answer = tuple[tuple[str, ...], tuple[float, ...], tuple[Any, ...] | None]


class QueryCache:
    """``(collection, request key) -> hits``; every write to a collection voids its part."""

    def __init__(self, max_entries: int = DEFAULT_QUERY_CACHE_ENTRIES) -> None:
        self._max = check_positive_int("max_entries", max_entries, maximum=1_000_000)
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, Hashable], _Answer] = OrderedDict()
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
        ids, scores, payloads = found
        if payloads is None:
            return [ScoredPoint(i, s, EMPTY_PAYLOAD) for i, s in zip(ids, scores, strict=True)]
        return [ScoredPoint(*hit) for hit in zip(ids, scores, payloads, strict=True)]

    def store(
        self, collection: str, key: Hashable, hits: Sequence[ScoredPoint], generation: int
    ) -> None:
        """Keep ``hits`` answered at ``generation``, unless the collection was written since."""
        # Transposed in C (a route list holds hundreds of hits); payloads compared by
        # identity, as the empty one is shared.
        ids: tuple[str, ...] = ()
        scores: tuple[float, ...] = ()
        column: tuple[Any, ...] = ()
        if hits:
            ids, scores, column = zip(*hits, strict=True)
        payloads = None if set(map(id, column)) <= {id(EMPTY_PAYLOAD)} else column
        with self._lock:
            if generation != self._generations.get(collection, 0):
                return
            self._entries[(collection, key)] = (ids, scores, payloads)
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
