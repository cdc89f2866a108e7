"""Stage 7 of the write path: episode vectors with their conversation's context.

A positioned episode (one of a conversation) is indexed with its neighbours the way
the batch index of :mod:`memstrata.longterm.adjacent` indexes turns written together:
its dense vector blended with the adjacent turns', its BM25 vector carrying the words
of the turns one and two steps away. Turns arrive one at a time, so
:class:`EpisodeIndex` keeps the last few episodes of each thread and, when a turn
arrives, rewrites the vectors of the (up to two) turns on each side of it that it
changes: once a thread's turns have all arrived, every episode holds exactly the
vectors the batch index would have given it, in whatever order and batches they came.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.longterm.adjacent import add_context_terms, blend_adjacent
from memstrata.longterm.facade import IndexedItem, NewItem
from memstrata.longterm.points import Record, SparseVector
from memstrata.memory.episodes import EPISODE_TYPE, turn_episode_id

# Turns on each side whose vectors a new turn changes (the BM25 context reaches two
# steps), and how many of a thread's turns are kept to rebuild them exactly: a turn
# two steps back needs the two before it too.
_REACH = 2
_WINDOW = 2 * _REACH + 4
_MAX_THREADS = 2048

Vector = NDArray[np.float32]


def item_of_record(record: Record) -> NewItem:
    """A stored episode read back as the item that rewrites it (payload kept)."""
    payload = record.payload
    reserved = ("tenant", "user", "type", "text", "source", "created_at", "updated_at")
    return NewItem(
        text=str(payload["text"]),
        tenant=str(payload["tenant"]),
        user=None if payload.get("user") is None else str(payload["user"]),
        type=str(payload.get("type", EPISODE_TYPE)),
        source=str(payload.get("source", "")),
        id=record.id,
        created_at=_number(payload.get("created_at")),
        updated_at=_number(payload.get("updated_at")),
        extra={k: _plain(v) for k, v in payload.items() if k not in reserved},
    )


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _plain(value: Any) -> Any:
    """A frozen payload value as plain JSON-like data (tuples back to lists)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class _Known:
    """A recent episode of a thread: its item, own dense vector and own terms."""

    item: NewItem
    dense: Vector
    terms: SparseVector
    second: Vector | None = None
    """Its multilingual vector when known (a rewrite then does not embed it again)."""


Fetch = Callable[[Sequence[tuple[str, str]]], Sequence[tuple[NewItem, Vector]]]
"""Reads back stored episodes by ``(tenant, id)``: their items and own dense vectors."""


class EpisodeIndex:
    """The vectors of episodes with their neighbours' context, as turns stream in.

    Thread-safe, and one per process: every worker thread's batch goes through the
    same index, so a turn that arrives after later ones (another thread's batch)
    still finds them. Computing and writing are one step (:meth:`writing`): the
    last write of a turn's vectors is the one computed with the most neighbours
    known.
    """

    def __init__(
        self,
        terms_of: Callable[[str], SparseVector],
        settings: LongTermSettings,
        *,
        max_threads: int = _MAX_THREADS,
    ) -> None:
        self._terms_of = terms_of
        self._blend = settings.adjacent_blend
        self._context = settings.context_terms
        self._max_threads = max_threads
        self._threads: OrderedDict[tuple[str, str], dict[int, _Known]] = OrderedDict()
        self._lock = threading.RLock()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the index while computing vectors and writing them."""
        with self._lock:
            yield

    def index(
        self,
        new: Sequence[tuple[NewItem, Vector]],
        fetch: Fetch | None = None,
        *,
        second: Sequence[Vector | None] | None = None,
    ) -> list[IndexedItem]:
        """The points to write for ``new`` episodes (item and own dense vector): every
        new episode, and every nearby earlier or later one whose vectors it changes,
        with context vectors. Turns within reach that the index does not hold
        (written by another process, before a restart, or trimmed) are read back
        with ``fetch``. ``second``: the new episodes' multilingual vectors when the
        caller has them (context does not change them: kept and written with every
        rewrite). Call under :meth:`writing` and write what it returns before
        leaving it.
        """
        seconds = list(second) if second is not None else [None] * len(new)
        with self._lock:
            wanted = self._wanted([item for item, _ in new])
            if wanted and fetch is not None:
                for item, dense in fetch(wanted):
                    self._learn(item, dense, keep_existing=True)
            dirty: dict[str, tuple[str, str]] = {}
            loose: list[IndexedItem] = []
            for (item, dense), other in zip(new, seconds, strict=True):
                key = self._learn(item, dense, keep_existing=False, second=other)
                if key is None:
                    loose.append(IndexedItem(item, dense, self._terms_of(item.text), other))
                    continue
                seq = int(item.extra["seq"])
                thread = self._threads[key]
                for step in range(-_REACH, _REACH + 1):
                    near = thread.get(seq + step)
                    if near is not None and near.item.id is not None:
                        dirty[near.item.id] = key
            points = loose + self._rebuilt(dirty)
            # Trimmed only now: a turn that arrives after later ones is still written
            # with the neighbours held (and, once trimmed, read back by ``fetch``).
            for key in set(dirty.values()):
                self._trim(key)
            return points

    def _wanted(self, items: Sequence[NewItem]) -> list[tuple[str, str]]:
        """``(tenant, id)`` of the turns within reach of these new ones that the index
        does not hold: the turns whose vectors a new one changes (two steps each way)
        and the turns those are built from (two more)."""
        batch: set[tuple[str, str, int]] = set()
        for item in items:
            position = _position(item)
            if position is not None:
                batch.add((item.tenant, *position))
        wanted: dict[str, str] = {}
        for tenant, thread, seq in batch:
            known = self._threads.get((tenant, thread), {})
            for step in range(-2 * _REACH, 2 * _REACH + 1):
                near = seq + step
                if near >= 1 and near not in known and (tenant, thread, near) not in batch:
                    wanted[turn_episode_id(tenant, thread, near)] = tenant
        return [(tenant, point_id) for point_id, tenant in sorted(wanted.items())]

    def _learn(
        self, item: NewItem, dense: Vector, *, keep_existing: bool, second: Vector | None = None
    ) -> tuple[str, str] | None:
        position = _position(item)
        if position is None:
            return None
        key, seq = (item.tenant, position[0]), position[1]
        known = self._threads.get(key)
        if known is None:
            known = self._threads[key] = {}
            while len(self._threads) > self._max_threads:
                self._threads.popitem(last=False)
        else:
            self._threads.move_to_end(key)
        if keep_existing and seq in known:
            return key
        known[seq] = _Known(
            item, np.asarray(dense, dtype=np.float32), self._terms_of(item.text), second
        )
        return key

    def _trim(self, key: tuple[str, str]) -> None:
        known = self._threads.get(key)
        if known:
            newest = max(known)
            for old in [s for s in known if s <= newest - _WINDOW]:
                del known[old]

    def _rebuilt(self, dirty: Mapping[str, tuple[str, str]]) -> list[IndexedItem]:
        """The dirty episodes' vectors, computed over their threads' known turns."""
        by_thread: dict[tuple[str, str], set[str]] = {}
        for point_id, key in dirty.items():
            by_thread.setdefault(key, set()).add(point_id)
        out: list[IndexedItem] = []
        for key, ids in by_thread.items():
            turns = sorted(self._threads[key].items())
            positions = [(key[0], key[1], seq) for seq, _ in turns]
            dense = blend_adjacent(
                np.stack([known.dense for _, known in turns]), positions, self._blend
            )
            terms = add_context_terms([known.terms for _, known in turns], positions, self._context)
            for row, (_, known) in enumerate(turns):
                if known.item.id in ids:
                    out.append(IndexedItem(known.item, dense[row], terms[row], known.second))
        return out


def _position(item: NewItem) -> tuple[str, int] | None:
    thread, seq = item.extra.get("thread"), item.extra.get("seq")
    if thread is None or isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return str(thread), seq
