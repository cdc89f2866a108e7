"""The consumer side of the long-term write pipeline: queue entries in, memory units out.

:class:`IngestHandler` is the :class:`~memstrata.memory.consumer.Handler` a
:class:`~memstrata.memory.consumer.QueueWorker` calls with a batch of entries. Per entry:

* ``turn`` (from ``engine.observe``): worth-remembering filter, then the extractor,
  then ``unit_from_candidate``;
* ``note`` (free text from ``engine.queue_memory``): the extractor without the filter
  (the caller asked for it to be kept); text with no recognizable fact becomes a
  ``note`` event so nothing the caller asked for is silently dropped;
* ``unit`` (a structured :class:`MemoryUnit` from ``engine.queue_memory``): decoded as is.

The units of the whole batch are embedded in one call (the embedder is the bound of
the pipeline; one call per unit would waste most of its batching), then written one
by one through the memory store, which versions and dedupes them.

Failure policy, which the queue's at-least-once delivery relies on:

* an entry that cannot be decoded, or whose extraction fails (LLM endpoint down or
  answering garbage), is logged by ids and error type - never its text - and counted;
  the entry is then acknowledged without writing anything, so a corrupted unit can
  never reach L3 and one bad turn cannot block the queue;
* a store failure raises, so the worker leaves the entry pending and retries it.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from memstrata.embed.protocol import Embedder
from memstrata.errors import ValidationError
from memstrata.extract.errors import ExtractionError
from memstrata.extract.filter import WorthFilter
from memstrata.extract.models import ROLES, Candidate, Role, Turn
from memstrata.extract.protocol import Extractor
from memstrata.extract.rules import RuleExtractor
from memstrata.hashing import sha256_hex
from memstrata.memory.entries import JSON, QueueEntry
from memstrata.memory.units import (
    MAX_VALUE_CHARS,
    UNIT_KINDS,
    MemoryUnit,
    UnitKind,
    UnitSource,
    unit_from_candidate,
)

logger = logging.getLogger("memstrata.memory.handler")

KIND_TURN = "turn"
KIND_NOTE = "note"
KIND_UNIT = "unit"
ENTRY_KINDS: frozenset[str] = frozenset({KIND_TURN, KIND_NOTE, KIND_UNIT})
NOTE_SUBJECT = "user"
NOTE_ATTRIBUTE = "note"
# Entries whose units were prepared but not yet written (a failed store write) are
# kept so a retry neither re-asks an LLM nor trips the filter's repeat detection.
MAX_PREPARED = 4096


class TextSanitizer(Protocol):
    """The gateway role the handler needs (``memstrata.gateway.Sanitizer`` fits)."""

    def text(self, text: str, *, location: str, field: str | None = None) -> str:
        """``text`` with credentials and PII replaced."""
        ...


class UnitWriter(Protocol):
    """The memory-store role the handler needs (``memstrata.memory.store.MemoryStore``)."""

    def write(self, unit: MemoryUnit) -> object:
        """Version, dedupe and store ``unit``; durable when this returns."""
        ...


# --- payload codecs (pure; the producer side uses the encoders) ----------------------


def _iso(value: datetime) -> str:
    return value.isoformat()


def _when(payload: Mapping[str, Any], key: str) -> datetime:
    raw = payload.get(key)
    if not isinstance(raw, str):
        raise ValidationError(key, "must be an ISO-8601 timestamp")
    try:
        return datetime.fromisoformat(raw)
    except ValueError as exc:
        raise ValidationError(key, "is not an ISO-8601 timestamp") from exc


def _string(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str):
        raise ValidationError(key, "must be a string")
    return value


def _optional_string(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise ValidationError(key, "must be a string or null")
    return value


def _role(value: str) -> Role:
    if value not in ROLES:
        raise ValidationError("role", f"must be one of {sorted(ROLES)}")
    role: Role = value  # type: ignore[assignment]  # narrowed by the membership check
    return role


def _kind(value: str) -> UnitKind:
    if value not in UNIT_KINDS:
        raise ValidationError("kind", f"must be one of {sorted(UNIT_KINDS)}")
    kind: UnitKind = value  # type: ignore[assignment]  # narrowed by the membership check
    return kind


def turn_payload(turn: Turn) -> dict[str, JSON]:
    """The queue payload of an observed turn (its text already sanitized)."""
    return {
        "tenant": turn.tenant,
        "user": turn.user,
        "session_id": turn.session_id,
        "turn_id": turn.turn_id,
        "role": turn.role,
        "text": turn.text,
        "observed_at": _iso(turn.observed_at),
    }


def turn_from_payload(payload: Mapping[str, Any]) -> Turn:
    """Rebuild a :class:`Turn`; ValidationError names the bad field."""
    return Turn(
        text=_string(payload, "text"),
        role=_role(_string(payload, "role")),
        tenant=_string(payload, "tenant"),
        user=_string(payload, "user"),
        session_id=_string(payload, "session_id"),
        turn_id=_string(payload, "turn_id"),
        observed_at=_when(payload, "observed_at"),
    )


def note_payload(tenant: str, user: str, text: str, observed_at: datetime) -> dict[str, JSON]:
    """The queue payload of a free-text memory written directly (no filter)."""
    return {"tenant": tenant, "user": user, "text": text, "observed_at": _iso(observed_at)}


def note_turn(payload: Mapping[str, Any]) -> Turn:
    """A direct note read as a user turn, so the same extractor handles it.

    Its turn id is derived from the content, so a replayed note is the same turn.
    """
    text = _string(payload, "text")
    tenant, user = _string(payload, "tenant"), _string(payload, "user")
    observed_at = _when(payload, "observed_at")
    digest = sha256_hex([tenant, user, text, _iso(observed_at)])[:16]
    return Turn(
        text=text,
        role="user",
        tenant=tenant,
        user=user,
        session_id="direct",
        turn_id=f"n{digest}",
        observed_at=observed_at,
    )


def unit_payload(unit: MemoryUnit) -> dict[str, JSON]:
    """The queue payload of a structured unit written directly.

    Only what a new unit may carry travels: version, active flag, validity end and
    access stats belong to the store, which assigns them when it versions the unit.
    """
    source = unit.source
    return {
        "subject": unit.subject,
        "attribute": unit.attribute,
        "value": unit.value,
        "kind": unit.kind,
        "tenant": source.tenant,
        "user": source.user,
        "session_id": source.session_id,
        "turn_id": source.turn_id,
        "document_id": source.document_id,
        "confidence": source.confidence,
        "observed_at": _iso(unit.observed_at),
        "valid_from": _iso(unit.valid_from),
        "importance": unit.importance,
        "pinned": unit.pinned,
        "extras": [[label, value] for label, value in unit.extras],
    }


def _number(payload: Mapping[str, Any], key: str) -> float:
    value = payload.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(key, "must be a number")
    return float(value)


def unit_from_payload(payload: Mapping[str, Any]) -> MemoryUnit:
    """Rebuild a unit from :func:`unit_payload`; ValidationError names the bad field."""
    raw_extras = payload.get("extras", ())
    if not isinstance(raw_extras, Sequence) or isinstance(raw_extras, str):
        raise ValidationError("extras", "must be a list of [label, value] pairs")
    extras: list[tuple[str, str]] = []
    for index, pair in enumerate(raw_extras):
        if not (
            isinstance(pair, Sequence)
            and len(pair) == 2
            and all(isinstance(part, str) for part in pair)
        ):
            raise ValidationError(f"extras[{index}]", "must be a [label, value] pair")
        extras.append((str(pair[0]), str(pair[1])))
    pinned = payload.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValidationError("pinned", "must be a boolean")
    source = UnitSource(
        tenant=_string(payload, "tenant"),
        user=_string(payload, "user"),
        session_id=_optional_string(payload, "session_id"),
        turn_id=_optional_string(payload, "turn_id"),
        document_id=_optional_string(payload, "document_id"),
        confidence=_number(payload, "confidence"),
    )
    return MemoryUnit(
        subject=_string(payload, "subject"),
        attribute=_string(payload, "attribute"),
        value=_string(payload, "value"),
        kind=_kind(_string(payload, "kind")),
        source=source,
        observed_at=_when(payload, "observed_at"),
        valid_from=_when(payload, "valid_from"),
        importance=_number(payload, "importance"),
        pinned=pinned,
        extras=tuple(extras),
    )


def note_unit(turn: Turn) -> MemoryUnit:
    """The fallback unit of a direct note the extractor found nothing in."""
    candidate = Candidate(
        subject=NOTE_SUBJECT,
        attribute=NOTE_ATTRIBUTE,
        value=turn.text[:MAX_VALUE_CHARS].strip() or turn.text.strip()[:MAX_VALUE_CHARS],
        kind="event",
        confidence=1.0,
        importance=0.5,
    )
    return unit_from_candidate(candidate, turn)


# --- the handler ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HandlerStats:
    """What the handler did since it started (a snapshot; counters only, no content)."""

    entries: int = 0
    turns_kept: int = 0
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Turns the worth-remembering filter dropped, by reason."""
    extraction_failures: int = 0
    invalid_entries: int = 0
    units_written: int = 0
    store_failures: int = 0


class IngestHandler:
    """Filter, extract, embed in one batch and write; see the module docstring.

    ``embedder`` (optional) should be the embedder the store uses, wrapped in a
    :class:`~memstrata.embed.cache.CachedEmbedder`: the handler embeds every unit text
    of a batch in one call, and the store's per-unit embeds then hit the cache.
    Thread-safe: the engine's worker threads call it concurrently; two copies of one
    content (a replay) are never handled at the same time.
    """

    def __init__(
        self,
        store: UnitWriter,
        *,
        extractor: Extractor | None = None,
        worth: WorthFilter | None = None,
        embedder: Embedder | None = None,
        sanitizer: TextSanitizer | None = None,
    ) -> None:
        self._store = store
        self._extractor: Extractor = extractor or RuleExtractor()
        self._worth = worth or WorthFilter()
        self._embedder = embedder
        # For entries from producers other than the engine (which sanitizes before
        # enqueueing): the extractor, an LLM endpoint perhaps, sees clean text only.
        self._sanitizer = sanitizer
        self._lock = threading.Lock()
        self._prepared: OrderedDict[str, tuple[MemoryUnit, ...]] = OrderedDict()
        self._inflight: dict[str, threading.Event] = {}
        self._counts: Counter[str] = Counter()
        self._dropped: Counter[str] = Counter()

    @property
    def extractor(self) -> Extractor:
        """The extractor in use (rule-based unless configured otherwise)."""
        return self._extractor

    def stats(self) -> HandlerStats:
        """Counters since start."""
        with self._lock:
            counts, dropped = dict(self._counts), dict(self._dropped)
        return HandlerStats(
            entries=counts.get("entries", 0),
            turns_kept=counts.get("turns_kept", 0),
            dropped=MappingProxyType(dropped),
            extraction_failures=counts.get("extraction_failures", 0),
            invalid_entries=counts.get("invalid_entries", 0),
            units_written=counts.get("units_written", 0),
            store_failures=counts.get("store_failures", 0),
        )

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def __call__(self, entries: Sequence[QueueEntry], /) -> None:
        """Handle one batch; raises only when the store failed (the batch is retried)."""
        self._count("entries", len(entries))
        mine, theirs = self._claim(entries)
        try:
            self._write(mine)
        finally:
            self._release(mine)
        for entry, finished in theirs:
            # Another thread held the same content: the filter would call this copy a
            # repeat (and its ack would mark the content done) before that thread's
            # write is durable, and two concurrent writes of one unit race in the
            # store. After it finished, this copy is a no-op or - if it failed - the
            # write that makes the content durable.
            finished.wait()
            self._write([entry])

    def _claim(
        self, entries: Sequence[QueueEntry]
    ) -> tuple[list[QueueEntry], list[tuple[QueueEntry, threading.Event]]]:
        mine: list[QueueEntry] = []
        theirs: list[tuple[QueueEntry, threading.Event]] = []
        with self._lock:
            for entry in entries:
                busy = self._inflight.get(entry.content_hash)
                if busy is None:
                    self._inflight[entry.content_hash] = threading.Event()
                    mine.append(entry)
                else:
                    theirs.append((entry, busy))
        return mine, theirs

    def _release(self, entries: Sequence[QueueEntry]) -> None:
        with self._lock:
            for entry in entries:
                self._inflight.pop(entry.content_hash).set()

    def _write(self, entries: Sequence[QueueEntry]) -> None:
        plan = [(entry, self._units_of(entry)) for entry in entries]
        units = [unit for _, batch in plan for unit in batch]
        if units and self._embedder is not None:
            # One model call for the batch; the store's own embeds are cache hits.
            self._embedder.embed([unit.text for unit in units])
        for entry, batch in plan:
            try:
                for unit in batch:
                    self._store.write(unit)
            except Exception:
                self._count("store_failures")
                raise
            self._count("units_written", len(batch))
            with self._lock:
                self._prepared.pop(entry.content_hash, None)

    def _units_of(self, entry: QueueEntry) -> tuple[MemoryUnit, ...]:
        with self._lock:
            ready = self._prepared.get(entry.content_hash)
        if ready is not None:
            return ready  # a retry after a store failure: same units, no second filter pass
        units = self._prepare(entry)
        if units:
            with self._lock:
                self._prepared[entry.content_hash] = units
                while len(self._prepared) > MAX_PREPARED:
                    self._prepared.popitem(last=False)
        return units

    def _prepare(self, entry: QueueEntry) -> tuple[MemoryUnit, ...]:
        try:
            if entry.kind == KIND_UNIT:
                return (unit_from_payload(entry.payload),)
            if entry.kind == KIND_NOTE:
                turn = note_turn(entry.payload)
            elif entry.kind == KIND_TURN:
                turn = turn_from_payload(entry.payload)
            else:
                raise ValidationError("kind", f"must be one of {sorted(ENTRY_KINDS)}")
            if self._sanitizer is not None:
                clean = self._sanitizer.text(turn.text, location="ingest:turn", field="text")
                turn = replace(turn, text=clean)
        except ValidationError as exc:
            # The field name is safe to log; the reason may quote the value.
            logger.warning(
                "ingest: invalid %s entry %s (field %s); acknowledged without a write",
                entry.kind,
                entry.entry_id,
                exc.field,
            )
            self._count("invalid_entries")
            return ()
        if entry.kind == KIND_TURN:
            verdict = self._worth.worth_remembering(turn)
            if not verdict.keep:
                with self._lock:
                    self._dropped[verdict.reason or "unknown"] += 1
                return ()
            self._count("turns_kept")
        return self._extract(entry, turn)

    def _extract(self, entry: QueueEntry, turn: Turn) -> tuple[MemoryUnit, ...]:
        try:
            candidates = self._extractor.extract(turn)
            units = tuple(unit_from_candidate(candidate, turn) for candidate in candidates)
        except (ExtractionError, ValidationError) as exc:
            # Never the text or the exception message (either may quote the turn).
            logger.warning(
                "ingest: extraction failed for entry %s (session %s, turn %s): %s; "
                "acknowledged without a write",
                entry.entry_id,
                turn.session_id,
                turn.turn_id,
                type(exc).__name__,
            )
            self._count("extraction_failures")
            return ()
        if not units and entry.kind == KIND_NOTE:
            return (note_unit(turn),)
        return units


def worker_handler(
    redis_url: str,
    qdrant_path: str = "",
    qdrant_url: str = "",
    redis_prefix: str = "",
    llm_base_url: str = "",
    llm_model: str = "",
) -> IngestHandler:
    """Build the handler of a worker process (``--handler-factory`` target).

    ::

        python -m memstrata.memory.worker --redis-url unix:///data/valkey/valkey.sock \\
            --queue memories --consumer w1 \\
            --handler-factory memstrata.memory.handler:worker_handler \\
            --handler-arg redis_url=unix:///data/valkey/valkey.sock \\
            --handler-arg qdrant_url=http://qdrant:6333

    ``qdrant_path`` opens an embedded qdrant-edge directory instead of a server: it
    can be held by one process at a time, so no engine may have it open meanwhile.
    The LLM API key, if any, is read from ``MEMSTRATA_LLM_API_KEY`` (never an argument,
    which would show in the process list). The process exits when this raises.
    """
    import os
    from pathlib import Path

    from memstrata.clock import SystemClock
    from memstrata.config import LongTermSettings
    from memstrata.embed.defaults import default_embedder
    from memstrata.errors import ConfigError
    from memstrata.extract.llm import LLMExtractor
    from memstrata.gateway import Sanitizer
    from memstrata.longterm.protocol import VectorIndex
    from memstrata.longterm.sparse import Bm25Encoder
    from memstrata.longterm.store import LongTermStore
    from memstrata.memory.settings import MemorySettings
    from memstrata.memory.store import MemoryStore
    from memstrata.working.redis_backend import RedisBackend

    if bool(qdrant_path) == bool(qdrant_url):
        raise ConfigError("worker_handler: give exactly one of qdrant_path and qdrant_url")
    index: VectorIndex
    if qdrant_path:
        from memstrata.longterm.edge import EdgeIndex

        index = EdgeIndex(Path(qdrant_path))
    else:
        from qdrant_client import QdrantClient

        from memstrata.longterm.qdrant_server import QdrantServerIndex

        index = QdrantServerIndex(
            QdrantClient(url=qdrant_url, api_key=os.environ.get("MEMSTRATA_QDRANT_API_KEY"))
        )
    clock = SystemClock()
    sanitizer = Sanitizer(clock=clock)
    embedder = default_embedder()
    longterm = LongTermStore(
        index, embedder, Bm25Encoder(), LongTermSettings(), clock=clock, sanitizer=sanitizer
    )
    settings = MemorySettings(redis_prefix=redis_prefix) if redis_prefix else None
    store = MemoryStore(longterm, RedisBackend.from_url(redis_url).client, clock, settings=settings)
    extractor: Extractor | None = None
    if llm_base_url:
        extractor = LLMExtractor(
            llm_base_url, llm_model or "default", os.environ.get("MEMSTRATA_LLM_API_KEY")
        )
    return IngestHandler(store, extractor=extractor, embedder=embedder, sanitizer=sanitizer)
