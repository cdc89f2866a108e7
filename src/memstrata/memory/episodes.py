"""Episodes: every observed turn and every remembered text, stored whole in L3.

An episode is what was said, after the gateway: tenant, user, the session and its
thread, the turn's place in it (``seq``), role or speaker, and when it was said.
Facts are extracted onto episodes and name them (``MemoryUnit.episodes``); an
episode names the facts extracted from it (payload ``facts``). Nothing a user said
is lost because an extractor did not recognize it.

Episodes live in the ``memories`` collection with payload ``type`` ``episode``, so
one hybrid search ranks them with the active facts. A positioned episode (one of a
conversation) is indexed with its neighbours the way the batch index of
:mod:`memstrata.longterm.adjacent` indexes turns written together: its dense vector
blended with the adjacent turns', its BM25 vector carrying the words of the turns
one and two steps away. Turns arrive one at a time, so :class:`EpisodeIndex` keeps
the last few episodes of each thread and, when a turn arrives, rewrites the
vectors of the (up to two) turns on each side of it that it changes: once a
thread's turns have all arrived, every episode holds exactly the vectors the batch
index would have given it, in whatever order and batches they came.

A long episode (more than ``LongTermSettings.window_words`` words: an assistant's
answer, a pasted document) also gets dense-only window keys (:func:`window_points`),
points of type ``episode_window`` naming their episode (payload ``episode``): the
dense model reads only a text's first ~256 word pieces, so without them the rest of
a long turn is invisible to the dense route. They carry the episode's tenant and
user (a user's forget deletes them with the rest), no BM25 terms (the episode's own
BM25 vector holds every word already) and are never returned: the retriever scores
an episode by the best of its own vector and its windows
(:mod:`memstrata.retrieval.retriever`).
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.longterm.adjacent import add_context_terms, blend_adjacent
from memstrata.longterm.models import Record, SparseVector
from memstrata.longterm.store import IndexedItem, NewItem
from memstrata.validation import check_id, check_text

EPISODE_TYPE = "episode"
"""Payload ``type`` of an episode point."""
EPISODE_WINDOW_TYPE = "episode_window"
"""Payload ``type`` of a long episode's dense window key (payload ``episode``: its id)."""
SOURCE_REMEMBER = "remember"
MAX_SPEAKER_CHARS = 128
# Turns on each side whose vectors a new turn changes (the BM25 context reaches two
# steps), and how many of a thread's turns are kept to rebuild them exactly: a turn
# two steps back needs the two before it too.
_REACH = 2
_WINDOW = 2 * _REACH + 4
_MAX_THREADS = 2048

_ID_NAMESPACE = uuid.UUID("2f4c1a7e-8d3b-4e6a-b1c9-7a5e0d2f3c81")

Vector = NDArray[np.float32]


def turn_episode_id(tenant: str, thread: str, seq: int) -> str:
    """The id of the episode at ``seq`` of ``thread``: derived, so a replayed turn
    rewrites its own point and a turn's neighbours are found without a search."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"turn\x1f{tenant}\x1f{thread}\x1f{seq}"))


def note_episode_id(tenant: str, user: str, text: str, observed_at: datetime) -> str:
    """The id of a remembered text's episode (the same text at the same instant is
    the same episode)."""
    digest = sha256_hex([tenant, user, text, observed_at.isoformat()])
    return str(uuid.uuid5(_ID_NAMESPACE, f"note\x1f{digest}"))


@dataclass(frozen=True, slots=True)
class Episode:
    """One stored turn or remembered text (the text already sanitized).

    ``thread`` and ``seq`` place a turn in its conversation (both or neither);
    ``speaker`` is a display name when the caller gave one (else the role speaks).
    """

    id: str
    tenant: str
    user: str
    text: str
    role: str
    observed_at: datetime
    source: str
    session_id: str | None = None
    turn_id: str | None = None
    thread: str | None = None
    seq: int | None = None
    speaker: str | None = None

    def __post_init__(self) -> None:
        check_id("tenant", self.tenant)
        check_id("user", self.user)
        check_text("text", self.text)
        check_id("role", self.role)
        if self.observed_at.tzinfo is None:
            raise ValidationError("observed_at", "must be timezone-aware")
        if (self.thread is None) != (self.seq is None):
            raise ValidationError("seq", "thread and seq come together")
        if self.seq is not None and (
            isinstance(self.seq, bool) or not isinstance(self.seq, int) or self.seq < 1
        ):
            raise ValidationError("seq", "must be an integer >= 1")
        if self.speaker is not None:
            check_text("speaker", self.speaker, max_chars=MAX_SPEAKER_CHARS)

    @classmethod
    def remembered(cls, tenant: str, user: str, text: str, observed_at: datetime) -> Episode:
        """The episode of a text remembered directly (``engine.remember``): a user's
        words of no conversation, its id derived from what and when."""
        return cls(
            id=note_episode_id(tenant, user, text, observed_at),
            tenant=tenant,
            user=user,
            text=text,
            role="user",
            observed_at=observed_at,
            source=SOURCE_REMEMBER,
        )

    @property
    def position(self) -> tuple[str, str, int] | None:
        """``(tenant, thread, seq)`` for a conversation turn, None otherwise."""
        if self.thread is None or self.seq is None:
            return None
        return self.tenant, self.thread, self.seq

    def item(self, facts: Sequence[str] = ()) -> NewItem:
        """The L3 item of this episode, naming the facts extracted from it."""
        extra: dict[str, Any] = {
            "role": self.role,
            "observed_at": self.observed_at.isoformat(),
            "facts": list(dict.fromkeys(facts)),
        }
        if self.speaker is not None:
            extra["speaker"] = self.speaker
        if self.session_id is not None:
            extra["session_id"] = self.session_id
        if self.turn_id is not None:
            extra["turn_id"] = self.turn_id
        if self.thread is not None:
            extra["thread"] = self.thread
            extra["seq"] = self.seq
        return NewItem(
            text=self.text,
            tenant=self.tenant,
            user=self.user,
            type=EPISODE_TYPE,
            source=self.source,
            id=self.id,
            created_at=self.observed_at.timestamp(),
            extra=extra,
        )


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
        self, new: Sequence[tuple[NewItem, Vector]], fetch: Fetch | None = None
    ) -> list[IndexedItem]:
        """The points to write for ``new`` episodes (item and own dense vector): every
        new episode, and every nearby earlier or later one whose vectors it changes,
        with context vectors. Turns within reach that the index does not hold
        (written by another process, before a restart, or trimmed) are read back
        with ``fetch``. Call under :meth:`writing` and write what it returns before
        leaving it.
        """
        with self._lock:
            wanted = self._wanted([item for item, _ in new])
            if wanted and fetch is not None:
                for item, dense in fetch(wanted):
                    self._learn(item, dense, keep_existing=True)
            dirty: dict[str, tuple[str, str]] = {}
            loose: list[IndexedItem] = []
            for item, dense in new:
                key = self._learn(item, dense, keep_existing=False)
                if key is None:
                    loose.append(IndexedItem(item, dense, self._terms_of(item.text)))
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
        self, item: NewItem, dense: Vector, *, keep_existing: bool
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
        known[seq] = _Known(item, np.asarray(dense, dtype=np.float32), self._terms_of(item.text))
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
                    out.append(IndexedItem(known.item, dense[row], terms[row]))
        return out


def _position(item: NewItem) -> tuple[str, int] | None:
    thread, seq = item.extra.get("thread"), item.extra.get("seq")
    if thread is None or isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return str(thread), seq


def episode_of_payload(point_id: str, payload: Mapping[str, Any]) -> Episode:
    """The episode stored under ``point_id`` (ValidationError when it is not one)."""
    if payload.get("type") != EPISODE_TYPE:
        raise ValidationError("type", f"point {point_id} is not an episode")
    stamp = payload.get("observed_at")
    observed = (
        datetime.fromisoformat(stamp)
        if isinstance(stamp, str)
        else datetime.fromtimestamp(float(payload["created_at"]), tz=UTC)
    )
    seq = payload.get("seq")
    return Episode(
        id=point_id,
        tenant=str(payload["tenant"]),
        user=str(payload["user"]),
        text=str(payload["text"]),
        role=str(payload.get("role", "user")),
        observed_at=observed,
        source=str(payload.get("source", "")),
        session_id=_optional(payload.get("session_id")),
        turn_id=_optional(payload.get("turn_id")),
        thread=_optional(payload.get("thread")) if isinstance(seq, int) else None,
        seq=seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
        speaker=_optional(payload.get("speaker")),
    )


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


# --- window keys of long episodes ------------------------------------------------------

NO_TERMS = SparseVector((), ())
"""The BM25 vector of a window key: dense only (its episode carries the words)."""


def text_windows(text: str, words: int, stride: int, limit: int) -> list[str]:
    """The windows of ``text`` past what its own vector reads (pure): none for a text
    of at most ``words`` words, else windows of ``words`` words starting every
    ``stride`` words after the first (the last one moved back to end where the text
    ends), at most ``limit``. Words are split on whitespace and joined by a space."""
    tokens = text.split()
    if words <= 0 or len(tokens) <= words:
        return []
    windows: list[str] = []
    start = stride
    while len(windows) < limit and start - stride + words < len(tokens):
        begin = min(start, len(tokens) - words)
        windows.append(" ".join(tokens[begin : begin + words]))
        start += stride
    return windows


def window_id(episode_id: str, n: int) -> str:
    """The id of window ``n`` of an episode (derived: a replay rewrites its windows)."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"window\x1f{episode_id}\x1f{n}"))


def window_items(item: NewItem, settings: LongTermSettings) -> list[NewItem]:
    """The window keys of an episode item (none for a short text or an item without an
    id): its tenant, user, source and dates, payload ``episode`` and ``window`` (1..)."""
    if item.id is None:
        return []
    texts = text_windows(
        item.text, settings.window_words, settings.window_stride_words, settings.max_windows
    )
    return [
        NewItem(
            text=window,
            tenant=item.tenant,
            user=item.user,
            type=EPISODE_WINDOW_TYPE,
            source=item.source,
            id=window_id(item.id, n),
            created_at=item.created_at,
            updated_at=item.updated_at,
            extra={"episode": item.id, "window": n},
        )
        for n, window in enumerate(texts, start=1)
    ]


def window_points(
    items: Sequence[NewItem],
    settings: LongTermSettings,
    embed: Callable[[Sequence[str]], Vector],
) -> list[IndexedItem]:
    """The window keys of the long ``items`` (episodes), embedded in one call, with no
    BM25 terms: write them with the episodes. Independent of the thread state, so
    computed outside :meth:`EpisodeIndex.writing`."""
    windows = [window for item in items for window in window_items(item, settings)]
    if not windows:
        return []
    vectors = np.asarray(embed([w.text for w in windows]), dtype=np.float32)
    return [IndexedItem(w, vectors[i], NO_TERMS) for i, w in enumerate(windows)]
