"""Stage 5 of the write path: a batch of queue entries in, L3 points out.

:class:`WriteHandler` is the :class:`~memstrata.write.consume.Handler` a
:class:`~memstrata.write.consume.QueueWorker` calls with a batch. Per batch:

1. every entry is decoded (:mod:`memstrata.write.payloads`) into the episode it
   stores and the units extracted from it:

   * ``turn`` (``engine.observe``): always kept whole as an episode; the
     worth-remembering filter decides whether the extractor reads it;
   * ``note`` (``engine.remember`` with text): kept as an episode and read by the
     extractor (no filter: the caller asked for it to be kept);
   * ``unit`` (``engine.remember`` with a :class:`MemoryUnit`): written as is;
   * ``feedback`` (``engine.feedback``): a correction's text is kept as an episode and
     read by the extractor, like a note, its units sourced from the event;

   each extracted unit names its episode (``MemoryUnit.episodes``);
2. one embedding call for every episode and unit text of the batch;
3. the facts and events committed together (:class:`~memstrata.write.commit.FactBatch`);
4. one upsert of the episodes, indexed with their conversation's context
   (:class:`~memstrata.memory.episodes.EpisodeIndex`; the turns within reach it
   does not hold are read back and embedded again) and naming the facts
   extracted from them, with the final fact and event points;
5. each feedback event's plan (:func:`memstrata.feedback.events.feedback_plan`),
   once its correction is written: the memories it names wrong closed when still
   current, importance moved (units through the memory store; episodes get an
   ``importance`` payload, re-indexed with their context), and the event appended
   to the tenant's feedback stream with a marker that stops a replay from applying
   it twice (each memory also records the events whose step it took, in the same
   write, for a worker that died between the two).

Failure policy, which the queue's at-least-once delivery relies on:

* an entry that cannot be decoded is logged by id and field - never its text - and
  counted, then acknowledged without a write: one bad entry cannot block the queue;
* an extraction failure on this entry (an LLM answering garbage) is logged by ids and
  error type and counted; the episode is still written, so nothing said is lost;
* the extractor unavailable (:class:`~memstrata.errors.ExtractionUnavailableError`)
  or the embedder failing, whatever it raised, is our own outage, not the entry's: it
  raises :class:`~memstrata.errors.StageUnavailableError` naming the stage, which
  pauses the consumers (:class:`~memstrata.write.submit.OutageWatch`) without spending
  a delivery;
* a store failure raises, so the worker leaves the batch pending and retries it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.protocol import Embedder
from memstrata.errors import (
    ExtractionError,
    ExtractionUnavailableError,
    StageUnavailableError,
    ValidationError,
)
from memstrata.extract.filter import WorthFilter
from memstrata.extract.protocol import Extractor
from memstrata.extract.rules import RuleExtractor
from memstrata.extract.thread import with_disputes
from memstrata.feedback.events import (
    DONE_TTL_S,
    FEEDBACK_SESSION,
    KIND_FEEDBACK,
    MAX_STREAM_EVENTS,
    FeedbackEvent,
    FeedbackSteps,
    done_key,
    feedback_plan,
    stream_key,
)
from memstrata.longterm.facade import IndexedItem, NewItem
from memstrata.longterm.points import MEMORIES, Record
from memstrata.memory.codec import ACTIVE_TYPES
from memstrata.memory.episodes import (
    EPISODE_TYPE,
    NO_TERMS,
    Episode,
    note_episode_id,
    window_items,
    with_facts,
)
from memstrata.memory.store import MemoryStore, stepped_importance
from memstrata.memory.units import (
    MemoryUnit,
    UnitSource,
    noted_feedback,
    unit_from_candidate,
)
from memstrata.tracing import Tracing, activated, finished_span, now_ns, span
from memstrata.working.redis_errors import redis_errors
from memstrata.write.commit import FactBatch
from memstrata.write.disputes import apply_disputes
from memstrata.write.entries import QueueEntry
from memstrata.write.index import EpisodeIndex, item_of_record
from memstrata.write.payloads import (
    ENTRY_KINDS,
    KIND_NOTE,
    KIND_TURN,
    KIND_UNIT,
    extractor_turn,
    note_episode,
    turn_episode,
    unit_from_payload,
)
from memstrata.write.removals import remove_wrong, resolve_removals
from memstrata.write.thread import ThreadTurns

logger = logging.getLogger("memstrata.write.handle")

LIKES, DISLIKES = "likes", "dislikes"
# Entries prepared but not yet written (a failed store write) are kept so a retry
# neither re-asks an LLM nor trips the filter's repeat detection.
MAX_PREPARED = 4096


EMBED_MULTILINGUAL = "embed_multilingual"
"""The stage clock of the second model's embedding, which L3 runs inside its writes
(taken out of the stage it happened in, so ``upsert`` and ``facts`` mean ours)."""


EMBED_AHEAD = "embed_ahead"
"""The clock of MiniLM's embedding ahead (:meth:`WriteHandler.warm`) while a batch
waits for an earlier one holding its users."""


class _StageClock:
    """Wall time per stage of one batch (perf_counter laps); each lap is also an
    ``ingest.<stage>`` span when tracing is on. ``second``: the calling thread's
    seconds in the multilingual model so far (moved to :data:`EMBED_MULTILINGUAL`)."""

    def __init__(self, second: Callable[[], float] | None = None) -> None:
        self.laps: dict[str, float] = {}
        self._second = second
        self._second_last = second() if second is not None else 0.0
        self._last = time.perf_counter()
        self._last_ns = now_ns()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        spent = now - self._last
        if self._second is not None:
            second = self._second()
            model, self._second_last = second - self._second_last, second
            if model > 0:
                self.laps[EMBED_MULTILINGUAL] = self.laps.get(EMBED_MULTILINGUAL, 0.0) + model
                spent -= model
        self.laps[stage] = self.laps.get(stage, 0.0) + spent
        self._last = now
        end_ns = now_ns()
        finished_span(f"write.{stage}", self._last_ns, end_ns)
        self._last_ns = end_ns


class TextSanitizer(Protocol):
    """The gateway role the handler needs (``memstrata.gateway.Sanitizer`` fits)."""

    def text(self, text: str, *, location: str, field: str | None = None) -> str:
        """``text`` with credentials and PII replaced."""
        ...


@dataclass(frozen=True, slots=True)
class Prepared:
    """One entry as the batch writes it: its episode (none for a structured unit)
    and the units to commit; for a feedback entry, its event (applied once they are
    written)."""

    episode: Episode | None
    units: tuple[MemoryUnit, ...]
    feedback: FeedbackEvent | None = None
    replaces: tuple[bool, ...] = ()
    """Per unit (empty: none does): an explicit correction, which replaces its slot's
    value (:func:`~memstrata.memory.versioning.decide`)."""
    removals: tuple[MemoryUnit, ...] = ()
    """Values the entry takes out of their slots ("not peanuts", 我不再对花生过敏),
    resolved against the active version when the entry is written
    (:func:`resolve_removals`)."""
    disputes: tuple[MemoryUnit, ...] = ()
    """Slots whose current fact the entry puts in doubt without a new value ("我搬家了",
    "I changed jobs"), marked when the entry is written (:func:`apply_disputes`)."""

    def flags(self) -> tuple[bool, ...]:
        """``replaces``, one per unit."""
        return self.replaces or (False,) * len(self.units)


@dataclass(frozen=True, slots=True)
class HandlerStats:
    """What the handler did since it started (a snapshot; counters only, no content)."""

    entries: int = 0
    turns_kept: int = 0
    """Turns the worth-remembering filter passed to the extractor."""
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Turns the worth-remembering filter kept from the extractor, by reason (their
    episodes are stored all the same)."""
    extraction_failures: int = 0
    invalid_entries: int = 0
    episodes_written: int = 0
    units_written: int = 0
    store_failures: int = 0
    feedback_events: int = 0
    """Feedback events applied (a replay of an applied one is not counted again)."""
    points_upserted: int = 0
    """Points the ``upsert`` stage wrote (episodes, their rewritten neighbours, window
    keys, final fact points): ``seconds["upsert"]`` per point is the cost of a write."""
    seconds: Mapping[str, float] = field(default_factory=dict)
    """Wall time spent per stage of a batch, summed over the worker threads:
    ``extract`` (decoding, filter, extractor), ``embed`` (the one MiniLM call),
    ``facts`` (slot reads, decisions, pending points, swaps), ``upsert`` (episode
    vectors and the final upsert), ``settle``, and ``embed_multilingual`` (the
    second model, which L3 runs inside the pending and final upserts; not counted
    in ``facts`` nor ``upsert``); ``embed_ahead``: MiniLM embedding a waiting batch's
    episodes ahead (:meth:`WriteHandler.warm`), outside any batch's stages."""


class WriteHandler:
    """Decode, extract, embed once, commit and write a batch (module docstring).

    Thread-safe: the engine's worker threads call it concurrently; two copies of one
    content (a replay) are never handled at the same time.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        extractor: Extractor | None = None,
        worth: WorthFilter | None = None,
        embedder: Embedder | None = None,
        sanitizer: TextSanitizer | None = None,
        episodes: EpisodeIndex | None = None,
        feedback_steps: FeedbackSteps | None = None,
    ) -> None:
        self._store = store
        self._feedback_steps = feedback_steps or FeedbackSteps()
        # Importance steps read, move and rewrite a memory: two worker threads applying
        # events on one memory at once would lose a step. Feedback is rare; one at a time.
        self._feedback_lock = threading.Lock()
        self._facts = FactBatch(store)
        self._thread = ThreadTurns(store)
        self._extractor: Extractor = extractor or RuleExtractor()
        self._worth = worth or WorthFilter()
        self._embedder = embedder or store.longterm.embedder
        self._settings = store.longterm.settings
        self._episodes = episodes or EpisodeIndex(
            store.longterm.document_terms, store.longterm.settings
        )
        # For entries from producers other than the engine (which sanitizes before
        # enqueueing): the extractor, an LLM endpoint perhaps, sees clean text only.
        self._sanitizer = sanitizer
        self._lock = threading.Lock()
        self._prepared: OrderedDict[str, Prepared] = OrderedDict()
        # Episode vectors embedded ahead (warm) while a batch waited for its turn.
        self._early: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._inflight: dict[str, threading.Event] = {}
        self._counts: Counter[str] = Counter()
        self._dropped: Counter[str] = Counter()
        self._seconds: dict[str, float] = {}
        self._tracing: Tracing | None = None

    def trace_with(self, tracing: Tracing | None) -> None:
        """Trace each batch (``write.batch``, a child span per stage) in ``tracing``
        (None: not traced). The engine passes its own."""
        self._tracing = tracing

    @property
    def extractor(self) -> Extractor:
        """The extractor in use (rule-based unless configured otherwise)."""
        return self._extractor

    @property
    def embedder(self) -> Embedder:
        """The embedder it writes vectors with (what the outage probe asks)."""
        return self._embedder

    @property
    def store(self) -> MemoryStore:
        """The memory store it writes (and, through it, the L3 store)."""
        return self._store

    def stats(self) -> HandlerStats:
        """Counters since start."""
        with self._lock:
            counts, dropped = dict(self._counts), dict(self._dropped)
            seconds = {k: round(v, 6) for k, v in self._seconds.items()}
        return HandlerStats(
            entries=counts.get("entries", 0),
            turns_kept=counts.get("turns_kept", 0),
            dropped=MappingProxyType(dropped),
            extraction_failures=counts.get("extraction_failures", 0),
            invalid_entries=counts.get("invalid_entries", 0),
            episodes_written=counts.get("episodes_written", 0),
            units_written=counts.get("units_written", 0),
            store_failures=counts.get("store_failures", 0),
            feedback_events=counts.get("feedback_events", 0),
            points_upserted=counts.get("points_upserted", 0),
            seconds=MappingProxyType(seconds),
        )

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def __call__(self, entries: Sequence[QueueEntry], /) -> None:
        """Handle one batch; raises only when the store failed (the batch is retried)."""
        self._count("entries", len(entries))
        with activated(self._tracing), span("write.batch", entries=len(entries)):
            mine, theirs = self._claim(entries)
            try:
                self._write(mine)
            finally:
                self._release(mine)
            for entry, finished in theirs:
                # Another thread held the same content: the filter would call this copy a
                # repeat (and its ack would mark the content done) before that thread's
                # write is durable. After it finished, this copy is a no-op or - if it
                # failed - the write that makes the content durable.
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

    def warm(self, entries: Sequence[QueueEntry], /) -> None:
        """Embed ahead what does not depend on the slots - the texts of the entries'
        episodes and their window keys - so that a batch waiting for an earlier one
        holding its users (:mod:`memstrata.write.order`) spends the wait on the model;
        its write then embeds only the rest. Best effort: a failure here is met again,
        and handled, by the write."""
        if self._sanitizer is not None:
            return  # its texts are known after the gateway only (which audits each call)
        texts: list[str] = []
        for entry in entries:
            try:
                if entry.kind == KIND_NOTE:
                    episode = note_episode(entry.payload)
                elif entry.kind == KIND_TURN:
                    episode = turn_episode(entry.payload)
                else:
                    continue
            except ValidationError:
                continue
            texts.append(episode.text)
            texts += [w.text for w in window_items(episode.item(), self._settings)]
        with self._lock:
            todo = [t for t in dict.fromkeys(texts) if t not in self._early]
        if not todo:
            return
        started = time.perf_counter()
        try:
            vectors = self._embed(todo)
        except StageUnavailableError:
            return
        with self._lock:
            # Its own clock: this MiniLM time falls in no batch's stages.
            self._seconds[EMBED_AHEAD] = (
                self._seconds.get(EMBED_AHEAD, 0.0) + time.perf_counter() - started
            )
            for text, vector in zip(todo, vectors, strict=True):
                self._early[text] = vector
            while len(self._early) > MAX_PREPARED:
                self._early.popitem(last=False)

    def _vectors(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``texts`` embedded: those warmed ahead taken (once), the rest in one call,
        each distinct text once (a turn said twice, a fact whose text is its turn's:
        one row of the model for both, whatever cache the embedder has or lacks)."""
        if not texts:
            return self._embed(texts)
        distinct = list(dict.fromkeys(texts))
        with self._lock:
            known = {t: self._early.pop(t) for t in distinct if t in self._early}
        rest = [t for t in distinct if t not in known]
        if rest:
            known.update(zip(rest, self._embed(rest), strict=True))
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)

    # --- the batch -----------------------------------------------------------------------

    def _write(self, entries: Sequence[QueueEntry]) -> None:
        clock = self._clock()
        plan = [(entry, self._prepared_of(entry)) for entry in entries]
        # An entry that removes a value reads its slot's active version, so the entries
        # before it are written first (the batch keeps its order).
        segment: list[tuple[QueueEntry, Prepared]] = []
        for entry, prepared in plan:
            if (prepared.removals or prepared.disputes) and segment:
                self._write_plan(segment, clock)
                clock, segment = self._clock(), []
            segment.append((entry, prepared))
        self._write_plan(segment, clock)

    def _write_plan(
        self, prepared_plan: Sequence[tuple[QueueEntry, Prepared]], clock: _StageClock
    ) -> None:
        closing: list[tuple[str, str]] = []
        plan = []
        for entry, prepared in prepared_plan:
            if prepared.removals:
                prepared, closed = resolve_removals(self._store, prepared)
                closing += closed
            if prepared.disputes and prepared.episode is not None:
                apply_disputes(self._store, prepared.episode, prepared.disputes)
            plan.append((entry, prepared))
        episodes = [p.episode for _, p in plan if p.episode is not None]
        units = [unit for _, p in plan for unit in p.units]
        flags = [flag for _, p in plan for flag in p.flags()]
        clock.lap("extract")
        if not episodes and not units:
            self._add_seconds(clock)
            self._close(closing)
            self._apply_feedback(plan, [])
            self._forget_prepared(plan)
            return
        try:
            # A long episode's window keys (what MiniLM cannot read of it in one vector)
            # are embedded in the same call.
            items = [e.item() for e in episodes]
            windows = [w for item in items for w in window_items(item, self._settings)]
            texts = [e.text for e in episodes] + [u.text for u in units]
            texts += [w.text for w in windows]
            vectors = self._vectors(texts)
            n_ep, n_units = len(episodes), len(units)
            # The second model's vectors too, here, once per text: not inside the
            # pending and final upserts (which would embed a fact's text for each, and
            # hold the episode index's lock - the other worker - while it runs).
            unit_items = [
                NewItem(u.text, u.source.tenant, u.source.user, type=u.kind) for u in units
            ]
            second = self._second_vectors([*items, *unit_items, *windows])
            clock.lap("embed")
            window_points = [
                IndexedItem(w, vectors[n_ep + n_units + i], NO_TERMS, second[n_ep + n_units + i])
                for i, w in enumerate(windows)
            ]
            staged = self._facts.stage(
                units,
                list(vectors[n_ep : n_ep + n_units]),
                replaces=flags,
                second=second[n_ep : n_ep + n_units],
            )
            clock.lap("facts")
            fact_ids: dict[str, list[str]] = {}
            for unit, outcome in zip(units, staged.outcomes, strict=True):
                for episode_id in unit.episodes:
                    fact_ids.setdefault(episode_id, []).append(outcome.unit_id)
            new = [
                (with_facts(item, fact_ids.get(e.id, ())), vectors[i])
                for i, (e, item) in enumerate(zip(episodes, items, strict=True))
            ]
            with self._episodes.writing():
                points = [
                    *staged.points,
                    *self._episodes.index(new, self._read_back, second=second[:n_ep]),
                    *window_points,
                ]
                if points:
                    self._store.longterm.add_points(MEMORIES, points)
            clock.lap("upsert")
            self._count("points_upserted", len(points))
            self._facts.settle(staged)
            clock.lap("settle")
        except Exception:
            self._count("store_failures")
            raise
        finally:
            self._add_seconds(clock)
        self._count("episodes_written", len(episodes))
        self._count("units_written", len(units))
        self._close(closing)
        self._apply_feedback(plan, [outcome.unit_id for outcome in staged.outcomes])
        self._forget_prepared(plan)

    def _clock(self) -> _StageClock:
        return _StageClock(self._store.longterm.multilingual_seconds)

    def _close(self, closing: Sequence[tuple[str, str]]) -> None:
        """Close the facts a removal emptied (when still current)."""
        for tenant, point_id in closing:
            found = self._store.get(tenant, [point_id])
            if found and found[0].active:
                self._store.invalidate(tenant, point_id)

    def _forget_prepared(self, plan: Sequence[tuple[QueueEntry, Prepared]]) -> None:
        with self._lock:
            for entry, _ in plan:
                self._prepared.pop(entry.content_hash, None)

    def _add_seconds(self, clock: _StageClock) -> None:
        with self._lock:
            for stage, seconds in clock.laps.items():
                self._seconds[stage] = self._seconds.get(stage, 0.0) + seconds

    def _read_back(
        self, wanted: Sequence[tuple[str, str]]
    ) -> list[tuple[NewItem, NDArray[np.float32]]]:
        """Stored episodes the context index needs back (written by another process,
        before a restart, or trimmed), with their own vectors embedded again."""
        by_tenant: dict[str, list[str]] = {}
        for tenant, point_id in wanted:
            by_tenant.setdefault(tenant, []).append(point_id)
        records = [
            record
            for tenant, ids in by_tenant.items()
            for record in self._store.longterm.get(MEMORIES, ids, tenant=tenant)
        ]
        if not records:
            return []
        vectors = self._embed([str(r.payload.get("text", "")) for r in records])
        return [(item_of_record(r), vectors[i]) for i, r in enumerate(records)]

    def _second_vectors(self, items: Sequence[NewItem]) -> list[NDArray[np.float32] | None]:
        """The multilingual vectors L3 gives ``items`` (None where it gives none), each
        distinct text of a tenant embedded once. A failure is met as L3's was when it
        embedded them itself: a store failure, the batch left pending and retried."""
        first: dict[tuple[str, str], NewItem] = {}
        for item in items:
            first.setdefault((item.tenant, item.text), item)
        rows = self._store.longterm.multilingual_vectors(list(first.values()))
        found = dict(zip(first, rows, strict=True))
        return [found[(item.tenant, item.text)] for item in items]

    def _embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The embedder's vectors; any failure of it is the embedder's outage."""
        try:
            return np.asarray(self._embedder.embed(texts), dtype=np.float32)
        except Exception as exc:
            raise StageUnavailableError("embedder", type(exc).__name__) from exc

    # --- one entry -----------------------------------------------------------------------

    def _prepared_of(self, entry: QueueEntry) -> Prepared:
        with self._lock:
            ready = self._prepared.get(entry.content_hash)
        if ready is not None:
            return ready  # a retry after a store failure: no second filter or LLM pass
        prepared = self._prepare(entry)
        with self._lock:
            self._prepared[entry.content_hash] = prepared
            while len(self._prepared) > MAX_PREPARED:
                self._prepared.popitem(last=False)
        return prepared

    def _prepare(self, entry: QueueEntry) -> Prepared:
        try:
            if entry.kind == KIND_UNIT:
                return Prepared(None, (unit_from_payload(entry.payload),))
            if entry.kind == KIND_FEEDBACK:
                event = FeedbackEvent.from_payload(entry.payload)
                correction = self._correction_episode(event)
                if correction is None:
                    return Prepared(None, (), event)
                return replace(self._extract(entry, correction), feedback=event)
            if entry.kind == KIND_NOTE:
                episode = note_episode(entry.payload)
            elif entry.kind == KIND_TURN:
                episode = turn_episode(entry.payload)
            else:
                kinds = sorted({*ENTRY_KINDS, KIND_FEEDBACK})
                raise ValidationError("kind", f"must be one of {kinds}")
            if self._sanitizer is not None:
                clean = self._sanitizer.text(episode.text, location="ingest:turn", field="text")
                episode = replace(episode, text=clean)
        except ValidationError as exc:
            # The field name is safe to log; the reason may quote the value.
            logger.warning(
                "ingest: invalid %s entry %s (field %s); acknowledged without a write",
                entry.kind,
                entry.entry_id,
                exc.field,
            )
            self._count("invalid_entries")
            return Prepared(None, ())
        if entry.kind == KIND_TURN:
            verdict = self._worth.worth_remembering(extractor_turn(episode))
            if not verdict.keep:
                with self._lock:
                    self._dropped[verdict.reason or "unknown"] += 1
                self._thread.note(episode, ())
                return Prepared(episode, ())
            self._count("turns_kept")
        return self._extract(entry, episode)

    def _extract(self, entry: QueueEntry, episode: Episode) -> Prepared:
        turn = extractor_turn(episode)
        try:
            # Read in its conversation: the thread's last turns and the facts from them.
            turn = replace(turn, previous=self._thread.previous(episode))
            candidates = with_disputes(turn, self._extractor.extract(turn))
            made = [
                (unit_from_candidate(candidate, turn, episodes=(episode.id,)), candidate.change)
                for candidate in candidates
            ]
            kept = [(unit, change) for unit, change in made if change not in ("remove", "dispute")]
            removals = [unit for unit, change in made if change == "remove"]
            self._thread.note(episode, [unit for unit, _ in kept])
            # What is disliked now ("I don't like jazz anymore") is no longer liked.
            removals += [replace(u, attribute=LIKES) for u, _ in kept if u.attribute == DISLIKES]
            return Prepared(
                episode,
                tuple(unit for unit, _ in kept),
                replaces=tuple(change == "correct" for _, change in kept),
                removals=tuple(removals),
                disputes=tuple(unit for unit, change in made if change == "dispute"),
            )
        except ExtractionUnavailableError as exc:
            # Not this entry's fault: paused and retried, never stored without facts.
            raise StageUnavailableError("extractor", type(exc).__name__) from exc
        except (ExtractionError, ValidationError) as exc:
            # Never the text or the exception message (either may quote the turn).
            logger.warning(
                "ingest: extraction failed for entry %s (session %s, turn %s): %s; "
                "the episode is kept without facts",
                entry.entry_id,
                turn.session_id,
                turn.turn_id,
                type(exc).__name__,
            )
            self._count("extraction_failures")
            self._thread.note(episode, ())
            return Prepared(episode, ())

    # --- feedback ----------------------------------------------------------------------

    def _correction_episode(self, event: FeedbackEvent) -> Episode | None:
        """The episode a correction is kept as: the user's words, sourced from the
        event (session ``feedback``, turn the event id), its id derived from both."""
        if not event.correction:
            return None
        if event.user is None:
            logger.warning(
                "ingest: feedback %s names no user; its correction is not remembered", event.id
            )
            return None
        text = event.correction
        if self._sanitizer is not None:
            text = self._sanitizer.text(text, location="ingest:feedback", field="correction")
        at = datetime.fromtimestamp(event.at, tz=UTC)
        return Episode(
            id=note_episode_id(event.tenant, event.user, f"feedback\x1f{event.id}\x1f{text}", at),
            tenant=event.tenant,
            user=event.user,
            text=text,
            role="user",
            observed_at=at,
            source=f"feedback:{event.id}",
            session_id=FEEDBACK_SESSION,
            turn_id=event.id,
        )

    def _apply_feedback(
        self, plan: Sequence[tuple[QueueEntry, Prepared]], unit_ids: Sequence[str]
    ) -> None:
        """Apply the batch's feedback events, in order, once its writes are done;
        ``unit_ids`` are the ids the batch's units were written as (in plan order)."""
        offset = 0
        for _, prepared in plan:
            created = tuple(dict.fromkeys(unit_ids[offset : offset + len(prepared.units)]))
            offset += len(prepared.units)
            if prepared.feedback is not None:
                with self._feedback_lock:
                    self._apply_event(prepared.feedback, created)

    def _apply_event(self, event: FeedbackEvent, created: Sequence[str]) -> None:
        """One event's plan (``created``: the memories its correction became)."""
        redis = self._store.redis
        tenant = event.tenant
        with redis_errors("redis read feedback marker"):
            if redis.exists(done_key(tenant, event.id)):
                return  # a replay of an event already applied
        plan = feedback_plan(event, self._feedback_steps)
        for point_id in plan.invalidate:
            if point_id in created:
                continue
            found = self._store.get(tenant, [point_id])
            if not found:
                continue
            wrong = found[0]
            multi = wrong.attribute.casefold() in self._store.settings.multi_valued_attributes
            if wrong.kind == "fact" and multi:
                # Its value leaves the set as it stands now (an older version named
                # wrong - "peanuts" before "peanuts; shellfish" - included).
                source = UnitSource(
                    tenant=tenant,
                    user=wrong.source.user,
                    session_id=FEEDBACK_SESSION,
                    turn_id=event.id,
                )
                at = datetime.fromtimestamp(event.at, tz=UTC)
                remove_wrong(self._store, wrong, source, at, reply=event.reply)
            elif wrong.active:
                # Closed only when still current: a wrong fact the correction's fact
                # superseded is history already (and names its successor).
                self._store.invalidate(tenant, point_id)
        steps = dict(plan.steps)
        if steps:
            records = self._store.longterm.get(MEMORIES, list(steps), tenant=tenant)
            self._store.adjust_importance(
                tenant,
                {r.id: steps[r.id] for r in records if r.payload.get("type") in ACTIVE_TYPES},
                event_id=event.id,
            )
            self._adjust_episodes(
                [r for r in records if r.payload.get("type") == EPISODE_TYPE], steps, event.id
            )
        record = event.record(created)
        with redis_errors("redis write feedback event"):
            pipe = redis.pipeline(transaction=True)
            pipe.xadd(
                stream_key(tenant), record.fields(), maxlen=MAX_STREAM_EVENTS, approximate=True
            )
            pipe.set(done_key(tenant, event.id), "1", ex=DONE_TTL_S)
            pipe.execute()
        self._count("feedback_events")

    def _adjust_episodes(
        self, records: Sequence[Record], steps: Mapping[str, float], event_id: str
    ) -> None:
        """Episodes with their importance moved: the payload gains ``importance`` (the
        retriever weighs it as it weighs a unit's; 0.5 when absent) and the episode is
        indexed again with its context, as when it was written (its own vector
        embedded again; the turns around it keep theirs). Like a unit, an episode
        records ``event_id`` with the step and takes each event once."""
        items = []
        for record in records:
            applied = record.payload.get("feedback_applied") or []
            if event_id in applied:
                continue
            item = item_of_record(record)
            before = record.payload.get("importance", 0.5)
            current = (
                0.5 if isinstance(before, bool) or not isinstance(before, int | float) else before
            )
            importance = stepped_importance(float(current), steps[record.id])
            extra = {
                **item.extra,
                "importance": importance,
                "feedback_applied": list(noted_feedback([str(i) for i in applied], event_id)),
            }
            items.append(replace(item, extra=extra))
        if not items:
            return
        vectors = self._embed([i.text for i in items])
        with self._episodes.writing():
            points = self._episodes.index(
                [(item, vectors[i]) for i, item in enumerate(items)], self._read_back
            )
            if points:
                self._store.longterm.add_points(MEMORIES, points)
