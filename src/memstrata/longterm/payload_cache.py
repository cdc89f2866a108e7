"""Payloads already read from the embedded engine, kept per point id until it is written.

Reading a payload back from qdrant-edge costs ~10 us per point (the engine decodes
it, then PyO3 builds the dict); retrieval reads the payloads of a 200-item pool on
every query, mostly the same points again. The cache holds what the engine returned
(read-only mappings), bounded LRU per index. Every write through the index
invalidates the written ids first; a reader that raced a write (read before it,
stores after it) is detected by a generation counter and does not store.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memstrata.validation import check_positive_int

DEFAULT_PAYLOAD_CACHE_ENTRIES = 100_000


class PayloadCache:
    """``(collection, point id) -> payload``, LRU-bounded, invalidated by writes."""

    def __init__(self, max_entries: int = DEFAULT_PAYLOAD_CACHE_ENTRIES) -> None:
        self._max = check_positive_int("max_entries", max_entries, maximum=10_000_000)
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], Mapping[str, Any]] = OrderedDict()
        self._generation = 0
        self.hits = 0
        self.misses = 0

    @property
    def generation(self) -> int:
        """Read before an engine read; pass it to :meth:`store` with what was read."""
        return self._generation

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(
        self, collection: str, ids: Sequence[str]
    ) -> tuple[dict[str, Mapping[str, Any]], list[str]]:
        """The cached payloads among ``ids`` and the ids that are not cached."""
        found: dict[str, Mapping[str, Any]] = {}
        missing: list[str] = []
        with self._lock:
            entries = self._entries
            for point_id in ids:
                key = (collection, point_id)
                payload = entries.get(key)
                if payload is None:
                    missing.append(point_id)
                else:
                    entries.move_to_end(key)
                    found[point_id] = payload
            self.hits += len(found)
            self.misses += len(missing)
        return found, missing

    def holds_all(self, collection: str, ids: Iterable[str]) -> bool:
        """Whether every one of ``ids`` is cached (a probe: counters and LRU order
        unchanged; stops at the first miss, the usual answer for a new search)."""
        entries = self._entries
        with self._lock:
            return all((collection, point_id) in entries for point_id in ids)

    def store(
        self, collection: str, payloads: Mapping[str, Mapping[str, Any]], generation: int
    ) -> None:
        """Keep ``payloads`` read at ``generation``, unless a write happened since."""
        with self._lock:
            if generation != self._generation:
                return
            entries = self._entries
            for point_id, payload in payloads.items():
                entries[(collection, point_id)] = payload
                entries.move_to_end((collection, point_id))
            while len(entries) > self._max:
                entries.popitem(last=False)

    def invalidate(self, collection: str, ids: Iterable[str]) -> None:
        """Forget ``ids`` (called once the engine write ended) and void in-flight reads."""
        with self._lock:
            self._generation += 1
            for point_id in ids:
                self._entries.pop((collection, point_id), None)

    def clear(self) -> None:
        """Forget everything (index closed)."""
        with self._lock:
            self._generation += 1
            self._entries.clear()
