"""Episodes: every observed turn and every remembered text, stored whole in L3.

An episode is what was said, after the gateway: tenant, user, the session and its
thread, the turn's place in it (``seq``), role or speaker, and when it was said.
Facts are extracted onto episodes and name them (``MemoryUnit.episodes``); an
episode names the facts extracted from it (payload ``facts``). Nothing a user said
is lost because an extractor did not recognize it.

Episodes live in the ``memories`` collection with payload ``type`` ``episode``, so
one hybrid search ranks them with the active facts; the write path indexes a turn
with its neighbours' context (:mod:`memstrata.write.index`).

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

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.errors import ValidationError
from memstrata.extract.smalltalk import small_talk_payload
from memstrata.hashing import sha256_hex
from memstrata.longterm.facade import IndexedItem, NewItem
from memstrata.longterm.points import SparseVector
from memstrata.validation import MAX_SPEAKER_CHARS, check_id, check_text

EPISODE_TYPE = "episode"
"""Payload ``type`` of an episode point."""
EPISODE_WINDOW_TYPE = "episode_window"
"""Payload ``type`` of a long episode's dense window key (payload ``episode``: its id)."""
SOURCE_REMEMBER = "remember"
FACTS_KEY = "facts"
"""Payload key of an episode: the ids of the facts extracted from it."""
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
            FACTS_KEY: list(dict.fromkeys(facts)),
        }
        if self.speaker is not None:
            extra["speaker"] = self.speaker
        # Kept whole, ranked low (memstrata.extract.smalltalk).
        extra.update(small_talk_payload(self.text, self.speaker))
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


def with_facts(item: NewItem, facts: Sequence[str]) -> NewItem:
    """An episode's item (:meth:`Episode.item`) naming ``facts`` instead: what the
    write path builds once per episode is not built again after its facts commit."""
    return replace(item, extra={**item.extra, FACTS_KEY: list(dict.fromkeys(facts))})


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
