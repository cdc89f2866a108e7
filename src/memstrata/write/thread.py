"""The turns before a turn, for the extractor to read it in its conversation.

A conversation turn's episode has a derived id (its thread and position), so the
turns before it are found without a search. :class:`ThreadTurns` keeps the last turns
it prepared, with the facts extracted from them, for every thread (a bounded LRU: the
turns of one batch, and of the batches before, are there already); a turn it does not
hold (written by another process, before a restart) is read back from L3 with the
facts its episode names. Cheap by design: at most :data:`DEPTH` turns, one read of
the episodes and one of their facts, and none at all while the thread is held.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from memstrata.errors import MemstrataError
from memstrata.extract.candidates import PriorFact, PriorTurn, Role
from memstrata.longterm.points import MEMORIES
from memstrata.memory.episodes import EPISODE_TYPE, Episode, turn_episode_id
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit

__all__ = ["DEPTH", "ThreadTurns"]

logger = logging.getLogger("memstrata.write.thread")

DEPTH = 3
"""How many earlier turns of its thread a turn is read with."""
MAX_HELD = 8192
MAX_HELD_CHARS = 2000
"""The most of a turn's text kept for the turns after it (what "me too" rereads)."""
_ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool"})


def _role(value: object) -> Role:
    role = str(value)
    return role if role in _ROLES else "user"  # type: ignore[return-value]


def _facts(units: Sequence[MemoryUnit]) -> tuple[PriorFact, ...]:
    return tuple(
        PriorFact(u.subject, u.attribute, u.value) for u in units if u.kind == "fact" and u.value
    )


class ThreadTurns:
    """The last turns of each thread with the facts stored from them (thread-safe)."""

    def __init__(self, store: MemoryStore, *, depth: int = DEPTH, held: int = MAX_HELD) -> None:
        if depth < 1 or held < 1:
            raise ValueError("depth and held: must be >= 1")
        self._store = store
        self._depth = depth
        self._held = held
        self._turns: OrderedDict[str, PriorTurn] = OrderedDict()
        self._lock = threading.Lock()

    def note(self, episode: Episode, units: Sequence[MemoryUnit]) -> None:
        """``episode`` was prepared with ``units`` extracted from it."""
        if episode.position is None:
            return
        turn = PriorTurn(episode.text[:MAX_HELD_CHARS], _role(episode.role), _facts(units))
        with self._lock:
            self._turns[episode.id] = turn
            self._turns.move_to_end(episode.id)
            while len(self._turns) > self._held:
                self._turns.popitem(last=False)

    def previous(self, episode: Episode) -> tuple[PriorTurn, ...]:
        """The turns before ``episode`` in its thread (oldest first, up to the depth),
        of its user; none for a text of no conversation. A store that cannot be read
        gives the turns held only: the turn is still read on its own."""
        position = episode.position
        if position is None:
            return ()
        tenant, thread, seq = position
        ids = [turn_episode_id(tenant, thread, s) for s in range(max(1, seq - self._depth), seq)]
        with self._lock:
            held = {i: self._turns[i] for i in ids if i in self._turns}
        missing = [i for i in ids if i not in held]
        if missing:
            try:
                held.update(self._read(tenant, episode.user, missing))
            except MemstrataError as exc:
                logger.warning(
                    "ingest: earlier turns of thread unreadable (%s); turn read alone",
                    type(exc).__name__,
                )
        return tuple(held[i] for i in ids if i in held)

    def _read(self, tenant: str, user: str, ids: Sequence[str]) -> dict[str, PriorTurn]:
        records = self._store.longterm.get(MEMORIES, list(ids), tenant=tenant)
        episodes = [
            r
            for r in records
            if r.payload.get("type") == EPISODE_TYPE and str(r.payload.get("user")) == user
        ]
        fact_ids = [str(f) for r in episodes for f in (r.payload.get("facts") or ())]
        units = {u.id: u for u in self._store.get(tenant, fact_ids)} if fact_ids else {}
        out: dict[str, PriorTurn] = {}
        for record in episodes:
            named = [units[str(f)] for f in record.payload.get("facts") or () if str(f) in units]
            text = str(record.payload.get("text", "")).strip()[:MAX_HELD_CHARS]
            if text:
                out[record.id] = PriorTurn(text, _role(record.payload.get("role")), _facts(named))
        return out
