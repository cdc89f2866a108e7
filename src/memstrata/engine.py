"""ContextEngine: composes L1, L2, L3, the gateway and the router.

``ContextEngine.open(settings)`` builds the embedded defaults (a Valkey server on a
unix socket and qdrant-edge, both under ``settings.data_dir``) or connects to the
servers named in the settings. Everything is also injectable through the
constructor, which is what tests and services use.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock, SystemClock
from memstrata.config import Settings
from memstrata.context import (
    BuiltContext,
    ContextBudget,
    ContextRequest,
    ToolResult,
    build_context,
    counter_for_model,
    from_bundle,
)
from memstrata.context import Turn as ContextTurn
from memstrata.context.adapt import retrieved_items
from memstrata.embed.defaults import default_embedder
from memstrata.embed.protocol import Embedder
from memstrata.errors import ConfigError, NotFoundError, ValidationError
from memstrata.extract.models import ROLES
from memstrata.extract.protocol import Extractor
from memstrata.gateway import AuditSink, FieldPolicy, Sanitizer
from memstrata.gateway.audit import InMemoryAuditLog, JsonlAuditLog, TeeAuditLog
from memstrata.gateway.logging import install_global_log_redaction
from memstrata.longterm.models import MEMORIES, Filter, Hit
from memstrata.longterm.store import LongTermStore, NewItem
from memstrata.memory.codec import UNIT_TYPES, from_payload, is_pending
from memstrata.memory.consolidate import ConsolidationReport, consolidate, restore
from memstrata.memory.consumer import QueueWorker
from memstrata.memory.episodes import (
    MAX_SPEAKER_CHARS,
    Episode,
    episode_of_payload,
    turn_episode_id,
)
from memstrata.memory.forget import ForgetReport, deletion_record, forget_memories, forget_user
from memstrata.memory.handler import IngestHandler
from memstrata.memory.pipeline import (
    ACTIVE_MEMORY_TYPES,
    HISTORY_MEMORY_TYPES,
    IngestPipeline,
    IngestReceipt,
    PipelineStats,
    active_only,
)
from memstrata.memory.queue import WriteQueue
from memstrata.memory.settings import MemorySettings, PipelineSettings
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit
from memstrata.retrieval import RetrievalQuery, RetrievalResult, Retriever
from memstrata.retrieval.rerank import Reranker
from memstrata.router import (
    DEFAULT_INTENTS,
    SEED_INTENTS,
    ContextBundle,
    ContextRouter,
    IntentRegistry,
    IntentSpec,
)
from memstrata.session import SessionRegistry, SessionState
from memstrata.validation import check_id, check_positive_int, check_text
from memstrata.wiring import build_extractor, build_handler, open_index, open_longterm, open_memory
from memstrata.working.embedded import EmbeddedValkey
from memstrata.working.memory import SessionWorkingMemory, WorkingMemory
from memstrata.working.redis_backend import RedisBackend

log = logging.getLogger("memstrata")
AUDIT_FILE = "audit.jsonl"
"""The audit log under ``Settings.data_dir``: redactions, and deletions."""


@dataclass(frozen=True, slots=True)
class WrittenMemory:
    """What one ``observe`` / ``remember`` stored (see :meth:`ContextEngine.written`)."""

    episodes: tuple[Episode, ...]
    facts: tuple[MemoryUnit, ...]
    """Every version extracted from the episodes, events included, by slot and time."""


MAX_RETRIEVAL_QUERY_CHARS = 4_000


class ContextEngine:
    """The one object most users touch."""

    def __init__(
        self,
        *,
        settings: Settings,
        clock: Clock,
        sanitizer: Sanitizer,
        working: WorkingMemory,
        longterm: LongTermStore,
        embedder: Embedder,
        intents: IntentRegistry | None = None,
        audit: InMemoryAuditLog | None = None,
        on_close: Sequence[Callable[[], None]] = (),
        memory: MemoryStore | None = None,
        pipeline: IngestPipeline | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._sanitizer = sanitizer
        self._working = working
        self._longterm = longterm
        self._embedder = embedder
        self._audit = audit
        self._on_close = list(on_close)
        self._closed = False
        self._memory = memory
        self._pipeline = pipeline
        self._sessions = SessionRegistry(
            clock, lambda text, where: sanitizer.text(text, location=where)
        )
        # Reads of the memories collection see active units only unless an intent
        # asks for other types; superseded versions stay out of the agent's context.
        specs = (
            [intents.get(name) for name in intents.names()]
            if intents is not None
            else list(SEED_INTENTS)
        )
        # The general-purpose intents come with every engine unless the caller's
        # registry defines its own of the same name.
        specs += [d for d in DEFAULT_INTENTS if d.name not in {s.name for s in specs}]
        registry = IntentRegistry(active_only(spec) for spec in specs)
        self._router = ContextRouter(
            registry,
            working,
            longterm,
            settings.longterm,
            clock,
            self.embed_query,
        )
        self._retriever = Retriever(
            longterm, embedder, settings.retrieval, settings.longterm, reranker=reranker
        )

    # -- construction ---------------------------------------------------------

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        policy: FieldPolicy | None = None,
        intents: IntentRegistry | None = None,
        pipeline: PipelineSettings | None = None,
        memory: MemorySettings | None = None,
        extractor: Extractor | None = None,
    ) -> ContextEngine:
        """Start (or connect to) every backend named by ``settings``.

        The long-term write pipeline (``settings.pipeline``) runs worker threads by
        default; ``extractor`` replaces the one ``settings.extractor`` names (the
        rule-based extractor unless an LLM endpoint is configured). ``pipeline`` and
        ``memory`` replace those sections of ``settings``.
        """
        settings = settings or Settings()
        if pipeline is not None:
            settings = replace(settings, pipeline=pipeline)
        if memory is not None:
            settings = replace(settings, memory=memory)
        clock = clock or SystemClock()
        data_dir = Path(settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        memory_audit = InMemoryAuditLog()
        audit: AuditSink = TeeAuditLog((memory_audit, JsonlAuditLog(data_dir / AUDIT_FILE)))
        sanitizer = Sanitizer(policy, audit, clock)
        if settings.redact_logs:
            install_global_log_redaction(sanitizer)
        closers: list[Callable[[], None]] = []
        try:
            backend, redis_url = _open_working_backend(settings, data_dir, closers)
            working = WorkingMemory(backend, settings.working, clock, sanitizer=sanitizer)
            closers.insert(0, working.close)
            embedder = embedder or default_embedder()
            longterm = open_longterm(
                settings, open_index(settings), embedder, clock=clock, sanitizer=sanitizer
            )
            closers.insert(0, longterm.close)
            memory_store = open_memory(settings, longterm, backend.client, clock)
            handler = build_handler(memory_store, extractor=extractor or build_extractor(settings))
            ingest = _open_pipeline(settings.pipeline, redis_url, clock, handler, closers)
        except BaseException:
            for close in closers:
                with contextlib.suppress(Exception):
                    close()
            raise
        return cls(
            settings=settings,
            clock=clock,
            sanitizer=sanitizer,
            working=working,
            longterm=longterm,
            embedder=embedder,
            intents=intents,
            audit=memory_audit,
            on_close=closers,
            memory=memory_store,
            pipeline=ingest,
        )

    # -- parts ------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def sanitizer(self) -> Sanitizer:
        return self._sanitizer

    @property
    def sessions(self) -> SessionRegistry:
        return self._sessions

    @property
    def longterm(self) -> LongTermStore:
        return self._longterm

    @property
    def working_memory(self) -> WorkingMemory:
        return self._working

    @property
    def router(self) -> ContextRouter:
        return self._router

    @property
    def audit(self) -> InMemoryAuditLog | None:
        return self._audit

    @property
    def memory(self) -> MemoryStore:
        """The versioned memory store (active facts, history, consolidation)."""
        if self._memory is None:
            raise ConfigError("this engine was built without a memory store")
        return self._memory

    @property
    def pipeline(self) -> IngestPipeline:
        """The long-term write pipeline (queue, handler, worker)."""
        if self._pipeline is None:
            raise ConfigError("this engine was built without a write pipeline")
        return self._pipeline

    # -- L1 ---------------------------------------------------------------------

    def start_session(
        self,
        user_id: str,
        initial_query: str,
        *,
        tenant: str = "default",
        session_id: str | None = None,
    ) -> SessionState:
        """Open a session (its state lives in this process only)."""
        return self._sessions.start(user_id, initial_query, tenant=tenant, session_id=session_id)

    def session(self, session_id: str) -> SessionState:
        return self._sessions.get(session_id)

    def update_session(
        self, session_id: str, change: Callable[[SessionState], SessionState]
    ) -> SessionState:
        """Apply a pure change to a session's state without losing concurrent updates."""
        return self._sessions.update(session_id, change)

    # -- L2 ---------------------------------------------------------------------

    def working(self, session_id: str) -> SessionWorkingMemory:
        """The session's working memory (every write passes the gateway)."""
        return self._working.session(session_id)

    # -- L3 ---------------------------------------------------------------------

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The dense vector of one query (cached)."""
        vectors = self._embedder.embed([text])
        return np.asarray(vectors[0], dtype=np.float32)

    def add_knowledge(
        self, texts: Sequence[str], *, tenant: str = "default", source: str, section: str = ""
    ) -> list[str]:
        """Store knowledge chunks shared by the tenant."""
        if isinstance(texts, str) or not texts:
            raise ValidationError("texts", "must be a non-empty sequence of strings")
        extra = {"section": section} if section else {}
        return self._longterm.add(
            "knowledge",
            [
                NewItem(text=t, tenant=tenant, type="knowledge", source=source, extra=extra)
                for t in texts
            ],
        )

    def search(
        self,
        user_id: str,
        query: str,
        *,
        tenant: str = "default",
        k: int = 5,
        collection: str = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
        explain: bool = False,
    ) -> list[Hit]:
        """One hybrid search of a user's memories (or the tenant's knowledge): the plain
        store search, without the multi-route ranking and the episode links of
        :meth:`retrieve` (which agents use).

        Memories are the episodes and the active units only, unless ``include_history``
        (every version) or ``as_of`` (the versions valid at that instant; it implies the
        history) asks for more. ``explain`` fills each hit's rank in the dense and the
        BM25 route.
        """
        check_id("user_id", user_id)
        check_positive_int("k", k, maximum=100)
        if collection != "memories":
            return self._longterm.search(collection, query, tenant=tenant, k=k, explain=explain)
        if as_of is None:
            types = HISTORY_MEMORY_TYPES if include_history else ACTIVE_MEMORY_TYPES
            return self._longterm.search(
                collection, query, tenant=tenant, user=user_id, types=types, k=k, explain=explain
            )
        if not isinstance(as_of, datetime) or as_of.tzinfo is None:
            raise ValidationError("as_of", "must be a timezone-aware datetime")
        # Validity is an interval, which the engine filter cannot express next to
        # the type condition: over-fetch every version, keep those valid at as_of.
        hits = self._longterm.search(
            collection,
            query,
            tenant=tenant,
            user=user_id,
            types=HISTORY_MEMORY_TYPES,
            k=k * 4,
            explain=explain,
        )
        return [h for h in hits if _valid_at(h.payload, as_of.timestamp())][:k]

    # -- write pipeline -------------------------------------------------------------

    def observe(
        self, session_id: str, role: str, text: str, *, speaker: str | None = None
    ) -> IngestReceipt:
        """Record a conversation turn: L1 history now, the episode and its facts queued.

        The text passes the gateway first, so no secret reaches L1, the stream, L3
        or a log. The turn is stored whole in L3 as an episode of the session's
        thread (its position and the engine clock's time with it), and the
        extractor's facts name it. Returns at once; ``receipt.queued`` is False (and
        the failure is logged and counted) when the queue could not take it - the
        agent's step never fails because of the long-term path. ``speaker`` names who
        spoke when the role alone does not (a display name, sanitized like the text).
        The session must be open in this process (NotFoundError otherwise). Texts
        over ``pipeline.max_turn_chars`` are split into chunks, one episode each;
        over ``pipeline.max_observe_chars`` they are rejected (ValidationError,
        ``text``).
        """
        check_id("session_id", session_id)
        if role not in ROLES:
            raise ValidationError("role", f"must be one of {sorted(ROLES)}")
        check_text("text", text, max_chars=self.pipeline.settings.max_observe_chars)
        if speaker is not None:
            check_text("speaker", speaker, max_chars=MAX_SPEAKER_CHARS)
            speaker = self._sanitizer.text(
                speaker, location=f"l1:{session_id}:turn", field="speaker"
            )
        clean = self._sanitizer.text(text, location=f"l1:{session_id}:turn", field="text")
        chunks = self.pipeline.chunks(clean)  # size checks before L1 changes
        now = self._clock.now()
        state = self._sessions.update(
            session_id, lambda s: s.record_turn(role, clean, now, parts=len(chunks))
        )
        turn_id = state.history[-1].turn_id
        first = state.episodes_observed - len(chunks) + 1
        episodes = [
            Episode(
                id=turn_episode_id(state.tenant, state.thread, first + i),
                tenant=state.tenant,
                user=state.user_id,
                text=chunk,
                role=role,
                observed_at=now,
                source=f"turn:{session_id}/{turn_id}",
                session_id=session_id,
                # Each chunk is its own turn to the extractor; its id says which part.
                turn_id=turn_id if len(chunks) == 1 else f"{turn_id}.{i + 1}",
                thread=state.thread,
                seq=first + i,
                speaker=speaker,
            )
            for i, chunk in enumerate(chunks)
        ]
        return self.pipeline.submit_turn(episodes)

    def remember(
        self, user_id: str, text_or_unit: str | MemoryUnit, *, tenant: str = "default"
    ) -> IngestReceipt:
        """Queue a direct long-term write (no worth filter); returns without waiting.

        Text is stored whole as an episode and read by the extractor, whose facts
        name it (a text with no recognizable fact is still kept, as its episode); a
        :class:`MemoryUnit` is written as is, after the gateway. ``flush()`` waits
        until it is written, and :meth:`written` then reads back the episode and
        each fact. Like :meth:`observe`, a queue failure is reported in the
        receipt, not raised.
        """
        check_id("user_id", user_id)
        check_id("tenant", tenant)
        if isinstance(text_or_unit, MemoryUnit):
            unit = text_or_unit
            if (unit.source.tenant, unit.source.user) != (tenant, user_id):
                raise ValidationError("unit.source", "must name the same tenant and user")
            return self.pipeline.submit_unit(self._sanitized_unit(unit))
        check_text("text", text_or_unit, max_chars=self.pipeline.settings.max_observe_chars)
        clean = self._sanitizer.text(text_or_unit, location="L3:memories", field="text")
        now = self._clock.now()
        episodes = [
            Episode.remembered(tenant, user_id, chunk, now) for chunk in self.pipeline.chunks(clean)
        ]
        return self.pipeline.submit_note(episodes)

    def written(self, receipt: IngestReceipt, *, tenant: str) -> WrittenMemory:
        """What a flushed ``observe`` / ``remember`` stored: its episodes, and every
        fact and event extracted from them (each version, active or not)."""
        if not isinstance(receipt, IngestReceipt):
            raise ValidationError("receipt", "must be an IngestReceipt")
        check_id("tenant", tenant)
        ids = receipt.episode_ids
        if not ids:
            return WrittenMemory((), ())
        episodes = tuple(
            episode_of_payload(r.id, r.payload)
            for r in self._longterm.get(MEMORIES, ids, tenant=tenant)
        )
        flt = Filter(tenant=tenant, types=UNIT_TYPES, extras=(("episodes", tuple(ids)),))
        units = [
            from_payload(r.id, r.payload)
            for r in self._longterm.iter_records(MEMORIES, flt)
            if not is_pending(r.payload)
        ]
        units.sort(key=lambda u: (u.subject, u.attribute, u.valid_from, u.version))
        return WrittenMemory(episodes, tuple(units))

    def _sanitized_unit(self, unit: MemoryUnit) -> MemoryUnit:
        location = "L3:memories"
        return replace(
            unit,
            subject=self._sanitizer.text(unit.subject, location=location, field="subject"),
            attribute=self._sanitizer.text(unit.attribute, location=location, field="attribute"),
            value=self._sanitizer.text(unit.value, location=location, field="value"),
            extras=tuple(
                (label, self._sanitizer.text(value, location=location, field=label))
                for label, value in unit.extras
            ),
        )

    def flush(self, timeout_s: float = 60.0) -> None:
        """Wait until everything queued so far is in long-term memory.

        Raises FlushTimeoutError (a BackendError) when ``timeout_s`` passes first.
        """
        self.pipeline.flush(timeout_s)

    def ingest_stats(self) -> PipelineStats:
        """Counters of the write pipeline (enqueued, failures, filter drops, writes)."""
        return self.pipeline.stats()

    def forget(self, user_id: str, *, tenant: str = "default") -> ForgetReport:
        """Delete everything held of ``user_id`` in ``tenant``, everywhere: episodes,
        facts with their history, cold copies (L3); slot records, preferences,
        write-queue entries and this process's sessions of the user with their
        working memory (L1, L2); then the files on disk - the embedded index is
        rebuilt without them and the Valkey AOF rewritten. The audit log keeps one
        line saying a deletion happened (:func:`memstrata.memory.forget.deletion_record`).

        Waits for the write queue first, so nothing queued for the user lands after.
        """
        check_id("user_id", user_id)
        check_id("tenant", tenant)
        self.flush()
        ended = [
            self._sessions.end(sid)
            for sid in self._sessions.session_ids()
            if (state := self._sessions.get(sid)).user_id == user_id and state.tenant == tenant
        ]
        report = forget_user(
            self._longterm,
            self.memory.redis,
            tenant,
            user_id,
            memory_prefix=self.memory.settings.redis_prefix,
            queues=(self.pipeline.queue.name,),
            sessions=[state.session_id for state in ended],
        )
        report = replace(report, sessions_ended=len(ended))
        self._forgotten(report, user_id)
        return report

    def forget_memories(self, ids: Sequence[str], *, tenant: str = "default") -> ForgetReport:
        """Delete chosen memories of ``tenant`` everywhere (disk included): a fact with
        every version of its slot, an event, an episode with the facts extracted
        from it. Ids ``tenant`` does not hold are ignored."""
        check_id("tenant", tenant)
        self.flush()
        report = forget_memories(
            self._longterm,
            self.memory.redis,
            tenant,
            ids,
            memory_prefix=self.memory.settings.redis_prefix,
        )
        self._forgotten(report, None)
        return report

    def _forgotten(self, report: ForgetReport, user: str | None) -> None:
        # Caches in this process keep texts too; the next reads rebuild them.
        self._longterm.clear_caches()
        self._retriever.clear_caches()
        self._sanitizer.clear_cache()
        clear = getattr(self._embedder, "clear", None)
        if callable(clear):
            clear()
        record = deletion_record(report, self._clock.now(), user=user)
        with (Path(self._settings.data_dir) / AUDIT_FILE).open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, sort_keys=True) + "\n")

    def consolidate(
        self, *, tenants: Sequence[str] | None = None, now: datetime | None = None
    ) -> ConsolidationReport:
        """One consolidation pass over the facts and events of ``tenants`` (default:
        every tenant that wrote one); episodes are never consolidated."""
        if now is not None and (not isinstance(now, datetime) or now.tzinfo is None):
            raise ValidationError("now", "must be a timezone-aware datetime")
        return consolidate(self.memory, now or self._clock.now(), tenants=tenants)

    def restore(self, ids: Sequence[str], *, tenant: str = "default") -> tuple[str, ...]:
        """Bring units back from cold storage; returns the ids restored."""
        if isinstance(ids, str):
            raise ValidationError("ids", "must be a sequence of ids, not one string")
        return restore(self.memory, check_id("tenant", tenant), ids)

    # -- routing ----------------------------------------------------------------

    def register_intent(self, spec: IntentSpec, *, replace: bool = False) -> None:
        """Register an intent; its unrestricted ``memories`` needs read active units only."""
        self._router.intents.register(active_only(spec), replace=replace)

    def route(
        self, session: SessionState | str, step_intent: str, query: str | None = None
    ) -> ContextBundle:
        """The context bundle for the session's current step."""
        state = self._sessions.get(session) if isinstance(session, str) else session
        return self._router.route(state, step_intent, query)

    @property
    def retriever(self) -> Retriever:
        """Multi-route retrieval over L3 (used by :meth:`retrieve` and :meth:`build_context`)."""
        return self._retriever

    def retrieve(
        self,
        query: str,
        *,
        tenant: str = "default",
        user: str | None = None,
        k: int = 10,
        now: datetime | None = None,
        recent: Sequence[str] = (),
        collection: str = "memories",
        include_history: bool = False,
        as_of: datetime | None = None,
    ) -> RetrievalResult:
        """Multi-route retrieval of the tenant's memories or knowledge.

        Memories are the episodes (what was said) and the current facts and events,
        ranked together: an episode carries the current facts extracted from it, and
        one whose content a newer fact replaced is marked ``superseded_by`` it (see
        :mod:`memstrata.retrieval.links`). Superseded fact versions come back only
        with ``include_history`` (``is_history`` set) or ``as_of``, which reads the
        memories as they stood at that instant. ``now`` (default: the engine clock)
        resolves "last week" and ages memories; ``recent`` are the last conversation
        turns (the intent route).
        """
        if not isinstance(include_history, bool):
            raise ValidationError("include_history", "must be a bool")
        types = None
        if collection == MEMORIES:
            types = (
                HISTORY_MEMORY_TYPES
                if include_history or as_of is not None
                else ACTIVE_MEMORY_TYPES
            )
        return self._retriever.retrieve(
            RetrievalQuery(
                text=query,
                tenant=tenant,
                user=user,
                k=k,
                now=now or self._clock.now(),
                recent=tuple(recent),
                collection=collection,
                types=types,
                as_of=as_of,
            )
        )

    def build_context(
        self,
        session: SessionState | str,
        step_intent: str,
        user_input: str,
        *,
        system_prompt: str,
        model: str = "gpt-4o",
        history: Sequence[ContextTurn] = (),
        tool_results: Sequence[ToolResult] = (),
        budget: ContextBudget | None = None,
        k: int = 10,
    ) -> BuiltContext:
        """The step's model call, assembled within the token budget of ``model``.

        Memory section: the router's bundle for ``step_intent`` (L1, L2, L3) plus the
        user's long-term memories retrieved for ``user_input`` (multi-route, with
        confidence flags); history and tool results as given. Token counts are exact
        for OpenAI model families (tiktoken files shipped in a package), approximate
        otherwise; ``budget`` overrides the model's default window and shares.
        History is the caller's: when older turns were compressed, ``result.summary``
        (a ``Turn`` with ``summary=True``) replaces the turns in ``summary.covers`` in
        the history passed next time, and is never summarized again.
        """
        state = self._sessions.get(session) if isinstance(session, str) else session
        bundle = self._router.route(state, step_intent, user_input)
        recent = tuple(t.content for t in history if t.role == "user")[-3:]
        now = self._clock.now()
        # A pasted document as the input: retrieve with its end (the ask is usually last).
        query = user_input[-MAX_RETRIEVAL_QUERY_CHARS:]
        retrieved = self.retrieve(
            query, tenant=state.tenant, user=state.user_id, k=k, now=now, recent=recent
        )
        memory = list(from_bundle(bundle))
        seen = {item.ref for item in memory}
        # Retrieval scores are unbounded; L1/L2 items (live data) have relevance 1.0 and
        # must be admitted first, so retrieved memories rank within (0, 0.99].
        top = max((hit.score for hit in retrieved.items), default=0.0) or 1.0
        for hit in retrieved.items:
            for item in retrieved_items(hit, now, relevance=0.99 * max(0.0, hit.score) / top):
                if item.ref not in seen:
                    seen.add(item.ref)
                    memory.append(item)
        request = ContextRequest(
            system_prompt=system_prompt,
            current_input=user_input,
            memory=tuple(memory),
            history=tuple(history),
            tool_results=tuple(tool_results),
        )
        return build_context(
            request, budget or ContextBudget.for_model(model), counter_for_model(model)
        )

    def inspect(self, session_id: str) -> dict[str, Any]:
        """What memstrata holds for a session: L1 (if open here) and its live L2 keys."""
        check_id("session_id", session_id)
        try:
            l1: dict[str, Any] | None = self._sessions.get(session_id).as_dict()
        except NotFoundError:
            l1 = None
        wm = self._working.session(session_id)
        return {
            "session_id": session_id,
            "l1": l1,
            "l2": [
                {"key": k.key, "type": k.kind, "ttl_remaining_s": k.ttl_remaining_s}
                for k in wm.keys()  # noqa: SIM118 - a method, not a dict
            ],
            "pending_tasks": sorted(wm.pending()),
        }

    # -- lifecycle ----------------------------------------------------------------

    def close(self) -> None:
        """Stop what the engine started; idempotent."""
        if self._closed:
            return
        self._closed = True
        for close in self._on_close:
            try:
                close()
            except Exception:  # keep closing the rest; report, never hide
                log.exception("error while closing a backend")

    def __enter__(self) -> ContextEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_working_backend(
    settings: Settings, data_dir: Path, closers: list[Callable[[], None]]
) -> tuple[RedisBackend, str]:
    if settings.redis_url:
        return RedisBackend.from_url(settings.redis_url), settings.redis_url
    server = EmbeddedValkey(data_dir / "valkey").start()
    closers.append(server.stop)
    return RedisBackend.from_url(server.url), server.url


def _open_pipeline(
    settings: PipelineSettings,
    redis_url: str,
    clock: Clock,
    handler: IngestHandler,
    closers: list[Callable[[], None]],
) -> IngestPipeline:
    # Its own connection pool: the worker's blocking XREADGROUP must not hold a
    # connection that L2 calls wait for, and needs a longer socket timeout.
    queue_backend = RedisBackend.from_url(
        redis_url, socket_timeout_s=max(5.0, settings.block_ms / 1000 + 5.0)
    )
    closers.insert(0, queue_backend.close)
    queue = WriteQueue(
        queue_backend.client, settings.queue_name, maxlen=settings.queue_maxlen, clock=clock
    )
    threads = settings.worker_threads if settings.background_worker else 0
    # Real time, not the engine clock: reclaiming abandoned entries is about how
    # long a consumer has really been silent.
    workers = [
        QueueWorker(
            queue,
            handler,
            f"engine-{os.getpid()}-{n}",
            batch_size=settings.batch_size,
            block_ms=settings.block_ms,
            claim_idle_ms=settings.claim_idle_ms,
            max_deliveries=settings.max_deliveries,
        )
        for n in range(threads)
    ]
    pipeline = IngestPipeline(queue, handler, settings, workers=workers)
    pipeline.start()
    closers.insert(0, pipeline.close)
    return pipeline


def _valid_at(payload: Any, at: float) -> bool:
    """Whether a memory payload was valid at epoch ``at`` (``[valid_from, valid_to)``)."""
    start = payload.get("valid_from_ts", payload.get("created_at"))
    end = payload.get("valid_to_ts")
    if start is None or float(start) > at:
        return False
    return end is None or at < float(end)
