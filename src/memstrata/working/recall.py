"""The last retrievals of each user, kept in L2 to answer from while L3 is unavailable.

The reader (:mod:`memstrata.retrieval`) writes the items each successful read served
and, when a later read cannot reach L3 within its deadline, reads them back
(docs/service.md, "When L3 is slow or down"). One sorted set per user and collection
(:func:`~memstrata.working.keys.recall_key`; per tenant for shared knowledge): each
member an item's JSON, scored by when it was read, the newest ``max_items`` kept,
the whole set expiring ``ttl_s`` after its last write (ZADD, trim, PEXPIRE in one
transaction). Items are what L3 returned, which passed the gateway on their way in.

A forget drops every set (:meth:`RecallCache.clear`): a cached copy must not outlive
the memory it copies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memstrata.errors import BackendError, ValidationError
from memstrata.validation import check_positive_int
from memstrata.working import keys as K
from memstrata.working.backend import KVBackend

MAX_ENTRY_BYTES = 64 * 1024
"""An item whose JSON is larger is not kept (one long knowledge chunk would crowd out
the rest)."""


class RecallCache:
    """Cached read results over one L2 backend (see the module docstring)."""

    def __init__(self, backend: KVBackend, *, ttl_s: float, max_items: int) -> None:
        self._backend = backend
        self._ttl_ms = K.seconds_to_ms("ttl_s", ttl_s)
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
            raise ValidationError("max_items", "must be an int >= 0")
        self._max = max_items

    @property
    def ttl_s(self) -> float:
        """How long a kept read stays (from its last keep)."""
        return self._ttl_ms / 1000

    @property
    def enabled(self) -> bool:
        """False when it keeps nothing (``max_items`` 0)."""
        return self._max > 0

    def remember(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        entries: Sequence[Mapping[str, Any]],
        at: float,
    ) -> int:
        """Keep ``entries`` (JSON objects) as read at ``at`` (epoch seconds); the
        set keeps its newest ``max_items``. Returns how many it holds now."""
        if not self._max or not entries:
            return 0
        key = K.recall_key(tenant, user, collection)
        members: dict[str, float] = {}
        for entry in entries:
            member = K.canonical_json("entry", dict(entry))
            if len(member) <= MAX_ENTRY_BYTES:
                members[member] = float(at)
        if not members:
            return 0
        return self._backend.append_window(
            key, members, check_positive_int("max_items", self._max), self._ttl_ms
        )

    def recall(self, tenant: str, user: str | None, collection: str) -> list[dict[str, Any]]:
        """What :meth:`remember` kept for this owner and collection, newest first
        (empty when nothing is kept, or it expired)."""
        key = K.recall_key(tenant, user, collection)
        rows = self._backend.range_by_score(key, float("-inf"), float("inf"))
        out: list[dict[str, Any]] = []
        for member, _ in reversed(rows or []):
            try:
                entry = json.loads(member)
            except ValueError as exc:
                raise BackendError(f"corrupt cached read stored at {key}") from exc
            if isinstance(entry, dict):
                out.append(entry)
        return out

    def clear(self) -> int:
        """Drop every cached read, of every tenant; how many sets there were."""
        found = self._backend.scan_prefix(K.recall_prefix())
        # One key at a time: the keys of different owners live on different slots.
        return sum(self._backend.delete([key]) for key in sorted(found))
